"""Calls inside a wrapped answer, and the wrapper's closer after the calls.

Where the template wraps answers (``<answer>…</answer>``, Command R7B's ``<|START_RESPONSE|>…<|END_RESPONSE|>``,
Cohere2's ``<|START_TEXT|>…<|END_TEXT|>``, Granite 3.3's ``<response>…</response>``, Solar's ``<|content|>…<|end|>``),
models open the answer, call a tool inside it and close the answer after the calls. The calls are calls (they were
read as the answer's text), and the closer after them is markup, not content.
"""

from __future__ import annotations

import json

import pytest

from autoparser import ChatParams, ChatTemplate

from ..robustness.promises import char_chunks, check_parse, check_stream, marker_cut_chunkings, random_chunks
from ..support.outputs import TOOLS, USER, render_calls

ANSWER_JSON = """\
{%- for message in messages -%}
<|im_start|>{{ message.role }}
{%- if message.role == "assistant" -%}
{%- if message.content %}<answer>{{ message.content }}</answer>{% endif -%}
{%- for tc in message.tool_calls or [] %}<tool_call>{"name": "{{ tc.function.name }}", "arguments": \
{{ tc.function.arguments | tojson }}}</tool_call>{% endfor -%}
{%- else %}
{{ message.content }}
{%- endif %}<|im_end|>
{% endfor -%}
{%- if tools %}<|im_start|>system
Tools: {{ tools | tojson }}<|im_end|>
{% endif -%}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif -%}
"""

# Reasoning, then the answer in <answer> on lines of its own, calls in Qwen3-Coder's tagged syntax.
ANSWER_TAGGED = """\
{%- for message in messages -%}
<|im_start|>{{ message.role }}
{% if message.role == "assistant" -%}
{%- if message.reasoning_content %}<think>
{{ message.reasoning_content }}
</think>
{% endif -%}
{%- if message.content %}<answer>
{{ message.content }}
</answer>{% endif -%}
{%- for tc in message.tool_calls or [] %}
<tool_call>
<function={{ tc.function.name }}>
{%- for k, v in tc.function.arguments.items() %}
<parameter={{ k }}>
{{ v }}
</parameter>
{%- endfor %}
</function>
</tool_call>
{%- endfor -%}
{%- else -%}
{{ message.content }}
{%- endif %}<|im_end|>
{% endfor -%}
{%- if tools %}<|im_start|>system
Tools: {{ tools | tojson }}<|im_end|>
{% endif -%}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif -%}
"""

SYNTHETIC = {"answer-json": ANSWER_JSON, "answer-tagged": ANSWER_TAGGED}
CALL = {
    "answer-json": '<tool_call>{"name": "get", "arguments": {"city": "Oslo"}}</tool_call>',
    "answer-tagged": "<tool_call>\n<function=get>\n<parameter=city>\nOslo\n</parameter>\n</function>\n</tool_call>",
}


def _template(name: str) -> ChatTemplate:
    return ChatTemplate(SYNTHETIC[name], name=f"{name}.jinja") if name in SYNTHETIC else ChatTemplate.load(name)


def _params(name: str) -> ChatParams:
    return _template(name).apply(
        USER, tools=TOOLS, reasoning_format="auto", enable_thinking=True, parallel_tool_calls=False
    )


def _streams_equal(params: ChatParams, text: str, markers: list[str]) -> None:
    expected = params.parse(text)
    for pieces in [char_chunks(text), random_chunks(text, 5), *marker_cut_chunkings(text, markers)]:
        assert not check_stream(params, pieces, expected), pieces


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_the_wrapper_is_learned(name: str) -> None:
    content = _template(name).analysis.content
    assert (content.start.strip(), content.end.strip()) == ("<answer>", "</answer>")


SHAPES = [
    "<answer>Let me check.{call}</answer>",  # the calls inside the answer, its closer after them
    "<answer>\nLet me check.\n{call}\n</answer>\n",
    "<answer>Let me check.</answer>{call}</answer>",  # a closer repeated after the calls
    "{call}</answer>",  # a closer after the calls, no answer
    "{call}\n</answer><|im_end|>",
]
CASES = [(name, shape) for name in sorted(SYNTHETIC) for shape in SHAPES]
CASES.append(("answer-tagged", "<think>\nHm.\n</think>\n<answer>\nLet me check.\n{call}</answer>"))


@pytest.mark.parametrize(("name", "shape"), CASES)
def test_calls_inside_the_answer_and_the_closer_after_them(name: str, shape: str) -> None:
    params = _params(name)
    text = shape.format(call=CALL[name])
    message = params.parse(text)
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [("get", {"city": "Oslo"})], text
    assert message.content == ("Let me check." if "Let me" in text else ""), text
    assert message.reasoning_content == ("Hm." if "Hm." in text else "")
    assert message.warnings == (), text
    _streams_equal(params, text, ["<answer>", "</answer>", "<tool_call>"])


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_a_call_marker_that_starts_no_call_inside_the_answer(name: str) -> None:
    """Text, with the usual warning; the closer is still markup and nothing is lost."""
    params = _params(name)
    text = "<answer>Write <tool_call> then the JSON.</answer>"
    message, failures = check_parse(params, text, words=["Write", "JSON"])
    assert not failures and message is not None
    assert message.tool_calls == ()
    assert message.content == "Write <tool_call> then the JSON."
    assert message.warnings
    _streams_equal(params, text, ["<answer>", "</answer>", "<tool_call>"])


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_cut_anywhere(name: str) -> None:
    params = _params(name)
    text = f"<answer>Let me check.{CALL[name]}</answer>"
    for cut in range(1, len(text) + 1):
        message, failures = check_parse(params, text[:cut], words=["Let", "check", "Oslo"])
        assert not failures, (text[:cut], failures)
        assert message is not None
    for cut in (20, 40, len(text) - 3):
        assert not check_stream(params, char_chunks(text[:cut]))


# Real templates that wrap answers: (template, what opens the answer, what closes it)
REAL = {
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use": ("<|START_RESPONSE|>", "<|END_RESPONSE|>"),
    "Cohere2MoE": ("<|START_TEXT|>", "<|END_TEXT|>"),
    "upstage-Solar-Open-100B": ("<|content|>", "<|end|>"),
}


@pytest.mark.parametrize(("name", "wrapper"), sorted(REAL.items()))
def test_real_templates(name: str, wrapper: tuple[str, str]) -> None:
    analysis = ChatTemplate.load(name).analysis
    assert (analysis.content.start.strip(), analysis.content.end.strip()) == wrapper
    call = render_calls(name, [("get", {"city": "Oslo"})])
    assert call is not None
    start = analysis.tools.format.section_start.strip()
    before, section = call[: call.index(start)], call[call.index(start) :]
    params = _params(name)
    opening, closing = wrapper
    for text in (
        f"{before}{opening}Let me check.{section}{closing}",  # inside the answer
        f"{before}{opening}Let me check.{closing}{section}{closing}",  # after it, the closer repeated
    ):
        message = params.parse(text)
        assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [("get", {"city": "Oslo"})], text
        assert message.content == "Let me check.", text
        assert message.warnings == (), text
        _streams_equal(params, text, [opening, closing, start])


def test_granite_calls_inside_its_response() -> None:
    """Granite 3.3 wraps answers in ``<response>`` when it reasons: a call inside it is a call."""
    params = _params("ibm-granite-granite-3.3-2B-Instruct")
    call = '<|tool_call|>[{"name": "get", "arguments": {"city": "Oslo"}}]'
    text = f"<think>Weather.</think><response>Let me check.{call}</response>"
    message = params.parse(text)
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [("get", {"city": "Oslo"})]
    assert (message.reasoning_content, message.content, message.warnings) == ("Weather.", "Let me check.", ())
    _streams_equal(params, text, ["<response>", "</response>", "<|tool_call|>"])
