"""The Gemma 4 format (``gemma4``) beyond the corpus: the argument-dict converter, several calls, reasoning blocks,
fallbacks for malformed or unknown calls, and streaming; and its grammar (arguments typed by the tool's schema in
Gemma's dict syntax, thinking tags, triggers and shapes)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoparser import ChatMessage, ChatParams, ChatTemplate
from autoparser.formats.gemma4.parser import args_to_json
from autoparser.grammar.spec import Trigger
from autoparser.message import ToolCall, apply_deltas

from ..robustness.promises import kept_text
from ..support.grammar_check import all_accept, all_reject, trigger_position, verdicts
from ..support.helpers import check_cut_call
from ..support.ids import as_written

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
    return ChatTemplate.load(template).apply(
        [{"role": "user", "content": "Hi"}], **{"enable_thinking": True, "parallel_tool_calls": False, **options}
    )


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
    # The call committed at its name (a stream announced it): it stays, repaired — its arguments the longest part
    # that reads, closed, as JSON — with a warning holding what was left out.
    assert [c.name for c in message.tool_calls] == ["get_weather"]
    first = message.tool_calls[0]
    assert isinstance(json.loads(first.arguments), dict)
    assert first.status != "complete" and message.warnings  # (an open string runs to the end: cut off)
    assert "a" in kept_text(message)


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
    """Grammar and converter agree on arbitrary text too: a call whose arguments parse has JSON arguments; one
    whose arguments break keeps them as written, with a warning."""
    text = call("set_config", junk)
    message = chat().parse(text)
    if message.tool_calls and not message.warnings:
        assert isinstance(json.loads(message.tool_calls[0].arguments), dict)
    elif message.tool_calls:  # (junk that continues the name makes it a call of an undeclared tool)
        first = message.tool_calls[0]
        assert isinstance(json.loads(first.arguments), dict)
        kept = kept_text(message)  # (punctuation may be re-spelt: Gemma's dict as JSON, closers added)
        assert all(word in kept for word in re.findall(r"[A-Za-z0-9_]+", junk)), (junk, message)
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
    assert as_written(message) == REALISTIC_CALLS
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
    params = tmpl.apply(user, tools=TOOLS, reasoning_format="auto", enable_thinking=True, parallel_tool_calls=False)
    full = tmpl.apply(
        [*user, assistant], tools=TOOLS, add_generation_prompt=False, enable_thinking=True, parallel_tool_calls=False
    ).prompt
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
    final = check_cut_call(params, text, "get_weather", '{"city": "Paris"}')
    assert as_written(final) == (ToolCall("get_weather", '{"city": "Par"}'),)  # as far as it got, closed
    assert final.tool_calls[0].status == "cut_off"
    assert final.content == "Checking."
    assert final.warnings
    partial = params.parse(text, partial=True)
    assert partial.content == "Checking."
    assert as_written(partial) == (ToolCall("get_weather", ""),)  # the name is known, the arguments are not yet


def test_call_without_end_marker_at_the_end_of_a_complete_output() -> None:
    message = chat().parse(call("get_weather", f"{{city:{Q}Rome{Q}}}", end=False))
    assert as_written(message) == (ToolCall("get_weather", '{"city": "Rome"}'),)


def test_unknown_tool_name() -> None:
    text = "Hmm. " + call("get_time", f"{{city:{Q}Rome{Q}}}") + " Then " + call("get_weather", f"{{city:{Q}Rome{Q}}}")
    message = chat(undeclared_tools="content").parse(text)
    assert message.content == "Hmm. " + call("get_time", f"{{city:{Q}Rome{Q}}}") + " Then"
    assert as_written(message) == (ToolCall("get_weather", '{"city": "Rome"}'),)
    assert len(message.warnings) == 1
    assert "<|tool_call>" in message.warnings[0].message


def test_name_prefix_of_a_longer_name() -> None:
    params = chat()
    assert params.parse("<|tool_call>call:get_weather", partial=True).tool_calls == ()
    text = call("get_weather_forecast", "{days:2}")
    assert as_written(params.parse(text)) == (ToolCall("get_weather_forecast", '{"days": 2}'),)


def test_tools_disabled_leave_calls_in_content() -> None:
    text = call("get_weather", f"{{city:{Q}Rome{Q}}}")
    for params in (chat(tools=None), chat(tool_choice="none")):
        message = params.parse(text)
        assert (message.content, message.tool_calls) == (text, ())
        # Never silent: the call markup the parser did not read is named where it stands (docs/parsing.md).
        assert [(w.position, w.message.split(";")[0]) for w in message.warnings][:1] == [
            (0, "call marker '<|tool_call>' did not start a tool call")
        ]


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
    assert as_written(message) == (ToolCall("get_weather", '{"city": "Rome"}'),)
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
        assert as_written(partial) == (ToolCall("get_weather_forecast", ""),)
    done = params.parse(text, partial=True)
    assert as_written(done) == (ToolCall("get_weather_forecast", '{"city": "Oslo", "days": 4}'),)


# --- grammar ---------------------------------------------------------------------------------------------------------

USER = [{"role": "user", "content": "Weather?"}]
GRAMMAR_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "enum": ["Paris", "Tokyo"]},
                    "days": {"type": "integer", "minimum": 1},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city", "days"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "plan_trip",
            "parameters": {
                "type": "object",
                "properties": {
                    "stops": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "properties": {"nights": {"type": "integer"}, "name": {"type": "string"}},
                            "required": ["name"],
                        },
                    },
                    "budget": {"type": ["number", "null"]},
                    "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}, "maxItems": 2},
                    "meta": {"type": "object", "additionalProperties": {"type": "integer"}},
                    "note": {"type": "string", "nullable": True},
                    "mode": {"anyOf": [{"type": "boolean"}, {"const": "auto"}]},
                    "Zone": {"type": "string", "pattern": "^[A-Z]{3}$"},
                },
                "required": ["stops"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "draw_tree",
            "parameters": {
                "$defs": {
                    "node": {
                        "type": "object",
                        "properties": {
                            "label": {"type": "string"},
                            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                        },
                        "required": ["label"],
                    }
                },
                "type": "object",
                "properties": {"root": {"$ref": "#/$defs/node"}},
                "required": ["root"],
            },
        },
    },
    {"type": "function", "function": {"name": "set_config", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "ping", "parameters": {"type": "object", "properties": {}}}},
]
PARIS = call("get_weather", f"{{city:{Q}Paris{Q},days:2}}")
TOKYO = call("get_weather", f"{{city:{Q}Tokyo{Q},days:3}}")
THOUGHT = "<|channel>thought\nThe user wants the weather.<channel|>"


def constrained(template: str = TEMPLATES[0], tool_choice: str = "auto", **kwargs: Any) -> ChatParams:
    options: dict[str, Any] = {"tools": GRAMMAR_TOOLS, "tool_choice": tool_choice, "reasoning_format": "auto"}
    options.update(kwargs)
    return ChatTemplate.load(template).apply(USER, **{"enable_thinking": True, "parallel_tool_calls": False, **options})


@pytest.mark.parametrize("template", TEMPLATES)
def test_grammar_parts(template: str) -> None:
    chat = constrained(template)
    assert chat.grammar is not None and chat.grammar_lazy
    assert chat.grammar_triggers == (Trigger("word", "<|tool_call>"),)
    # The analysis sees no opening marker (it reports "" / "<channel|>"): the format knows the block's tags.
    assert (chat.thinking_start_tag, chat.thinking_end_tag) == ("<|channel>", "<channel|>")
    assert {"<|tool_call>", "<tool_call|>", Q, "<|channel>", "<channel|>"} <= set(chat.preserved_tokens)
    assert not any("FFF_FIRST_FUN_F" in t or "AA_ARG" in t for t in chat.preserved_tokens)  # analysis probes


@pytest.mark.parametrize(
    "arguments",
    [
        f"{{city:{Q}Paris{Q},days:2}}",
        f"{{city:{Q}Tokyo{Q},days:14,unit:{Q}celsius{Q}}}",
        f"{{city:{Q}Paris{Q},days:2,unit:{Q}fahrenheit{Q}}}",
    ],
)
def test_grammar_accepts_schema_valid_weather_calls(arguments: str) -> None:
    chat = constrained()
    output = call("get_weather", arguments)
    assert all_accept(chat, output), verdicts(chat, output)


@pytest.mark.parametrize(
    "arguments",
    [
        f"{{stops:[{{name:{Q}Lyon{Q}}}]}}",
        # every optional property, sorted as the template writes them (Jinja's dictsort ignores case)
        f"{{budget:1.5e3,meta:{{a:1,b:-2}},mode:true,note:{Q}hi, {{there}}: [1]{Q},"
        f"stops:[{{name:{Q}Lyon{Q},nights:2}},{{name:{Q}Nice{Q}}}],tags:[{Q}sun{Q},{Q}sea{Q}],Zone:{Q}CET{Q}}}",
        # the same in the schema's order
        f"{{stops:[{{name:{Q}Lyon{Q}}}],budget:null,tags:[],meta:{{}},note:None,mode:{Q}auto{Q},Zone:{Q}UTC{Q}}}",
        f"{{mode:false,stops:[{{nights:1,name:{Q}x{Q}}},{{name:{Q}y{Q},nights:1}}]}}",  # nested: either order
    ],
)
def test_grammar_accepts_nested_optional_and_nullable_values(arguments: str) -> None:
    chat = constrained()
    output = call("plan_trip", arguments)
    assert all_accept(chat, output), verdicts(chat, output)


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("draw_tree", f"{{root:{{label:{Q}a{Q}}}}}"),
        ("draw_tree", f"{{root:{{children:[{{children:[],label:{Q}c{Q}}},{{label:{Q}d{Q}}}],label:{Q}a{Q}}}}}"),
        ("set_config", "{}"),
        ("set_config", f"{{theme:{Q}dark{Q},sizes:[1,2.5,{{x:None}}],on:true,{Q}my key{Q}:null}}"),
        ("ping", "{}"),
    ],
)
def test_grammar_accepts_recursive_and_free_form_arguments(tool: str, arguments: str) -> None:
    chat = constrained()
    output = call(tool, arguments)
    assert all_accept(chat, output), verdicts(chat, output)


@pytest.mark.parametrize(
    ("label", "output"),
    [
        ("unknown tool", call("launch_rocket", f"{{city:{Q}Paris{Q},days:2}}")),
        ("missing required", call("get_weather", f"{{city:{Q}Paris{Q}}}")),
        ("wrong type", call("get_weather", f"{{city:{Q}Paris{Q},days:{Q}two{Q}}}")),
        ("integer below its minimum", call("get_weather", f"{{city:{Q}Paris{Q},days:0}}")),
        ("number for an integer", call("get_weather", f"{{city:{Q}Paris{Q},days:2.5}}")),
        ("enum violation", call("get_weather", f"{{city:{Q}Berlin{Q},days:2}}")),
        ("unquoted enum value", call("get_weather", "{city:Paris,days:2}")),
        ("unknown key", call("get_weather", f"{{city:{Q}Paris{Q},days:2,hours:3}}")),
        ("duplicate key", call("get_weather", f"{{city:{Q}Paris{Q},city:{Q}Paris{Q},days:2}}")),
        ("keys in neither order", call("get_weather", f"{{days:2,unit:{Q}celsius{Q},city:{Q}Paris{Q}}}")),
        ("JSON instead of Gemma syntax", call("get_weather", '{"city": "Paris", "days": 2}')),
        ("spaces the template never writes", call("get_weather", f"{{city: {Q}Paris{Q}, days: 2}}")),
        ("unclosed dict", call("get_weather", f"{{city:{Q}Paris{Q},days:2")),
        ("unclosed string", call("plan_trip", f"{{stops:[{{name:{Q}Lyon}}]}}")),
        ("no call end marker", call("get_weather", f"{{city:{Q}Paris{Q},days:2}}", end=False)),
        ("empty array below minItems", call("plan_trip", "{stops:[]}")),
        ("nested required missing", call("plan_trip", "{stops:[{nights:2}]}")),
        ("unknown nested key", call("plan_trip", f"{{stops:[{{name:{Q}a{Q},stars:4}}]}}")),
        ("too many items", call("plan_trip", f"{{stops:[{{name:{Q}a{Q}}}],tags:[{Q}a{Q},{Q}b{Q},{Q}c{Q}]}}")),
        ("string too long", call("plan_trip", f"{{stops:[{{name:{Q}a{Q}}}],tags:[{Q}sunshine{Q}]}}")),
        ("pattern violation", call("plan_trip", f"{{stops:[{{name:{Q}a{Q}}}],Zone:{Q}cet{Q}}}")),
        ("wrong additional value", call("plan_trip", f"{{meta:{{a:{Q}x{Q}}},stops:[{{name:{Q}a{Q}}}]}}")),
        ("const violation", call("plan_trip", f"{{mode:{Q}manual{Q},stops:[{{name:{Q}a{Q}}}]}}")),
        ("recursive schema: label missing deep down", call("draw_tree", f"{{root:{{children:[{{}}],label:{Q}a{Q}}}}}")),
        ("arguments to a tool without parameters", call("ping", "{x:1}")),
        ("free-form value that is no Gemma value", call("set_config", "{theme:dark}")),
        ("text after the call", PARIS + "Done."),
    ],
)
@pytest.mark.parametrize("tool_choice", ["auto", "required"])
def test_grammar_rejects_invalid_calls(tool_choice: str, label: str, output: str) -> None:
    chat = constrained(tool_choice=tool_choice)
    assert all_reject(chat, output), (label, verdicts(chat, output))


@pytest.mark.parametrize("template", TEMPLATES)
def test_trigger_fires_on_a_call_not_on_content_or_thoughts(template: str) -> None:
    chat = constrained(template)
    gp = chat.generation_prompt
    assert trigger_position(chat, gp + "Let me check." + PARIS) == len(gp + "Let me check.")
    plain = "Use call:get_weather{city:Paris} or <tool_call|> if you like."
    assert trigger_position(chat, gp + plain) == -1
    musing = "<|channel>thought\nMaybe " + PARIS + "? No.<channel|>"
    assert trigger_position(chat, gp + musing + "Sure." + TOKYO) == len(gp + musing + "Sure.")
    assert trigger_position(chat, gp + musing + "No call needed.") == -1


@pytest.mark.parametrize("template", TEMPLATES)
def test_required_accepts_thinking_and_content_before_the_call(template: str) -> None:
    chat = constrained(template, "required")
    assert chat.grammar is not None and not chat.grammar_lazy
    for output in (PARIS, THOUGHT + PARIS, THOUGHT + "Let me check.\n" + PARIS + "<|tool_response>", "On it. " + PARIS):
        assert all_accept(chat, output), (output, verdicts(chat, output))
    for output in (THOUGHT + "It is sunny.", "It is sunny.", ""):
        assert all_reject(chat, output), output
    no_thinking = constrained(template, "required", enable_thinking=False)
    assert no_thinking.generation_prompt.endswith("<|channel>thought\n<channel|>")
    assert all_accept(no_thinking, "Checking. " + PARIS), verdicts(no_thinking, "Checking. " + PARIS)


@pytest.mark.parametrize("template", TEMPLATES)
def test_parallel_calls_only_when_enabled(template: str) -> None:
    outputs = (PARIS + TOKYO, PARIS + "\n" + TOKYO + "<|tool_response>", PARIS + THOUGHT + TOKYO)
    for tool_choice in ("auto", "required"):
        parallel = constrained(template, tool_choice, parallel_tool_calls=True)
        single = constrained(template, tool_choice, parallel_tool_calls=False)
        for output in outputs:
            assert all_accept(parallel, output), (output, verdicts(parallel, output))
            assert all_reject(single, output), (output, verdicts(single, output))
        assert all_accept(single, PARIS + "<|tool_response>")


def test_no_thoughts_between_calls_with_thinking_off() -> None:
    chat = constrained(parallel_tool_calls=True, enable_thinking=False)
    assert all_accept(chat, PARIS + TOKYO)
    assert all_reject(chat, PARIS + THOUGHT + TOKYO)


@pytest.mark.parametrize("template", TEMPLATES)
def test_no_grammar_without_tools_or_with_tool_choice_none(template: str) -> None:
    for chat in (constrained(template, "none"), constrained(template, tools=None)):
        assert chat.grammar is None and not chat.grammar_triggers
        assert (chat.thinking_start_tag, chat.thinking_end_tag) == ("<|channel>", "<channel|>")


@pytest.mark.parametrize("template", TEMPLATES)
def test_json_schema_answer_may_follow_a_thought(template: str) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    chat = constrained(template, tools=None, json_schema=schema)
    assert chat.grammar is not None and not chat.grammar_lazy
    for output in ('{"n": 1}', THOUGHT + '{"n": 1}', THOUGHT + '\n```json\n{"n": 1}\n```'):
        assert all_accept(chat, output), (output, verdicts(chat, output))
    for output in ('{"n": "1"}', "Sure: " + '{"n": 1}', THOUGHT + "{n:1}"):
        assert all_reject(chat, output), output
    no_thinking = constrained(template, tools=None, json_schema=schema, enable_thinking=False)
    assert all_accept(no_thinking, '{"n": 1}') and all_reject(no_thinking, THOUGHT + '{"n": 1}')


def _template_call(tmpl: ChatTemplate, name: str, arguments: dict[str, Any]) -> str:
    """The call exactly as the template writes it in an assistant turn."""
    tool_call = {"type": "function", "id": "c1", "function": {"name": name, "arguments": json.dumps(arguments)}}
    assistant = {"role": "assistant", "content": "", "tool_calls": [tool_call]}
    full = tmpl.apply(
        [*USER, assistant],
        tools=GRAMMAR_TOOLS,
        add_generation_prompt=False,
        enable_thinking=True,
        parallel_tool_calls=False,
    ).prompt
    start = full.index("<|tool_call>")
    return full[start : full.index("<tool_call|>", start) + len("<tool_call|>")]


_PLAIN = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=8).filter(lambda s: Q not in s)
_STOPS = st.lists(
    st.fixed_dictionaries({"name": _PLAIN}, optional={"nights": st.integers(-5, 10**6)}), min_size=1, max_size=3
)
_TRIPS = st.fixed_dictionaries(
    {"stops": _STOPS},
    optional={
        "budget": st.none() | st.floats(allow_nan=False, allow_infinity=False) | st.integers(0, 10**9),
        "tags": st.lists(st.text(st.characters(codec="ascii"), max_size=5).filter(lambda s: Q not in s), max_size=2),
        "meta": st.dictionaries(_KEYS, st.integers(-100, 100), max_size=3),
        "note": st.none() | _PLAIN,
        "mode": st.booleans() | st.just("auto"),
        "Zone": st.from_regex(r"[A-Z]{3}", fullmatch=True),
    },
)


@settings(max_examples=40, deadline=None)
@given(arguments=_TRIPS)
def test_grammar_accepts_what_the_template_writes(arguments: dict[str, Any]) -> None:
    """Any schema-valid call, rendered by the template (sorted keys, None for null, raw strings), is accepted."""
    tmpl = ChatTemplate.load(TEMPLATES[0])
    output = _template_call(tmpl, "plan_trip", arguments)
    chat = constrained()
    assert all_accept(chat, output), (output, verdicts(chat, output))


SCHEMA_CASES: list[tuple[str, dict[str, Any] | None, list[str], list[str]]] = [
    # (label, parameters, accepted argument dicts, rejected argument dicts)
    (
        "anyOf at the top",
        {
            "anyOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                {"type": "object", "properties": {"b": {"type": "string"}}, "required": ["b"]},
            ]
        },
        ["{a:1}", f"{{b:{Q}x{Q}}}"],
        ["{a:1,b:2}", "{}"],
    ),
    (
        "allOf is intersected",
        {"properties": {"x": {"allOf": [{"type": "integer"}, {"minimum": 3}]}}, "required": ["x"]},
        ["{x:3}"],
        ["{x:2}", "{x:1.5}"],
    ),
    ("not: any value", {"properties": {"x": {"not": {"type": "string"}}}, "required": ["x"]}, ["{x:1}"], ["{x:}"]),
    ("tuples: any items", {"properties": {"x": {"prefixItems": [{"type": "integer"}]}}}, ["{x:[{a:[]}]}"], ["{x:[,]}"]),
    (
        "mutually recursive $refs",
        {
            "$defs": {
                "a": {"type": "object", "properties": {"b": {"$ref": "#/$defs/b"}}},
                "b": {"type": "array", "items": {"$ref": "#/$defs/a"}},
            },
            "properties": {"r": {"$ref": "#/$defs/a"}},
        },
        ["{r:{b:[{},{b:[]}]}}"],
        ["{r:{b:[1]}}"],
    ),
    (
        "enum of mixed values",
        {"properties": {"e": {"enum": [1, "a", None, True, {"k": [1]}, f"no{Q}"]}}},
        ["{e:1}", f"{{e:{Q}a{Q}}}", "{e:null}", "{e:None}", "{e:true}", "{e:{k:[1]}}"],
        ["{e:2}", f"{{e:{Q}no{Q}}}"],
    ),
    (
        "additional members after the properties",
        {"properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "boolean"}, "required": ["a"]},
        ["{a:1}", "{a:1,z:true,y:false}"],
        ["{z:true}", "{a:1,z:1}"],
    ),
    ("closed empty dict", {"type": "object", "additionalProperties": False}, ["{}"], ["{z:1}"]),
    ("type implied by keywords", {"properties": {"a": {"minLength": 2}}}, [f"{{a:{Q}ab{Q}}}"], [f"{{a:{Q}a{Q}}}"]),
    (
        "keys a bare word cannot hold are quoted",
        {"properties": {"my key": {"type": "integer"}, "a,b": {"type": "integer"}}},
        ["{my key:1}", f"{{{Q}a,b{Q}:2}}"],
        ["{a,b:2}"],
    ),
    (
        "string length and format",
        {"properties": {"s": {"type": "string", "maxLength": 3}, "d": {"type": "string", "format": "date"}}},
        [f"{{s:{Q}{{<}}{Q}}}", f"{{d:{Q}2024-01-31{Q}}}"],
        [f"{{s:{Q}abcd{Q}}}", f"{{d:{Q}tomorrow{Q}}}"],
    ),
    (
        "type lists",
        {"properties": {"v": {"type": ["integer", "string", "null"]}}},
        ["{v:1}", f"{{v:{Q}1{Q}}}", "{v:None}"],
        ["{v:true}"],
    ),
    (
        "array lengths",
        {"properties": {"v": {"items": {"type": "integer"}, "minItems": 2, "maxItems": 3}, "w": {"maxItems": 0}}},
        ["{v:[1,2],w:[]}", "{v:[1,2,3]}"],
        ["{v:[1]}", "{v:[1,2,3,4]}", "{w:[1]}"],
    ),
    ("no parameters: any dict", None, ["{}", f"{{a:1,b:[{Q}x{Q}]}}"], ["{a:}"]),
]


@pytest.mark.parametrize(
    ("parameters", "accepted", "rejected"), [pytest.param(*case[1:], id=case[0]) for case in SCHEMA_CASES]
)
def test_schema_features(parameters: dict[str, Any] | None, accepted: list[str], rejected: list[str]) -> None:
    """Each keyword is honoured where Gemma's syntax can express it; elsewhere any well-formed value is allowed."""
    function: dict[str, Any] = {"name": "t"} if parameters is None else {"name": "t", "parameters": parameters}
    chat = constrained(tools=[{"type": "function", "function": function}])
    for arguments in accepted:
        assert all_accept(chat, call("t", arguments)), (arguments, verdicts(chat, call("t", arguments)))
    for arguments in rejected:
        assert all_reject(chat, call("t", arguments)), arguments
