"""The Gemma 4 format (``gemma4``) beyond the corpus: the argument-dict converter, several calls, reasoning blocks,
fallbacks for malformed or unknown calls, and streaming."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoparser import ChatMessage, ChatParams, ChatTemplate
from autoparser.generate.formats.gemma4 import args_to_json
from autoparser.message import ToolCall, apply_deltas

TEMPLATES = ("google-gemma-4-31B-it", "google-gemma-4-31B-it-interleaved")
Q = '<|"|>'

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_weather_forecast",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "set_config",
            "parameters": {"type": "object", "properties": {"config": {"type": "object"}, "tags": {"type": "array"}}},
        },
    },
]


def chat(template: str = TEMPLATES[0], **kwargs: Any) -> ChatParams:
    options: dict[str, Any] = {"tools": TOOLS, "reasoning_format": "auto", "parallel_tool_calls": True}
    options.update(kwargs)
    return ChatTemplate.load(template).apply([{"role": "user", "content": "Hi"}], **options)


def call(name: str, args: str, *, end: bool = True) -> str:
    return f"<|tool_call>call:{name}{args}{'<tool_call|>' if end else ''}"


def stream_all(params: ChatParams, text: str, size: int = 1) -> ChatMessage:
    stream = params.stream()
    deltas = []
    for pos in range(0, len(text), size):
        deltas += stream.feed(text[pos : pos + size])
    deltas += stream.finish()
    return apply_deltas(deltas)


REALISTIC = (
    "<|channel>thought\nThe user wants Paris and a 3-day forecast for Tokyo.\nTwo calls.<channel|>"
    "Let me look that up.\n"
    + call("get_weather", f"{{city:{Q}Paris{Q}}}")
    + "\n"
    + call("get_weather_forecast", f"{{city:{Q}Tokyo, Japan{Q},days:3}}")
    + call("set_config", f'{{config:{{theme:{Q}dark {{mode}}: "x"{Q},count:2,ratio:1.5e3,on:true}},tags:[]}}')
    + "<|tool_response>"
)
REALISTIC_CALLS = (
    ToolCall("get_weather", '{"city": "Paris"}'),
    ToolCall("get_weather_forecast", '{"city": "Tokyo, Japan", "days": 3}'),
    ToolCall(
        "set_config",
        '{"config": {"theme": "dark {mode}: \\"x\\"", "count": 2, "ratio": 1.5e3, "on": true}, "tags": []}',
    ),
)


# --- the argument converter ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gemma", "expected"),
    [
        ("{}", {}),
        (f"{{city:{Q}London{Q}}}", {"city": "London"}),
        (
            "{n:42,neg:-7,pi:3.14,big:1.5e10,on:true,off:false,nothing:null}",
            {
                "n": 42,
                "neg": -7,
                "pi": 3.14,
                "big": 1.5e10,
                "on": True,
                "off": False,
                "nothing": None,
            },
        ),
        (f"{{todos:[{Q}buy milk{Q},{Q}walk dog{Q}],empty:[]}}", {"todos": ["buy milk", "walk dog"], "empty": []}),
        (
            f"{{config:{{theme:{Q}dark{Q},nested:{{deep:[1,[2,{{x:{Q}y{Q}}}]]}}}}}}",
            {
                "config": {"theme": "dark", "nested": {"deep": [1, [2, {"x": "y"}]]}},
            },
        ),
        # string text is raw: quotes, backslashes, newlines, braces and commas need no escaping
        (f'{{code:{Q}print("a\\n", {{1: [2]}}){Q}}}', {"code": 'print("a\\n", {1: [2]})'}),
        (f"{{text:{Q}line 1\nline 2{Q}}}", {"text": "line 1\nline 2"}),
        (f"{{s:{Q}{Q}}}", {"s": ""}),
        # quoted keys (format_argument's escape_keys) and JSON drift
        (f"{{{Q}my key{Q}:1}}", {"my key": 1}),
        ('{"city": "Paris", "days": 2}', {"city": "Paris", "days": 2}),
        # whitespace between tokens
        (f"{{ a : 1 , b : [ 1 , 2 ] , c : {Q} x {Q} }}", {"a": 1, "b": [1, 2], "c": " x "}),
        # bare words are strings unless they are JSON scalars; the template renders None as `None`
        (
            "{unit:celsius,when:next week,none:None,yes:True,nan:NaN,zero:01}",
            {
                "unit": "celsius",
                "when": "next week",
                "none": None,
                "yes": True,
                "nan": "NaN",
                "zero": "01",
            },
        ),
        ("{name:ünïcødé,emoji:😀}", {"name": "ünïcødé", "emoji": "😀"}),
    ],
)
def test_args_to_json(gemma: str, expected: dict[str, Any]) -> None:
    converted = args_to_json(gemma)
    assert json.loads(converted) == expected
    assert list(json.loads(converted)) == list(expected)  # key order is the model's


def test_args_to_json_keeps_number_spelling() -> None:
    assert args_to_json("{a:1.5e10,b:-0.0,c:100}") == '{"a": 1.5e10, "b": -0.0, "c": 100}'


@pytest.mark.parametrize("bad", [f"{{a:{Q}open}}", "{a:<b}", "{a:1"])
def test_args_to_json_rejects_what_the_grammar_rejects(bad: str) -> None:
    with pytest.raises(ValueError):
        args_to_json(bad)
    message = chat().parse(call("get_weather", bad))
    assert message.tool_calls == ()
    assert message.warnings


def _gemma(value: Any, *, key_quote: bool = False) -> str:
    """Python value -> Gemma syntax, as the template's format_argument writes it."""
    if isinstance(value, str):
        return Q + value + Q
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "{" + ",".join(f"{Q + k + Q if key_quote else k}:{_gemma(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_gemma(v) for v in value) + "]"
    return repr(value)


_KEYS = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12).filter(lambda s: Q not in s)
_LEAVES = st.one_of(
    _TEXT, st.integers(-(10**12), 10**12), st.floats(allow_nan=False, allow_infinity=False), st.booleans(), st.none()
)
_VALUES = st.recursive(
    _LEAVES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3), max_leaves=8
)


@settings(max_examples=150, deadline=None)
@given(args=st.dictionaries(_KEYS, _VALUES, max_size=4), key_quote=st.booleans())
def test_round_trip_through_the_call_grammar(args: dict[str, Any], key_quote: bool) -> None:
    """Whatever the template can write, the parser reads back as the same JSON (grammar and converter agree)."""
    message = chat().parse(call("set_config", _gemma(args, key_quote=key_quote)))
    assert [c.name for c in message.tool_calls] == ["set_config"]
    assert json.loads(message.tool_calls[0].arguments) == args
    assert message.content == ""


_JUNK = st.lists(
    st.sampled_from(["{", "}", "[", "]", ",", ":", " ", "\n", "\xa0", Q, "<", '"', "\\", "a", "1", "-", "e", "null"]),
    max_size=16,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(junk=_JUNK)
def test_any_argument_text_parses_without_error(junk: str) -> None:
    """Grammar and converter agree on arbitrary text too: a call that parses has JSON arguments, else it is text."""
    text = call("set_config", junk)
    message = chat().parse(text)
    if message.tool_calls:
        assert isinstance(json.loads(message.tool_calls[0].arguments), dict)
    else:
        assert message.content == text.strip(" \t\n\r") and message.warnings


# --- whole outputs ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("template", TEMPLATES)
def test_template_uses_the_format(template: str) -> None:
    assert ChatTemplate.load(template).analysis.format == "gemma4"
    assert chat(template).format == "gemma4"


@pytest.mark.parametrize("template", TEMPLATES)
def test_parallel_calls_with_reasoning_and_content(template: str) -> None:
    message = chat(template).parse(REALISTIC)
    assert message.reasoning_content == "The user wants Paris and a 3-day forecast for Tokyo.\nTwo calls."
    assert message.content == "Let me look that up."
    assert message.tool_calls == REALISTIC_CALLS
    assert message.warnings == ()


def test_what_the_template_renders_parses_back() -> None:
    """The assistant turn the template writes for tool calls is an output the parser reads back."""
    tmpl = ChatTemplate.load(TEMPLATES[0])
    user = [{"role": "user", "content": "Hi"}]
    args = {"city": "Paris", "config": {"theme": "dark", "count": 3, "tags": ["a", "b"]}, "on": False}
    assistant = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"type": "function", "id": "c1", "function": {"name": "set_config", "arguments": json.dumps(args)}},
            {"type": "function", "id": "c2", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}},
        ],
    }
    params = tmpl.apply(user, tools=TOOLS, reasoning_format="auto")
    full = tmpl.apply([*user, assistant], tools=TOOLS, add_generation_prompt=False).prompt
    assert full.startswith(params.prompt)
    output = full[len(params.prompt) :]
    message = params.parse(output)
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [
        ("set_config", dict(sorted(args.items()))),
        ("get_weather", {"city": "Rome"}),
    ]
    assert message.content == ""


def test_content_only() -> None:
    text = "Paris is sunny today.\nEnjoy {your} trip: <b>really</b>!"
    for params in (chat(), chat(tools=None), chat(reasoning_format="none")):
        message = params.parse(text)
        assert (message.content, message.reasoning_content, message.tool_calls) == (text, "", ())
        assert stream_all(params, text).content == text


def test_end_of_turn_markup_is_dropped() -> None:
    assert chat().parse("Done.<turn|>\n").content == "Done."
    message = chat().parse(call("get_weather", f"{{city:{Q}Oslo{Q}}}") + "<|tool_response>")
    assert (message.content, len(message.tool_calls)) == ("", 1)


def test_truncated_call_at_the_end() -> None:
    text = "Checking. " + call("get_weather", f"{{city:{Q}Par", end=False)
    params = chat()
    final = params.parse(text)  # partial=False: never raises, keeps the text
    assert final.tool_calls == ()
    assert final.content == text.strip()
    assert final.warnings[0].position == len("Checking. ")
    partial = params.parse(text, partial=True)
    assert partial.content == "Checking."
    assert partial.tool_calls == (ToolCall("get_weather", ""),)  # the name is known, the arguments are not yet


def test_call_without_end_marker_at_the_end_of_a_complete_output() -> None:
    message = chat().parse(call("get_weather", f"{{city:{Q}Rome{Q}}}", end=False))
    assert message.tool_calls == (ToolCall("get_weather", '{"city": "Rome"}'),)


def test_unknown_tool_name() -> None:
    text = "Hmm. " + call("get_time", f"{{city:{Q}Rome{Q}}}") + " Then " + call("get_weather", f"{{city:{Q}Rome{Q}}}")
    message = chat().parse(text)
    assert message.content == "Hmm. " + call("get_time", f"{{city:{Q}Rome{Q}}}") + " Then"
    assert message.tool_calls == (ToolCall("get_weather", '{"city": "Rome"}'),)
    assert len(message.warnings) == 1
    assert "<|tool_call>" in message.warnings[0].message


def test_name_prefix_of_a_longer_name() -> None:
    params = chat()
    assert params.parse("<|tool_call>call:get_weather", partial=True).tool_calls == ()
    text = call("get_weather_forecast", "{days:2}")
    assert params.parse(text).tool_calls == (ToolCall("get_weather_forecast", '{"days": 2}'),)


def test_tools_disabled_leave_calls_in_content() -> None:
    text = call("get_weather", f"{{city:{Q}Rome{Q}}}")
    for params in (chat(tools=None), chat(tool_choice="none")):
        message = params.parse(text)
        assert (message.content, message.tool_calls, message.warnings) == (text, (), ())


def test_reasoning_format_none_keeps_the_block_in_content() -> None:
    text = "<|channel>thought\nhm<channel|>Answer." + call("get_weather", f"{{city:{Q}Rome{Q}}}")
    message = chat(reasoning_format="none").parse(text)
    assert message.content == "<|channel>thought\nhm<channel|>Answer."
    assert message.reasoning_content == ""
    assert len(message.tool_calls) == 1


def test_thinking_off_prompt_closes_an_empty_block() -> None:
    params = chat(enable_thinking=False)
    assert params.generation_prompt.endswith("<|channel>thought\n<channel|>")
    message = params.parse("Just the answer.")
    assert (message.content, message.reasoning_content) == ("Just the answer.", "")


def test_unclosed_reasoning_stops_at_a_call() -> None:
    text = "<|channel>thought\nI should call it " + call("get_weather", f"{{city:{Q}Rome{Q}}}")
    message = chat().parse(text)
    assert message.reasoning_content == "I should call it"
    assert message.tool_calls == (ToolCall("get_weather", '{"city": "Rome"}'),)
    assert chat(tools=None).parse("<|channel>thought\nstill thinking").reasoning_content == "still thinking"


@pytest.mark.parametrize("template", TEMPLATES)
def test_interleaved_thinking_between_calls(template: str) -> None:
    text = (
        "<|channel>thought\nFirst Paris.<channel|>"
        + call("get_weather", f"{{city:{Q}Paris{Q}}}")
        + "<|channel>thought\nNow Rome.<channel|>"
        + call("get_weather", f"{{city:{Q}Rome{Q}}}")
    )
    message = chat(template).parse(text)
    assert message.reasoning_content == "First Paris.Now Rome."
    assert [json.loads(c.arguments)["city"] for c in message.tool_calls] == ["Paris", "Rome"]
    assert message.content == ""


# --- streaming -------------------------------------------------------------------------------------------------


def _ids_generated(message: ChatMessage) -> bool:
    return all(re.fullmatch(r"call_[A-Za-z0-9]{24}", c.id) for c in message.tool_calls)


@pytest.mark.parametrize("template", TEMPLATES)
def test_streaming_char_by_char_equals_parse(template: str) -> None:
    params = chat(template)
    stream = params.stream()
    deltas = []
    for i, char in enumerate(REALISTIC):
        deltas += stream.feed(char)
        now = apply_deltas(deltas)
        current = params.parse(REALISTIC[: i + 1], partial=True)
        assert (now.content, now.reasoning_content) == (current.content, current.reasoning_content)
        assert [(c.name, c.arguments) for c in now.tool_calls] == [(c.name, c.arguments) for c in current.tool_calls]
    deltas += stream.finish()
    streamed = apply_deltas(deltas)
    final = params.parse(REALISTIC)
    assert (streamed.content, streamed.reasoning_content) == (final.content, final.reasoning_content)
    assert [(c.name, c.arguments) for c in streamed.tool_calls] == [(c.name, c.arguments) for c in final.tool_calls]
    assert _ids_generated(streamed)
    assert len({c.id for c in streamed.tool_calls}) == len(streamed.tool_calls)


@pytest.mark.parametrize("size", [2, 3, 5, 7, 11, 64])
def test_streaming_in_chunks(size: int) -> None:
    params = chat()
    streamed = stream_all(params, REALISTIC, size)
    final = params.parse(REALISTIC)
    assert (streamed.content, streamed.reasoning_content) == (final.content, final.reasoning_content)
    assert [(c.name, c.arguments) for c in streamed.tool_calls] == [(c.name, c.arguments) for c in final.tool_calls]
    assert _ids_generated(streamed)


def test_arguments_arrive_when_the_call_is_complete() -> None:
    params = chat()
    text = call("get_weather_forecast", f"{{city:{Q}Oslo{Q},days:4}}")
    cut = text.index("<tool_call|>")
    assert params.parse(text[: text.index("{")], partial=True).tool_calls == ()  # `{` settles the name
    for end in range(text.index("{") + 1, cut + len("<tool_call|>")):
        partial = params.parse(text[:end], partial=True)
        assert partial.tool_calls == (ToolCall("get_weather_forecast", ""),)
    done = params.parse(text, partial=True)
    assert done.tool_calls == (ToolCall("get_weather_forecast", '{"city": "Oslo", "days": 4}'),)
