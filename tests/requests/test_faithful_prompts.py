"""No prompt prints request data as a Python repr, and no message's text is left out unsaid.

The agent conversation of docs/requests.md (tests/support/requests.py), rendered by ``apply()`` with every bundled
template: the prompt holds no Python repr of a list or dict (``[{'``, ``{'type'``, ``None``/``True``/``False`` where
the client sent JSON) unless the template's own text writes it, and every message's text reaches the prompt or is
named in ``params.warnings``. Synthetic templates print the data under other names.
"""

from __future__ import annotations

import re

import pytest

from autoparser import ChatTemplate, bundled_templates
from autoparser.errors import RequestError, TemplateError

from ..support import vllm_like
from ..support.request_parity import expected_texts
from ..support.requests import VARIANTS, base_messages, base_tools, variant

# A Python repr of a dict or list: a quoted key or item after a bracket, brace or comma, followed by a colon, comma
# or closing bracket; and Python's literals.
_REPR = re.compile(r"[\[{(,:]\s*'[^'\n]{0,80}'\s*[:,\]})]|\b(?:None|True|False)\b")
CONVERSATIONS = [v.name for v in VARIANTS if v.name != "image_parts"]


def python_reprs(prompt: str, source: str) -> list[str]:
    """The Python reprs in ``prompt`` that the template's own text does not write."""
    return sorted({m.group() for m in _REPR.finditer(prompt) if m.group() not in source})


def _apply(template: str, name: str) -> tuple[list[dict], object] | None:  # type: ignore[type-arg]
    messages, tools = variant(name).build()
    try:
        return messages, ChatTemplate.load(template).apply(messages, tools=tools)
    except (TemplateError, RequestError):
        return None  # the template cannot render this request (tests/requests/test_conversations.py says why)


@pytest.mark.parametrize("template", bundled_templates())
def test_no_prompt_prints_a_python_repr(template: str) -> None:
    source = ChatTemplate.load(template).source
    for name in CONVERSATIONS:
        applied = _apply(template, name)
        if applied is None:
            continue
        _, params = applied
        assert not python_reprs(params.prompt, source), (name, python_reprs(params.prompt, source))  # type: ignore[attr-defined]


@pytest.mark.parametrize("template", bundled_templates())
def test_every_text_reaches_the_prompt_or_a_warning(template: str) -> None:
    for name in CONVERSATIONS:
        applied = _apply(template, name)
        if applied is None:
            continue
        messages, params = applied
        warned = " ".join(params.warnings)  # type: ignore[attr-defined]
        for index, message in enumerate(messages):
            missing = [t for t in expected_texts([message]) if t not in params.prompt]  # type: ignore[attr-defined]
            assert not missing or f"messages[{index}] ({message['role']})" in warned, (name, index, missing, warned)


def test_the_checks_see_what_transformers_prints() -> None:
    """The detectors are not blind: transformers prints Hammer's tools and Llama 4's first user message as Python
    reprs; DeepSeek-V3.2 drops a developer message."""
    messages, tools = base_messages(), base_tools()
    for template in ("MadeAgents-Hammer2.1", "meta-llama-Llama-4-Scout-17B-16E-Instruct"):
        source = ChatTemplate.load(template).source
        oracle = vllm_like.render(source, vllm_like.vllm_messages(messages, source), tools)
        assert python_reprs(oracle, source), template
        assert not python_reprs(ChatTemplate.load(template).apply(messages, tools=tools).prompt, source)
    developer = variant("developer").build()[0]
    params = ChatTemplate.load("deepseek-ai-DeepSeek-V3.2").apply(developer, tools=tools)
    assert "You are a weather assistant." not in params.prompt
    assert any(w.startswith("messages[0] (developer)") for w in params.warnings), params.warnings


SYNTHETIC = """\
{%- if toolbox %}{{- 'Tools: ' + toolbox|string + '\\n' }}{%- endif %}
{%- for turn in messages %}
    {%- if turn.role == 'system' %}{%- continue %}{%- endif %}
    {{- turn.role + ': ' }}
    {%- if turn.content is string %}{{- turn.content }}{%- endif %}
    {%- for call in turn.tool_calls or [] %}
        {{- 'call ' + call.function.name + ' with ' }}{{ call.function.arguments }}
    {%- endfor %}
    {{- '\\n' }}
{%- endfor %}
{%- if add_generation_prompt %}{{- 'assistant: ' }}{%- endif %}
"""


def test_synthetic_template_prints_request_data_as_json(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A template that prints its tool list (``toolbox|string``, via a template variable) and a call's arguments
    with ``{{ }}``: JSON, not Python; and the system message it skips is named."""
    path = tmp_path / "toolbox.jinja"
    path.write_text(SYNTHETIC.replace("toolbox", "tools"))
    tmpl = ChatTemplate.from_file(str(path))
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": true, "b": null}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    params = tmpl.apply(messages, tools=tools)
    assert 'call f with {"a": true, "b": null}' in params.prompt
    assert 'Tools: [{"type": "function", "function": {"name": "f"' in params.prompt
    assert not python_reprs(params.prompt, tmpl.source)
    assert [w.split(":")[0] for w in params.warnings if w.startswith("messages[")] == ["messages[0] (system)"]


def test_parameter_descriptions_default_once_the_tools_as_sent_fail() -> None:
    """Command R+ prints every parameter's description: a tool without any renders with the defaults instead of
    raising; with the descriptions given, the tools go in as sent."""
    tmpl = ChatTemplate.load("CohereForAI-c4ai-command-r-plus-tool_use")
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    sparse = [{"type": "function", "function": {"name": "lookup", "parameters": schema}}]
    prompt = tmpl.apply([{"role": "user", "content": "hi"}], tools=sparse).prompt
    assert "def lookup(city: str) -> List[Dict]:" in prompt
    assert not python_reprs(prompt, tmpl.source)
    schema["properties"]["city"]["description"] = "The city"
    described = [{"type": "function", "function": {"name": "lookup", "description": "Look up.", "parameters": schema}}]
    assert "city (str): The city" in tmpl.apply([{"role": "user", "content": "hi"}], tools=described).prompt


PREAMBLE = """\
{%- set rest = messages %}
{%- if tools %}{{- 'Q with tools: ' + messages[0]['content']|string + '\\n' }}{%- set rest = messages[1:] %}{%- endif %}
{%- for turn in rest %}
    {{- turn.role + ': ' }}
    {%- if turn.content is string %}{{- turn.content }}
    {%- else %}{%- for part in turn.content %}{{- part.text }}{%- endfor %}{%- endif %}
    {{- '\\n' }}
{%- endfor %}
{%- if add_generation_prompt %}{{- 'assistant: ' }}{%- endif %}
"""


def test_a_role_printed_whole_in_a_tool_preamble_gets_a_string(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A template that loops over content parts but, given tools, prints the first message whole (Llama 4's shape,
    spelled differently): the user's parts are joined into a string, with and without tools."""
    path = tmp_path / "preamble.jinja"
    path.write_text(PREAMBLE)
    tmpl = ChatTemplate.from_file(str(path))
    parts = [{"role": "user", "content": [{"type": "text", "text": "First"}, {"type": "text", "text": "second"}]}]
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    prompt = tmpl.apply(parts, tools=tools).prompt
    assert "Q with tools: First\nsecond\n" in prompt and '"type"' not in prompt, prompt
    assert "user: First\nsecond\n" in tmpl.apply(parts).prompt
