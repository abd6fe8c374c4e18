"""LFM2 (``<|tool_call_start|>[name(a=1)]<|tool_call_end|>``) and LFM2.5 (bare ``[name(a=1)]``) beyond the corpus."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from autoparser import ChatParams, ChatTemplate
from autoparser.generate.formats.lfm2 import decode_python_escapes, python_kwargs_to_json, python_literal_to_json

from .helpers import calls_of, stream_char_by_char

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get",
            "parameters": {"type": "object", "properties": {"key": {"type": "string"}, "limit": {"type": "integer"}}},
        },
    },
    {"type": "function", "function": {"name": "ping", "parameters": {"type": "object", "properties": {}}}},
]
USER = [{"role": "user", "content": "What time is it in Paris?"}]
TEMPLATES = {"lfm2": "LFM2-8B-A1B", "lfm2.5": "LFM2.5-Instruct"}
STREAM_ID = re.compile(r"call_[A-Za-z0-9]{24}")


def chat(fmt: str, **kwargs: Any) -> ChatParams:
    kwargs.setdefault("tools", TOOLS)
    return ChatTemplate.load(TEMPLATES[fmt]).apply(USER, **kwargs)


def section(fmt: str, calls: str) -> str:
    """A call list as the model writes it in ``fmt``."""
    return f"<|tool_call_start|>{calls}<|tool_call_end|>" if fmt == "lfm2" else calls


@pytest.fixture(params=sorted(TEMPLATES))
def fmt(request: pytest.FixtureRequest) -> str:
    return request.param


def test_format_names() -> None:
    for fmt, name in TEMPLATES.items():
        assert ChatTemplate.load(name).analysis.format == fmt
        assert chat(fmt).format == fmt


def test_content_only(fmt: str) -> None:
    text = "Paris is in the CET zone [1]. Use a list [a, b] or call(me) — not a tool."
    message = chat(fmt).parse(text)
    assert message.content == text
    assert message.tool_calls == ()
    assert message.warnings == ()


def test_content_only_without_tools(fmt: str) -> None:
    text = section(fmt, '[get_time(city="Paris")]')
    message = chat(fmt, tools=None).parse(text)
    assert message.content == text
    assert message.tool_calls == ()


def test_tool_choice_none_keeps_calls_as_text(fmt: str) -> None:
    text = section(fmt, '[get_time(city="Paris")]')
    assert chat(fmt, tool_choice="none").parse(text).content == text


def test_parallel_calls(fmt: str) -> None:
    text = "Checking. " + section(fmt, "[get_time(city=\"Paris\"), get(key='tz', limit=3), ping()]")
    message = chat(fmt, parallel_tool_calls=True).parse(text)
    assert message.content.strip() == "Checking."
    assert calls_of(message) == [("get_time", {"city": "Paris"}), ("get", {"key": "tz", "limit": 3}), ("ping", {})]
    assert message.warnings == ()


def test_separate_sections(fmt: str) -> None:
    text = section(fmt, '[get_time(city="Paris")]') + "\n" + section(fmt, '[get_time(city="Oslo")]')
    message = chat(fmt).parse(text)
    assert calls_of(message) == [("get_time", {"city": "Paris"}), ("get_time", {"city": "Oslo"})]
    assert message.content.strip() == ""


def test_python_literals(fmt: str) -> None:
    args = "key='it\\'s', limit=None, extra={'a': [1, -2.5e3, True, False], \"b\": {}}"
    message = chat(fmt).parse(section(fmt, f"[get({args})]"))
    assert calls_of(message) == [
        ("get", {"key": "it's", "limit": None, "extra": {"a": [1, -2500.0, True, False], "b": {}}})
    ]


def test_whitespace_and_trailing_commas(fmt: str) -> None:
    message = chat(fmt).parse(section(fmt, '[ get_time( city = "Paris" , ) , ]'))
    assert calls_of(message) == [("get_time", {"city": "Paris"})]


def test_prefix_tool_name(fmt: str) -> None:
    """``get`` is a prefix of ``get_time``: each call gets its own tool."""
    message = chat(fmt).parse(section(fmt, '[get(key="a"), get_time(city="b")]'))
    assert [name for name, _ in calls_of(message)] == ["get", "get_time"]


def test_unknown_tool_is_content_with_warning(fmt: str) -> None:
    text = section(fmt, "[launch_rocket(target='moon')]") + " Done."
    message = chat(fmt).parse(text)
    assert message.tool_calls == ()
    assert message.content == text
    assert len(message.warnings) == 1
    assert message.warnings[0].position == 0


def test_positional_arguments_are_not_a_call(fmt: str) -> None:
    """Only keyword arguments are the format; the name is not even streamed for a positional call."""
    text = section(fmt, '[get_time("Paris")]')
    params = chat(fmt)
    message = params.parse(text)
    assert message.tool_calls == ()
    assert message.content == text
    assert message.warnings
    for i in range(1, len(text) + 1):
        assert params.parse(text[:i], partial=True).tool_calls == ()


def test_truncated_call_keeps_text(fmt: str) -> None:
    text = "Let me look. " + section(fmt, '[get_time(city="Par')
    if fmt == "lfm2":
        text = text.removesuffix("<|tool_call_end|>")
    params = chat(fmt)
    message = params.parse(text)
    assert message.content == text
    assert message.tool_calls == ()
    assert message.warnings
    partial = params.parse(text, partial=True)
    assert partial.content == "Let me look."
    assert [(c.name, c.arguments) for c in partial.tool_calls] == [("get_time", "")]


def test_missing_closers_after_complete_call(fmt: str) -> None:
    """Output cut off right after a call's ``)``: the call is complete."""
    prefix = "<|tool_call_start|>" if fmt == "lfm2" else ""
    for text in (prefix + '[get_time(city="Paris")', prefix + '[get_time(city="Paris")]'):
        message = chat(fmt).parse(text)
        assert calls_of(message) == [("get_time", {"city": "Paris"})], text
        assert message.content == ""


def test_partial_call_holds_arguments_back(fmt: str) -> None:
    params = chat(fmt)
    head = "<|tool_call_start|>" if fmt == "lfm2" else ""
    assert params.parse(head + "[get_ti", partial=True).tool_calls == ()
    assert params.parse(head + "[get_time(ci", partial=True).tool_calls == ()
    message = params.parse(head + '[get_time(city="Pa', partial=True)
    assert [(c.name, c.arguments) for c in message.tool_calls] == [("get_time", "")]
    assert message.content == ""


def test_reasoning(fmt: str) -> None:
    text = "<think>The user wants the time.</think>Sure. " + section(fmt, '[get_time(city="Paris")]')
    message = chat(fmt, reasoning_format="auto").parse(text)
    assert message.reasoning_content == "The user wants the time."
    assert message.content.strip() == "Sure."
    assert calls_of(message) == [("get_time", {"city": "Paris"})]


def test_reasoning_format_none_keeps_think_in_content(fmt: str) -> None:
    message = chat(fmt, tools=None).parse("<think>hmm</think>Hello")
    assert message.content == "<think>hmm</think>Hello"
    assert message.reasoning_content == ""


def test_streaming_equals_parse(fmt: str) -> None:
    text = (
        "<think>Two cities; call both.</think>I'll check [both] cities.\n"
        + section(fmt, "[get_time(city=\"Paris\"), get(key='tz\\nname', limit=2), ping()]")
        + "\nOne moment."
    )
    params = chat(fmt, reasoning_format="auto", parallel_tool_calls=True)
    final = params.parse(text)
    streamed = stream_char_by_char(params, text)
    assert streamed.content == final.content
    assert streamed.reasoning_content == final.reasoning_content == "Two cities; call both."
    assert [(c.name, c.arguments) for c in streamed.tool_calls] == [(c.name, c.arguments) for c in final.tool_calls]
    assert calls_of(final) == [
        ("get_time", {"city": "Paris"}),
        ("get", {"key": "tz\nname", "limit": 2}),
        ("ping", {}),
    ]
    assert all(STREAM_ID.fullmatch(call.id) for call in streamed.tool_calls)
    assert len({call.id for call in streamed.tool_calls}) == 3


def test_lfm25_brackets_in_prose_stream_as_content() -> None:
    text = "Arrays look like [1, 2]; [get] alone is text, and so is [get_time] or [ping ()]."
    params = chat("lfm2.5")
    streamed = stream_char_by_char(params, text)
    assert streamed.content == text == params.parse(text).content
    assert streamed.tool_calls == ()


def test_lfm2_needs_its_markers() -> None:
    """LFM2 calls are always inside markers; a bare list is text."""
    text = '[get_time(city="Paris")]'
    message = chat("lfm2").parse(text)
    assert message.content == text
    assert message.tool_calls == ()


@pytest.mark.parametrize(
    ("literal", "expected"),
    [
        ('"plain"', "plain"),
        ("'single \"quoted\"'", 'single "quoted"'),
        ('"tab\\there\\\\"', "tab\there\\"),
        ('"\\x41\\u00e9\\U0001F600\\101\\N{BULLET}"', "Aé😀A•"),
        ('"\\ud83d\\ude00"', "😀"),  # a JSON-style surrogate pair
        ('"keep \\d and \\N{NO SUCH NAME}"', "keep \\d and \\N{NO SUCH NAME}"),
        ('"line\\\ncontinued"', "linecontinued"),
    ],
)
def test_python_strings(literal: str, expected: str) -> None:
    assert json.loads(python_literal_to_json(literal)) == expected


def test_decode_without_escapes_is_identity() -> None:
    assert decode_python_escapes("no escapes here") == "no escapes here"


def test_kwargs_to_json() -> None:
    assert python_kwargs_to_json("") == "{}"
    assert json.loads(python_kwargs_to_json("a=1, b=[None, 'x'], a=2")) == {"a": 2, "b": [None, "x"]}
    assert json.loads(python_kwargs_to_json('q={"True": "None"}')) == {"q": {"True": "None"}}
