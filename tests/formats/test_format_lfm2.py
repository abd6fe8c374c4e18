"""LFM2 (``<|tool_call_start|>[name(a=1)]<|tool_call_end|>``) and LFM2.5 (bare ``[name(a=1)]``) beyond the corpus."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from autoparser import ChatParams, ChatTemplate
from autoparser.formats.lfm2 import decode_python_escapes, python_kwargs_to_json, python_literal_to_json

from ..support.grammar_check import all_accept, all_reject, trigger_position, verdicts
from ..support.helpers import WEATHER_TOOL, calls_of, check_cut_call, function_tool, stream_char_by_char

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
    message = check_cut_call(params, text, "get_time", '{"city": "Paris"}')
    assert message.content == "Let me look."
    # as far as it got, converted to JSON (the open string closed)
    assert [(c.name, c.arguments, c.status) for c in message.tool_calls] == [("get_time", '{"city": "Par"}', "cut_off")]
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
    message = chat(fmt, tools=None, reasoning_format="none").parse("<think>hmm</think>Hello")
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


def test_each_format_reads_the_others_layout() -> None:
    """The templates show neither layout; models write both (LFM2.5 output often wraps its list in LFM2's
    markers): each parser reads a bare list and a wrapped one, and consumes the markers."""
    for fmt in TEMPLATES:
        for text in ('[get_time(city="Paris")]', '<|tool_call_start|>[get_time(city="Paris")]<|tool_call_end|>'):
            message = chat(fmt).parse(text)
            assert calls_of(message) == [("get_time", {"city": "Paris"})], (fmt, text)
            assert message.content == ""
            assert message.warnings == ()


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


# --------------------------------------------------------------------------------------------------------- grammars
# Neither template renders tool-call history, so the shared negative grammar test cannot derive their call syntax:
# these checks use hand-written outputs in each format instead.

WEATHER = [WEATHER_TOOL]
PING = function_tool("ping")


def weather_chat(fmt: str, **kwargs: Any) -> ChatParams:
    kwargs.setdefault("tools", WEATHER)
    return chat(fmt, **kwargs)


@pytest.mark.parametrize("choice", ["auto", "required"])
@pytest.mark.parametrize(
    "calls",
    [
        '[get_weather(city="Paris", days=2)]',
        "[get_weather(city='Tokyo', days=-14)]",
        '[get_weather( city = "Paris" ,days=0 ) ]',
    ],
)
def test_grammar_accepts_calls(fmt: str, choice: str, calls: str) -> None:
    output = section(fmt, calls)
    params = weather_chat(fmt, tool_choice=choice)
    assert all_accept(params, output), verdicts(params, output)


@pytest.mark.parametrize(
    ("label", "calls"),
    [
        ("unknown tool", '[launch_rocket(city="Paris", days=2)]'),
        ("missing required", '[get_weather(city="Paris")]'),
        ("wrong type", '[get_weather(city="Paris", days="two")]'),
        ("enum violation", '[get_weather(city="Berlin", days=2)]'),
        ("unknown argument", '[get_weather(city="Paris", days=2, hours=3)]'),
        ("positional argument", '[get_weather("Paris", days=2)]'),
        ("unclosed value", '[get_weather(city="Paris", days=[2)]'),
        ("unclosed string", '[get_weather(city="Paris, days=2)]'),
        ("unclosed call", '[get_weather(city="Paris", days=2]'),
    ],
)
def test_grammar_rejects_invalid_calls(fmt: str, label: str, calls: str) -> None:
    params = weather_chat(fmt, tool_choice="required")
    output = section(fmt, calls)
    assert all_reject(params, output), (label, verdicts(params, output))


def test_grammar_shape_lfm2() -> None:
    params = weather_chat("lfm2")
    assert params.grammar_lazy
    assert [(t.type, t.value) for t in params.grammar_triggers] == [("word", "<|tool_call_start|>")]
    assert params.preserved_tokens == ("<think>", "</think>", "<|tool_call_start|>", "<|tool_call_end|>")
    assert (params.thinking_start_tag, params.thinking_end_tag) == ("<think>", "</think>")
    # The markers are part of LFM2's call: a bare list is not one.
    assert all_reject(weather_chat("lfm2", tool_choice="required"), '[get_weather(city="Paris", days=2)]')


def test_grammar_shape_lfm25() -> None:
    params = weather_chat("lfm2.5", tools=[*WEATHER, PING])
    assert params.grammar_lazy
    assert [(t.type, t.value) for t in params.grammar_triggers] == [("word", "[get_weather("), ("word", "[ping(")]
    assert params.preserved_tokens == ("<think>", "</think>")
    assert (params.thinking_start_tag, params.thinking_end_tag) == ("<think>", "</think>")


@pytest.mark.parametrize(
    "text",
    [
        "Arrays look like [1, 2]; [get_weather] alone is text, and so is get_weather(city='Paris').",
        "<think>Maybe [get_weather(city='Paris', days=1)] or <|tool_call_start|>?</think>No call needed.",
    ],
)
def test_trigger_not_on_content(fmt: str, text: str) -> None:
    params = weather_chat(fmt, reasoning_format="auto")
    assert trigger_position(params, params.generation_prompt + text) < 0


def test_trigger_fires_on_call(fmt: str) -> None:
    params = weather_chat(fmt, reasoning_format="auto")
    output = "<think>Weather [1].</think>Let me check. " + section(fmt, '[get_weather(city="Paris", days=2)]')
    position = trigger_position(params, params.generation_prompt + output)
    assert position == len(params.generation_prompt) + output.index("[get_weather" if fmt == "lfm2.5" else "<|tool")
    assert all_accept(params, output), verdicts(params, output)


@pytest.mark.parametrize(
    "head",
    ["", "Let me check [the] weather.\n", "<think>Paris, [get_weather( then.</think>", "<think>x</think>\nSure: "],
)
def test_required_grammar_allows_reasoning_and_content(fmt: str, head: str) -> None:
    params = weather_chat(fmt, tool_choice="required")
    assert not params.grammar_lazy
    assert params.grammar_triggers == ()
    output = head + section(fmt, '[get_weather(city="Paris", days=2)]') + "\n"
    assert all_accept(params, output), verdicts(params, output)
    assert all_reject(params, head + "No call at all.")


def test_parallel_calls_only_when_enabled(fmt: str) -> None:
    output = section(fmt, '[get_weather(city="Paris", days=2), ping(), get_weather(city="Tokyo", days=1)]')
    tools = [*WEATHER, PING]
    assert all_accept(weather_chat(fmt, tools=tools, parallel_tool_calls=True), output)
    assert all_reject(weather_chat(fmt, tools=tools, parallel_tool_calls=False), output)
    assert all_reject(weather_chat(fmt, tools=tools, tool_choice="required"), output)


def test_no_grammar_without_tools(fmt: str) -> None:
    assert weather_chat(fmt, tool_choice="none").grammar is None
    params = weather_chat(fmt, tools=None)
    assert params.grammar is None
    assert (params.thinking_start_tag, params.thinking_end_tag) == ("<think>", "</think>")


def test_json_schema_response_after_reasoning(fmt: str) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    params = chat(fmt, tools=None, json_schema=schema)
    assert not params.grammar_lazy
    for output in ('{"n": 1}', '<think>One.</think>\n```json\n{"n": 1}\n```'):
        assert all_accept(params, output), (output, verdicts(params, output))
    assert all_reject(params, '{"n": "one"}')


PARAMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "minLength": 2, "maxLength": 5},
        "unit": {"type": "string", "pattern": "^(c|f)$"},
        "day": {"type": "string", "format": "date"},
        "when": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
        "mode": {"const": "fast"},
        "tags": {"type": "array", "items": {"enum": ["a", "it's"]}, "minItems": 1, "maxItems": 2},
        "box": {
            "type": "object",
            "properties": {"w": {"type": "number"}, "on": {"type": "boolean"}},
            "required": ["on"],
            "additionalProperties": {"type": "integer"},
        },
        "tree": {"$ref": "#/$defs/node"},
        "both": {
            "allOf": [
                {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
                {"properties": {"y": {"type": "string"}}},
            ]
        },
        "free": {},
        "items": {"type": "array"},
        "opaque": {"not": {"type": "string"}},
    },
    "required": ["code"],
    "$defs": {
        "node": {
            "type": "object",
            "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            "required": ["v"],
        }
    },
}
TYPED = [{"type": "function", "function": {"name": "typed", "parameters": PARAMS_SCHEMA}}]


@pytest.mark.parametrize(
    "kwargs",
    [
        "code='ab'",
        r'code="a\"b\n"',  # escapes count as one character each
        "code='abcde', unit='f', day='2024-02-29', when=None, mode=\"fast\"",
        "code='ab', when=3, tags=['a', \"it's\"], box={'w': -1.5e3, 'on': True, 'extra': 7}",
        "code='ab', tree={'v': 1, 'kids': [{'v': 2, 'kids': []}, {\"v\": 3}]}",
        "code='ab', both={'x': 1, 'y': 'z'}, free=[None, {'k': 1}], items=[[], {}]",
        "code='ab', opaque={'anything': ['goes', 1.5, True]}",
    ],
)
def test_grammar_python_values_follow_the_schema(fmt: str, kwargs: str) -> None:
    output = section(fmt, f"[typed({kwargs})]")
    params = chat(fmt, tools=TYPED)
    assert all_accept(params, output), (kwargs, verdicts(params, output))


@pytest.mark.parametrize(
    ("label", "kwargs"),
    [
        ("too short", "code='a'"),
        ("too long", "code='abcdef'"),
        ("pattern", "code='ab', unit='k'"),
        ("format", "code='ab', day='Monday'"),
        ("minimum", "code='ab', when=0"),
        ("const", "code='ab', mode='slow'"),
        ("enum item", "code='ab', tags=['b']"),
        ("minItems", "code='ab', tags=[]"),
        ("maxItems", "code='ab', tags=['a', 'a', 'a']"),
        ("missing required key", "code='ab', box={'w': 1}"),
        ("additional value type", "code='ab', box={'on': False, 'extra': 'x'}"),
        ("JSON literal", "code='ab', box={'on': true}"),
        ("recursive required", "code='ab', tree={'v': 1, 'kids': [{'kids': []}]}"),
        ("merged required", "code='ab', both={'y': 'z'}"),
        ("schema order", "when=3, code='ab'"),
        ("expression", "code='ab', free=[None] if True else []"),
        ("tuple", "code='ab', free=(1, 2)"),
        ("JSON spelling", "code='ab', free=null"),
        ("repeated argument", "code='ab', code='cd'"),
    ],
)
def test_grammar_python_values_outside_the_schema(fmt: str, label: str, kwargs: str) -> None:
    params = chat(fmt, tools=TYPED, tool_choice="required")
    output = section(fmt, f"[typed({kwargs})]")
    assert all_reject(params, output), (label, verdicts(params, output))


def test_grammar_tool_without_declared_arguments_takes_any_keywords(fmt: str) -> None:
    params = chat(fmt, tools=[{"type": "function", "function": {"name": "anything"}}])
    assert all_accept(params, section(fmt, "[anything(a=1, b_2=['x'], c={'d': None})]"))
    assert all_accept(params, section(fmt, "[anything()]"))
    assert all_reject(params, section(fmt, "[anything(1)]"))
    assert all_reject(chat(fmt, tools=[PING]), section(fmt, "[ping(a=1)]"))


def test_grammar_many_optional_arguments(fmt: str) -> None:
    """Past three optional arguments the rest of the list is a rule per position (a linear grammar)."""
    props = {f"o{i}": {"type": "integer"} for i in range(6)}
    schema = {"type": "object", "properties": {"r": {"type": "string"}, **props}, "required": ["r"]}
    params = chat(fmt, tools=[{"type": "function", "function": {"name": "many", "parameters": schema}}])
    assert params.grammar is not None
    assert "rest" in params.grammar
    for kwargs in (
        "r='x'",
        "r='x', o5=5",
        "r='x', o0=0, o2=2, o5=5",
        "r='x', " + ", ".join(f"o{i}={i}" for i in range(6)),
    ):
        assert all_accept(params, section(fmt, f"[many({kwargs})]")), kwargs
    for kwargs in ("o1=1", "r='x', o2=2, o1=1", "r='x',", "r='x', o1='1'"):
        assert all_reject(params, section(fmt, f"[many({kwargs})]")), kwargs


def test_grammar_rule_names_that_sanitize_alike(fmt: str) -> None:
    """Tools and arguments whose names map to the same rule name still get their own rules."""
    schema_a = {"type": "object", "properties": {"a-b": {"type": "integer"}, "a_b": {"type": "string"}}}
    schema_b = {"type": "object", "properties": {"x": {"type": "boolean"}}, "required": ["x"]}
    tools = [
        {"type": "function", "function": {"name": "do_it", "parameters": schema_a}},
        {"type": "function", "function": {"name": "do-it", "parameters": schema_b}},
    ]
    params = chat(fmt, tools=tools, parallel_tool_calls=True)
    assert all_accept(params, section(fmt, "[do_it(a_b='s'), do-it(x=True)]"))
    assert all_reject(params, section(fmt, "[do_it(a_b=1)]"))
    assert all_reject(params, section(fmt, "[do-it(x=1)]"))


@pytest.mark.parametrize(
    ("schema", "good", "bad"),
    [
        ({"type": "string", "format": "email"}, "'anything goes'", "1"),  # unknown format: any string
        ({"type": "object", "properties": {}}, "{}", "{'k': 1}"),  # declared: no properties at all
        ({"type": "object"}, "{'k': [1], \"n\": None}", "[]"),
        ({"$ref": "#/properties/v"}, "1", "1 +"),  # a reference cycle that never consumes: any value
        ({"allOf": [{"type": "integer"}, {"type": "string"}]}, "'x'", "x"),  # cannot merge: any value
        ({"type": ["integer", "null"], "enum": [1, None, "s"]}, "None", "'s'"),
        ({"enum": [[1, "a"], {"k": False}]}, "{ 'k' : False }", "[1, 'b']"),
        ({"enum": ['it\'s "x"\n']}, "'it\\'s \"x\"\\n'", "'it's'"),
        ({"type": "array", "items": {"type": "integer"}, "minItems": 2}, "[1, 2, 3]", "[1]"),
        ({"type": "array", "prefixItems": [{"type": "integer"}]}, "['any', 'list']", "'no'"),
        ({"anyOf": [{"type": "string"}, {"type": "integer"}], "maxLength": 1}, "'a'", "'ab'"),
        ({"nullable": True, "type": "number", "minimum": 0}, "None", "True"),
        ({"type": "string", "minLength": 1}, "'\\''", "''"),
        ({"const": "tab\there"}, "'tab\\there'", "'tab here'"),
        ({"const": "bell\u0007"}, "'bell\\x07'", "'bell'"),
        ({"type": "array", "maxItems": 0}, "[ ]", "[1]"),
        ({"type": ["integer", "number"]}, "1.5", "'1'"),
        ({"$ref": "#/properties/v/$defs/s", "maxLength": 2, "$defs": {"s": {"type": "string"}}}, "'ab'", "'abc'"),
        ({"$ref": "#/properties/v/anyOf/0", "anyOf": [{"type": "string"}]}, "'a'", "1"),
        ({"allOf": [{"$ref": "#/properties/v"}]}, "[1]", "[1"),  # a merge cycle: any value
        ({"allOf": [True]}, "[1]", "[1"),
    ],
)
def test_grammar_schema_corner_cases(schema: dict[str, Any], good: str, bad: str) -> None:
    # (A schema that is not JSON Schema, an unknown type, a reference to nothing or outside the schema, is a
    # RequestError naming it before any grammar: tests/requests/test_checks.py.)
    params_schema = {"type": "object", "properties": {"v": schema}, "required": ["v"]}
    params = chat("lfm2.5", tools=[{"type": "function", "function": {"name": "f", "parameters": params_schema}}])
    assert all_accept(params, f"[f(v={good})]"), (good, verdicts(params, f"[f(v={good})]"))
    assert all_reject(params, f"[f(v={bad})]"), bad
