"""Generic parsers on real templates: sloppy models, strictness, request options, streaming invariants."""

from __future__ import annotations

import json
import random
import re

import pytest

from autoparser import ChatParams, ChatTemplate
from autoparser.errors import ParseError
from autoparser.message import apply_deltas

USER = [{"role": "user", "content": "hi"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    },
    {"type": "function", "function": {"name": "get_weather_now", "parameters": {"type": "object", "properties": {}}}},
]
CALL_ID = re.compile(r"call_[A-Za-z0-9]{24}")


def coder(**kwargs: object) -> ChatParams:
    return ChatTemplate.load("Qwen3-Coder").apply(USER, tools=TOOLS, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "output",
    [
        "<tool_call><function=get_weather><parameter=city>Paris</parameter><parameter=days>2</parameter></function></tool_call>",
        "<tool_call>\r\n<function=get_weather>\r\n<parameter=city>\r\nParis\r\n</parameter>\r\n<parameter=days>\r\n2\r\n"
        "</parameter>\r\n</function>\r\n</tool_call>",
        "<tool_call>\n\n  <function=get_weather>\n\n<parameter=city>\nParis\n</parameter>\n\n<parameter=days>\n2\n"
        "</parameter>\n\n</function>\n\n</tool_call>\n",
    ],
    ids=["no-whitespace", "crlf", "doubled"],
)
def test_whitespace_around_markers_is_tolerated(output: str) -> None:
    message = coder().parse(output)
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [
        ("get_weather", {"city": "Paris", "days": 2})
    ]
    assert message.content == "" and not message.warnings


def test_several_calls_in_one_section_and_in_repeated_sections() -> None:
    chat = ChatTemplate.load("deepseek-ai-DeepSeek-V3.1").apply(USER, tools=TOOLS, parallel_tool_calls=True)
    one = '<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "A"}<｜tool▁call▁end｜>'
    two = "<｜tool▁call▁begin｜>get_weather_now<｜tool▁sep｜>{}<｜tool▁call▁end｜>"
    together = chat.parse(f"<｜tool▁calls▁begin｜>{one}{two}<｜tool▁calls▁end｜>")
    begin, end = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
    apart = chat.parse(f"{begin}{one}{end}{begin}{two}{end}")
    bare = chat.parse(one + two)  # section markers dropped
    for message in (together, apart, bare):
        assert [c.name for c in message.tool_calls] == ["get_weather", "get_weather_now"]
        assert not message.warnings


def test_repeated_think_is_not_reasoning_text() -> None:
    chat = ChatTemplate.load("Qwen3.5-4B").apply(USER, reasoning_format="auto")
    message = chat.parse("<think>\nPlanning.\n</think>\n\nAnswer.")
    assert (message.reasoning_content, message.content) == ("Planning.", "Answer.")


def test_reasoning_format_none_keeps_markers_in_content() -> None:
    chat = ChatTemplate.load("Qwen3.5-4B").apply(USER, reasoning_format="none")
    assert chat.parse("Planning.\n</think>\n\nAnswer.").content == "<think>\nPlanning.\n</think>\n\nAnswer."


def test_tool_choice_none_leaves_markup_as_content() -> None:
    output = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"
    message = coder(tool_choice="none").parse(output)
    assert not message.tool_calls and message.content == output


def test_tool_choice_required_without_a_call_warns_and_strict_raises() -> None:
    chat = coder(tool_choice="required")
    assert chat.parse("I will not call anything.").warnings
    with pytest.raises(ParseError):
        chat.parse("I will not call anything.", strict=True)


def test_strict_mode_reports_position_of_an_unknown_tool() -> None:
    output = "Sure.\n<tool_call>\n<function=launch>\n</function>\n</tool_call>"
    message = coder(undeclared_tools="content").parse(output)
    assert not message.tool_calls and "<function=launch>" in message.content
    for undeclared in ("content", "call"):  # kept as content or as a call: reported either way
        with pytest.raises(ParseError) as info:
            coder(undeclared_tools=undeclared).parse(output, strict=True)
        assert info.value.pos == output.index("<tool_call>")


def test_name_prefix_of_another_tool_is_not_reported_early() -> None:
    chat = coder()
    stream = chat.stream()
    text = "<tool_call>\n<function=get_weather_now>\n</function>\n</tool_call>"
    names = []
    for char in text:
        for delta in stream.feed(char):
            names += [c.name for c in delta.tool_calls if c.name is not None]
    stream.finish()
    assert names == ["get_weather_now"]


def test_json_schema_answer_in_a_fence() -> None:
    schema = {"type": "object", "properties": {"amount": {"type": "number"}}}
    chat = ChatTemplate.load("Qwen3.5-4B").apply(USER, reasoning_format="auto", json_schema=schema)
    message = chat.parse('Need JSON.\n</think>\n\n```json\n{"amount": 1.5}\n```')
    assert json.loads(message.content) == {"amount": 1.5}
    assert message.reasoning_content == "Need JSON."


@pytest.mark.parametrize("seed", range(5))
def test_any_chunking_gives_the_parse_result(seed: int) -> None:
    chat = ChatTemplate.load("Qwen3.5-4B").apply(USER, tools=TOOLS, reasoning_format="auto", parallel_tool_calls=True)
    text = (
        'Let me <think about> it: a < b and "quotes" \\ too.\n</think>\n\nChecking <b>both</b>.\n'
        '<tool_call>\n<function=get_weather>\n<parameter=city>\nSan <Francisco> "CA"\n</parameter>\n'
        "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>\n"
        "<tool_call>\n<function=get_weather_now>\n</function>\n</tool_call>"
    )
    rng = random.Random(seed)
    stream = chat.stream()
    deltas, pos = [], 0
    while pos < len(text):
        size = rng.choice([1, 1, 2, 3, 7, 20])
        deltas += stream.feed(text[pos : pos + size])
        pos += size
    deltas += stream.finish()
    streamed, parsed = apply_deltas(deltas), chat.parse(text)
    assert (streamed.content, streamed.reasoning_content) == (parsed.content, parsed.reasoning_content)
    assert [(c.name, c.arguments) for c in streamed.tool_calls] == [(c.name, c.arguments) for c in parsed.tool_calls]
    assert all(CALL_ID.fullmatch(c.id) for c in streamed.tool_calls)
    assert json.loads(parsed.tool_calls[0].arguments) == {"city": 'San <Francisco> "CA"', "days": 3}
    # Each call's id and name are sent exactly once.
    firsts = [c for d in deltas for c in d.tool_calls if c.name is not None]
    assert [c.index for c in firsts] == [0, 1]


def test_openai_shapes() -> None:
    message = coder().parse("<tool_call>\n<function=get_weather_now>\n</function>\n</tool_call>")
    data = message.to_openai()
    assert data["content"] is None and data["role"] == "assistant"
    assert data["tool_calls"][0]["function"] == {"name": "get_weather_now", "arguments": "{}"}
    stream = coder().stream()
    deltas = stream.feed("<tool_call>\n<function=get_weather_now>\n</function>") + stream.finish()
    chunk = deltas[0].to_openai()["tool_calls"][0]
    assert chunk["index"] == 0 and chunk["type"] == "function" and CALL_ID.fullmatch(chunk["id"])
