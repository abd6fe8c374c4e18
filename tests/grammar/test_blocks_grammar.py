"""The grammar of headed blocks (grammar/blocks.py) on the synthetic templates (tests/data/templates/blocks-*.jinja and
the role suffixes of suffix-*.jinja):
it accepts what each template writes (and the parser reads back as written), and rejects calls the request does not
allow. The real templates (Kimi K3, Functionary v2.2) are in the bundled-template grammar tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from autoparser import ChatParams, ChatTemplate

from ..support.grammar_check import full_verdicts, verdicts
from ..support.helpers import WEATHER_TOOL, function_tool

TEMPLATES = Path(__file__).parent.parent / "data" / "templates"
TAGGED = str(TEMPLATES / "blocks-tagged.jinja")
ADDRESSED = str(TEMPLATES / "blocks-addressed.jinja")
SLASH = str(TEMPLATES / "suffix-slash.jinja")
COLON = str(TEMPLATES / "suffix-colon.jinja")
DOT = str(TEMPLATES / "suffix-dot.jinja")
RECIPIENT = str(TEMPLATES / "suffix-recipient.jinja")
ALL = [TAGGED, ADDRESSED, SLASH, COLON, DOT, RECIPIENT]
USER = [{"role": "user", "content": "What is the weather?"}]
TOOLS = [WEATHER_TOOL, function_tool("ping")]


def _chat(template: str, **kwargs: Any) -> ChatParams:
    # (the colon template's prompt opens reasoning with thinking on, which a turn without reasoning does not continue)
    kwargs.setdefault("enable_thinking", template != COLON)
    return ChatTemplate.from_file(template).apply(USER, tools=TOOLS, **kwargs)


def _turn(template: str, message: dict[str, Any], **kwargs: Any) -> str:
    kwargs.setdefault("enable_thinking", template != COLON)
    tmpl = ChatTemplate.from_file(template)
    prompt = tmpl.apply(USER, tools=TOOLS, **kwargs).prompt
    full = tmpl.apply([*USER, message], tools=TOOLS, add_generation_prompt=False, **kwargs).prompt
    return full[len(prompt) :]


def _call(name: str, arguments: dict[str, Any], content: str = "", reasoning: str = "") -> dict[str, Any]:
    call = {"id": "call00001", "type": "function", "function": {"name": name, "arguments": arguments}}
    message: dict[str, Any] = {"role": "assistant", "content": content, "tool_calls": [call]}
    return message | ({"reasoning_content": reasoning} if reasoning else {})


GOOD = {"city": "Paris", "days": 2}


@pytest.mark.parametrize("template", ALL)
@pytest.mark.parametrize(
    "message",
    [
        _call("get_weather", GOOD),
        _call("get_weather", GOOD, "Let me check.", "The user wants Paris."),
        _call("ping", {}),
        {"role": "assistant", "content": "It is sunny.", "reasoning_content": "Easy."},
        {"role": "assistant", "content": "It is sunny."},
    ],
)
def test_the_whole_output_grammar_accepts_what_the_template_writes(template: str, message: dict[str, Any]) -> None:
    chat = _chat(template, parallel_tool_calls=False)
    text = _turn(template, message)
    assert all(full_verdicts(chat, text).values()), (text, full_verdicts(chat, text))
    parsed = chat.parse(text)
    assert not parsed.warnings and len(parsed.tool_calls) == len(message.get("tool_calls") or [])
    if message.get("tool_calls"):
        assert all(verdicts(chat, text).values()), verdicts(chat, text)  # the lazy grammar, from its trigger


@pytest.mark.parametrize("template", ALL)
@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("launch_rocket", GOOD),  # not a tool of the request
        ("get_weather", {"city": "Paris"}),  # a required argument left out
        ("get_weather", {"city": "Paris", "days": "two"}),  # the wrong type
        ("get_weather", {"city": "Berlin", "days": 2}),  # not in the enum
    ],
)
def test_invalid_calls_are_rejected(template: str, name: str, arguments: dict[str, Any]) -> None:
    chat = _chat(template, tool_choice="required", parallel_tool_calls=False)
    text = _turn(template, _call(name, arguments))
    assert not any(verdicts(chat, text).values()), (text, verdicts(chat, text))
    good = _turn(template, _call("get_weather", GOOD))
    assert all(verdicts(chat, good).values()), (good, verdicts(chat, good))


def test_the_tagged_grammar_spells_the_type_attribute_by_the_schema() -> None:
    """``kind='int'`` for an integer parameter, as the template writes it; ``kind='text'`` there is rejected."""
    chat = _chat(TAGGED, tool_choice="required", parallel_tool_calls=False)
    good = _turn(TAGGED, _call("get_weather", GOOD))
    assert "kind='int'" in good
    assert all(verdicts(chat, good).values())
    assert not any(verdicts(chat, good.replace("kind='int'", "kind='text'")).values())


def test_json_schema_answers_sit_in_the_answer_block() -> None:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    chat = ChatTemplate.from_file(TAGGED).apply(USER, json_schema=schema, enable_thinking=False)
    assert all(full_verdicts(chat, '{"ok": true}[BLOCK]/answer[/HEAD]').values())
    assert not any(full_verdicts(chat, '{"ok": 1}').values())
    addressed = ChatTemplate.from_file(ADDRESSED).apply(USER, json_schema=schema)
    assert all(full_verdicts(addressed, 'user<|body|>{"ok": false}').values())


def test_role_suffix_grammars_hold_the_blocks_to_the_template() -> None:
    """Parallel calls each in a block of their own, closed; a JSON answer in the answer's block; a reasoning block the
    prompt opened is written into and closed; what the template never writes is refused."""
    chat = _chat(SLASH, parallel_tool_calls=True)
    two = '/tool:get_weather\n{"city": "Paris", "days": 2}<|im_end|>\n<|im_start|>assistant/tool:ping\n{}<|im_end|>'
    assert all(full_verdicts(chat, two).values())
    assert all(full_verdicts(chat, "/think\nHm.<|im_end|>\n<|im_start|>assistant\nHi.<|im_end|>").values())
    refused = [
        two.replace("<|im_end|>\n<|im_start|>", "\n<|im_start|>"),  # a block end left out between blocks
        '/tool:get_weather {"city": "Paris", "days": 2}',  # another header end
        '/tools:get_weather\n{"city": "Paris", "days": 2}',  # another call prefix
        "/thinking\nHm.<|im_end|>\n<|im_start|>assistant\nHi.",  # another reasoning suffix
    ]
    for text in refused:
        assert not any(full_verdicts(chat, text).values()), text
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    answer = ChatTemplate.from_file(DOT).apply(USER, json_schema=schema)
    assert all(full_verdicts(answer, 'assistant<|message|>{"ok": true}<|end|>').values())
    assert not any(full_verdicts(answer, 'assistant<|message|>{"ok": 1}<|end|>').values())
    recipient = _chat(RECIPIENT, parallel_tool_calls=True)
    calls = "<|message|>Hm.<|end|><|start|>assistant to=functions.ping<|message|>{}<|call|>"
    calls += '<|start|>assistant to=functions.get_weather<|message|>{"city": "Paris", "days": 2}<|call|>'
    assert all(full_verdicts(recipient, calls).values())
    assert not any(full_verdicts(recipient, calls.replace("<|call|>", "<|end|>", 1)).values())  # a call's own end
    opened = ChatTemplate.from_file(COLON).apply(USER, tools=TOOLS, enable_thinking=True)
    good = 'Hm.</turn>\n<turn>model:get_weather\n{"city": "Paris", "days": 2}</turn>'
    assert all(full_verdicts(opened, good).values())
    assert all(verdicts(opened, good).values())  # the lazy grammar, from its trigger after an opener
    assert not any(full_verdicts(opened, "<turn>model:thought\nHm.</turn>").values())  # the prompt wrote it


def test_the_tagged_grammar_takes_optional_arguments_in_any_order_each_once() -> None:
    """The required argument first, then the optional ones in any order (as the generic tagged grammar: up to five),
    none twice; the template writes them in the order of the call's arguments."""
    properties = {"city": {"type": "string"}, **{f"opt{i}": {"type": "integer"} for i in range(3)}}
    tools = [function_tool("get_weather", {"type": "object", "properties": properties, "required": ["city"]})]
    tmpl = ChatTemplate.from_file(TAGGED)
    chat = tmpl.apply(USER, tools=tools, tool_choice="required", parallel_tool_calls=False, enable_thinking=False)
    prompt = tmpl.apply(USER, tools=tools, enable_thinking=False).prompt

    def written(arguments: dict[str, Any]) -> str:
        message = [*USER, _call("get_weather", arguments)]
        full = tmpl.apply(message, tools=tools, add_generation_prompt=False, enable_thinking=False).prompt
        return full[len(prompt) :]

    shuffled = written({"city": "Paris", "opt2": 2, "opt0": 0})
    assert shuffled.index("'opt2'") < shuffled.index("'opt0'")
    assert all(verdicts(chat, shuffled).values()), shuffled
    twice = written({"city": "Paris", "opt2": 2, "zzdup": 0}).replace("zzdup", "opt2")
    assert not any(verdicts(chat, twice).values()), twice
