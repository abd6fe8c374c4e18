"""The MiniMax-M3 format (``minimax-m3``) on its bundled template: the template's own rendering of calls parses back
(typed and nested arguments, parallel calls, reasoning and content, with and without the ``]<]minimax[>[`` token a
detokenizer may drop), the argument converter, damaged and cut-off outputs, streaming, and the grammar."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoparser import ChatParams, ChatTemplate
from autoparser.formats.minimax_m3.arguments import arguments_to_json
from autoparser.message import ToolCall

from ..robustness.promises import (
    char_chunks,
    check_parse,
    check_stream,
    kept_text,
    marker_cut_chunkings,
    random_chunks,
)
from ..support.grammar_check import all_accept, all_reject, trigger_position, verdicts
from ..support.helpers import check_cut_call, stream_char_by_char
from ..support.ids import as_written
from ..support.sample import near_markers, sweep

TEMPLATE = "MiniMax-M3"
NS = "]<]minimax[>["
EOS = "[e~["
USER = [{"role": "user", "content": "What is the weather?"}]
# Quotes, a line break, tags and closing-tag look-alikes, a backslash, non-ASCII text, leading/trailing spaces.
HOSTILE = ' Pa "ris" <b>x</b> a<b & c\\d </city> x\nline two \u6771\u4eac \U0001f30d '

WEATHER: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "city_code": {"type": "string"},
        "days": {"type": "integer"},
        "temp": {"type": "number"},
        "metric": {"type": "boolean"},
        "note": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "filters": {
            "type": "object",
            "properties": {"zip": {"type": "string"}, "max": {"type": "integer"}, "item": {"type": "string"}},
        },
        "grid": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
        "options": {"type": "object", "additionalProperties": {}},
    },
    "required": ["city"],
}


def _tool(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": "Weather lookup", "parameters": parameters}}


TOOLS = [
    _tool("get_weather", WEATHER),
    _tool("get", {"type": "object", "properties": {"city": {"type": "string"}}}),
    _tool("ping", {"type": "object", "properties": {}}),
]

FULL_ARGS: dict[str, Any] = {
    "city": HOSTILE,
    "city_code": "42",  # a string that reads as a number: only the schema says it is a string
    "days": 3,
    "temp": -21.5,
    "metric": False,
    "unit": "celsius",
    "tags": ["rain", "", "wind and <hail>"],
    "filters": {"zip": "01234", "max": 10, "item": "umbrella"},
    "grid": [[1.5, 2], [], [1e-05]],
    "options": {"depth": {"levels": [1, False, None, 2.5, "two"], "label": "deep", "empty": ""}, "on": True},
}


def chat(**kwargs: Any) -> ChatParams:
    options: dict[str, Any] = {"tools": TOOLS, "reasoning_format": "auto", "parallel_tool_calls": True}
    options.update(kwargs)
    return ChatTemplate.load(TEMPLATE).apply(USER, **{"enable_thinking": True, "parallel_tool_calls": False, **options})


def rendered(
    calls: list[tuple[str, dict[str, Any]]], content: str = "", reasoning: str = "", **kwargs: Any
) -> tuple[ChatParams, str]:
    """The request and what the model writes for this turn, per the template: the rendered assistant turn after the
    prompt, without the end-of-turn token (a serving stack stops on it)."""
    tmpl = ChatTemplate.load(TEMPLATE)
    params = chat(**kwargs)
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning:
        message["reasoning_content"] = reasoning
    if calls:
        message["tool_calls"] = [
            {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(calls)
        ]
    full = tmpl.apply(
        [*USER, message],
        tools=TOOLS,
        add_generation_prompt=False,
        **{"enable_thinking": True, "parallel_tool_calls": False, **kwargs},
    ).prompt
    assert full.startswith(params.prompt)
    output = full[len(params.prompt) :]
    assert output.endswith(EOS + "\n")
    return params, output[: -len(EOS) - 1]


def without_none(value: Any) -> Any:
    """What the template keeps of a value: it leaves out object members set to None (list items stay, empty)."""
    if isinstance(value, dict):
        return {k: without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_none(v) for v in value]
    return value


def calls_of(params: ChatParams, text: str) -> list[tuple[str, Any]]:
    message = params.parse(text)
    assert message.warnings == (), message.warnings
    return [(c.name, json.loads(c.arguments)) for c in message.tool_calls]


# --- the template's own rendering parses back ---------------------------------------------------------------------


def test_template_uses_the_format() -> None:
    params = chat()
    assert params.format == "minimax-m3"
    assert params.warnings == ()  # the generic markers could not build a parser: the dedicated one does


def test_rendering_of_typed_nested_arguments() -> None:
    params, text = rendered([("get_weather", FULL_ARGS)])
    assert f"{NS}<city_code>42{NS}</city_code>" in text  # how the template writes values
    assert f"{NS}<item>{NS}</item>" in text  # a None list item, and an empty string, are empty elements
    assert calls_of(params, text) == [("get_weather", FULL_ARGS)]
    assert params.parse(text).content == ""


def test_none_arguments_are_not_rendered() -> None:
    params, text = rendered([("get_weather", {"city": "Oslo", "note": None, "options": {"a": None, "b": 1}})])
    assert "note" not in text
    assert calls_of(params, text) == [("get_weather", {"city": "Oslo", "options": {"b": 1}})]


@pytest.mark.parametrize("tokened", [True, False], ids=["with-token", "token-dropped"])
def test_parallel_calls_with_reasoning_and_content(tokened: bool) -> None:
    calls = [
        ("get", {"city": "Zanzibar"}),
        ("get_weather", {"city_code": "ZNZ", "city": "Zanzibar Town", "days": 2}),
        ("ping", {}),
    ]
    params, text = rendered(calls, content="Let me check.\nTwo lookups.", reasoning="First the city,\nthen the code.")
    if not tokened:
        text = text.replace(NS, "")  # skip_special_tokens
    message = params.parse(text)
    assert message.reasoning_content == "First the city,\nthen the code."
    assert message.content == "Let me check.\nTwo lookups."
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == calls
    assert message.warnings == ()


def test_token_dropped() -> None:
    """skip_special_tokens: every tag without its token. A string holding its own end tag cannot be told apart
    then, so this one does not."""
    args = dict(FULL_ARGS, city=HOSTILE.replace("</city>", "</town>"))
    params, text = rendered([("get_weather", args)])
    assert calls_of(params, text.replace(NS, "")) == [("get_weather", args)]


def test_content_and_reasoning_only() -> None:
    params, text = rendered([], content="It is sunny: 21 < 25 degrees.", reasoning="Easy.")
    assert text == "<mm:think>Easy.</mm:think>It is sunny: 21 < 25 degrees."
    message = params.parse(text)
    assert (message.content, message.reasoning_content, message.tool_calls) == (
        "It is sunny: 21 < 25 degrees.",
        "Easy.",
        (),
    )


def test_turn_without_reasoning_starts_with_a_bare_end_tag() -> None:
    params, text = rendered([], content="Hello.")
    assert text == "</mm:think>Hello."
    message = params.parse(text)
    assert (message.content, message.reasoning_content, message.warnings) == ("Hello.", "", ())
    # reasoning_format none: everything stays content, markers included
    assert chat(reasoning_format="none").parse(text).content == text


@pytest.mark.parametrize(
    ("mode", "prompt_end", "output", "reasoning", "content"),
    [
        ("enabled", "<mm:think>", "The user greets.</mm:think>Hi!", "The user greets.", "Hi!"),
        ("disabled", "</mm:think>", "Hi!", "", "Hi!"),
        ("disabled", "</mm:think>", "</mm:think>Hi!", "", "Hi!"),  # the model repeats the prompt's tag
        ("adaptive", "]~b]ai\n", "<mm:think>Hm.</mm:think>Hi!", "Hm.", "Hi!"),
        ("adaptive", "]~b]ai\n", "</mm:think>Hi!", "", "Hi!"),
    ],
)
def test_thinking_modes(mode: str, prompt_end: str, output: str, reasoning: str, content: str) -> None:
    params = chat(chat_template_kwargs={"thinking_mode": mode})
    assert params.generation_prompt.endswith(prompt_end)
    message = params.parse(output)
    assert (message.reasoning_content, message.content, message.warnings) == (reasoning, content, ())


def test_thinking_enabled_round_trip() -> None:
    enabled = {"thinking_mode": "enabled"}
    params, text = rendered([("get", {"city": "Rome"})], "Checking.", "Rome it is.", chat_template_kwargs=enabled)
    assert params.generation_prompt.endswith("<mm:think>") and not text.startswith("<mm:think>")
    message = params.parse(text)
    assert (message.reasoning_content, message.content) == ("Rome it is.", "Checking.")
    assert as_written(message) == (ToolCall("get", '{"city": "Rome"}'),)


def test_a_call_ends_a_reasoning_block_never_closed() -> None:
    params = chat(chat_template_kwargs={"thinking_mode": "enabled"})  # the prompt opened <mm:think>
    call = _section(_call("get", _el("city", "Rome")))
    message = params.parse("I need Rome. " + call)
    assert (message.reasoning_content, message.content) == ("I need Rome.", "")
    assert as_written(message) == (ToolCall("get", '{"city": "Rome"}'),)
    assert len(message.warnings) == 1  # the block was not closed
    quoted = params.parse("I could write " + call + " but no.</mm:think>Rome is sunny.")
    assert quoted.tool_calls == () and quoted.content == "Rome is sunny." and "<invoke" in quoted.reasoning_content
    for text in ("I need Rome. " + call, "I could write " + call + " but no.</mm:think>Rome is sunny."):
        assert check_stream(params, char_chunks(text)) == []


# --- the argument converter --------------------------------------------------------------------------------------


def _el(name: str, value: str, token: str = NS) -> str:
    return f"{token}<{name}>{value}{token}</{name}>"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        (_el("city", "42") + _el("days", "42"), {"city": "42", "days": 42}),
        (_el("temp", "1e-05") + _el("metric", "True"), {"temp": 1e-05, "metric": True}),
        (_el("note", "") + _el("unit", ""), {"note": None, "unit": ""}),
        (_el("note", "null"), {"note": None}),
        (_el("tags", "") + _el("filters", "") + _el("options", ""), {"tags": [], "filters": {}, "options": {}}),
        (_el("tags", '["a", "b"]'), {"tags": ["a", "b"]}),  # JSON inside the element
        (_el("tags", "a") + _el("tags", "b"), {"tags": ["a", "b"]}),  # an array as repeated elements
        (_el("filters", _el("item", "x") + _el("max", "2")), {"filters": {"item": "x", "max": 2}}),
        (_el("grid", _el("item", _el("item", "1") + _el("item", "2.5"))), {"grid": [[1, 2.5]]}),
        # untyped values: JSON literals where they are ones, children make objects, <item> children arrays
        (
            _el("options", _el("n", "007") + _el("s", "a<b>c</b>") + _el("e", "")),
            {"options": {"n": "007", "s": "a<b>c</b>", "e": ""}},  # a None member is not written at all
        ),
        (
            _el("options", _el("l", _el("item", "1") + _el("item", "") + _el("item", "x"))),
            {"options": {"l": [1, None, "x"]}},  # a None list item is an empty <item>
        ),
        (" \n" + _el("days", " 4 ") + "\n", {"days": 4}),  # layout whitespace between elements
        ('{"city": "Oslo", "days": 1}', {"city": "Oslo", "days": 1}),  # arguments written as JSON
        (_el("days", "many"), {"days": "many"}),  # not what the schema asks for: kept as text
    ],
)
def test_converter(text: str, expected: dict[str, Any]) -> None:
    converted = arguments_to_json(text, WEATHER)
    assert json.loads(converted) == expected
    assert list(json.loads(converted)) == list(expected)  # the model's order


def test_converter_without_the_token_reads_untyped_tags_as_elements() -> None:
    plain = _el("options", _el("s", "<b>x</b>", token=""), token="")
    assert json.loads(arguments_to_json(plain, WEATHER)) == {"options": {"s": {"b": "x"}}}
    tokened = _el("options", _el("s", "<b>x</b>"))  # only a tag with the token opens an element then
    assert json.loads(arguments_to_json(tokened, WEATHER)) == {"options": {"s": "<b>x</b>"}}


def test_converter_keeps_number_spelling() -> None:
    assert arguments_to_json(_el("temp", "1.50") + _el("days", "-0"), WEATHER) == '{"temp": 1.50, "days": -0}'


@pytest.mark.parametrize(
    "bad",
    [
        "junk",
        _el("filters", f"{NS}<max>1"),
        _el("city", "a") + _el("city", "b"),
        f"{NS}</city>",
        _el("filters", _el("max", "1") + "loose text"),
    ],
)
def test_converter_rejects_what_is_not_elements(bad: str) -> None:
    with pytest.raises(ValueError):
        arguments_to_json(bad, WEATHER)
    message = chat().parse(f'{NS}<tool_call>\n{NS}<invoke name="get_weather">{bad}{NS}</invoke>\n{NS}</tool_call>')
    # The call committed at its name: it stays, repaired — what reads of its elements, closed, as JSON — with a
    # warning holding what was left out.
    assert [(c.name, c.status) for c in message.tool_calls] == [("get_weather", "repaired")]
    assert isinstance(json.loads(message.tool_calls[0].arguments), dict)
    assert message.warnings
    kept = kept_text(message)
    assert all(word in kept for word in re.findall(r"[a-z]+", bad.replace(NS, " "))), message


_KEYS = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\x00\r"), max_size=12).filter(lambda s: NS not in s)


_LEAVES = st.one_of(
    _TEXT.map(lambda s: (s, {"type": "string"})),
    st.integers(-(10**15), 10**15).map(lambda n: (n, {"type": "integer"})),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda x: (x, {"type": "number"})),
    st.booleans().map(lambda b: (b, {"type": "boolean"})),
)


def _containers(inner: Any) -> Any:
    arrays = st.tuples(inner, st.integers(0, 3)).map(lambda t: ([t[0][0]] * t[1], {"type": "array", "items": t[0][1]}))
    objects = st.dictionaries(_KEYS, inner, max_size=3).map(
        lambda d: (
            {k: v for k, (v, _) in d.items()},
            {"type": "object", "properties": {k: s for k, (_, s) in d.items()}},
        )
    )
    return arrays | objects


_VALUES = st.recursive(_LEAVES, _containers, max_leaves=8)  # (value, schema) pairs


@settings(max_examples=80, deadline=None)
@given(members=st.dictionaries(_KEYS, _VALUES, max_size=4), tokened=st.booleans())
def test_round_trip_of_any_typed_arguments(members: dict[str, Any], tokened: bool) -> None:
    """Whatever the template writes for arguments valid under a schema reads back as the same JSON."""
    args = {k: v for k, (v, _) in members.items()}
    schema = {"type": "object", "properties": {k: s for k, (_, s) in members.items()}}
    tools = [_tool("set_config", schema)]
    tmpl = ChatTemplate.load(TEMPLATE)
    params = tmpl.apply(USER, tools=tools, reasoning_format="auto", enable_thinking=True, parallel_tool_calls=False)
    call = {"id": "c", "type": "function", "function": {"name": "set_config", "arguments": json.dumps(args)}}
    turn = [*USER, {"role": "assistant", "content": "", "tool_calls": [call]}]
    full = tmpl.apply(
        turn, tools=tools, add_generation_prompt=False, enable_thinking=True, parallel_tool_calls=False
    ).prompt
    text = full[len(params.prompt) :].removesuffix(EOS + "\n")
    if not tokened:
        if any("<" in v or ">" in v for v in _strings(args)):
            return  # without the token, a string holding `</key>` cannot be told from the end tag
        text = text.replace(NS, "")
    message = params.parse(text)
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [("set_config", args)]
    assert message.warnings == ()


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [*value, *(s for v in value.values() for s in _strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


# --- damaged, cut off and unusual outputs ------------------------------------------------------------------------


def _call(name: str, body: str, *, end: bool = True) -> str:
    return f'{NS}<invoke name="{name}">{body}' + (f"{NS}</invoke>\n" if end else "")


def _section(*calls: str, end: bool = True) -> str:
    return f"{NS}<tool_call>\n" + "".join(calls) + (f"{NS}</tool_call>" if end else "")


def test_cut_off_call_is_kept_as_far_as_it_got() -> None:
    text = "Checking. " + _section(_call("get_weather", _el("city", "Oslo") + f"{NS}<days>3", end=False), end=False)
    params = chat()
    final = check_cut_call(params, text, "get_weather", '{"city": "Oslo", "days": 3}')
    assert final.content == "Checking."
    # the open element closed, the value typed by the schema: 3, not "3"
    assert as_written(final) == (ToolCall("get_weather", '{"city": "Oslo", "days": 3}'),)
    assert final.tool_calls[0].status == "cut_off"
    assert final.warnings
    # the name is known, the arguments are not yet
    assert as_written(params.parse(text, partial=True)) == (ToolCall("get_weather", ""),)


@pytest.mark.parametrize("end", ["", EOS])
def test_call_cut_after_a_complete_argument_is_not_complete(end: str) -> None:
    text = _section(_call("get_weather", _el("city", "Oslo"), end=False), end=False) + end
    message = chat().parse(text)
    assert as_written(message) == (ToolCall("get_weather", '{"city": "Oslo"}'),)  # its arguments, as JSON
    assert message.tool_calls[0].status != "complete"  # (more arguments may have followed)
    assert message.content == "" and message.warnings


def test_dropped_end_tags_are_tolerated() -> None:
    text = _section(_call("get", _el("city", "Oslo"), end=False) + _call("get", _el("city", "Rome"), end=False))
    assert calls_of(chat(), text) == [("get", {"city": "Oslo"}), ("get", {"city": "Rome"})]
    bare = _call("get", _el("city", "Oslo")) + _call("ping", "") + f"{NS}</tool_call>"  # no section start tag
    assert calls_of(chat(), "Sure. " + bare) == [("get", {"city": "Oslo"}), ("ping", {})]


def test_unknown_tool_stays_content_and_later_calls_parse() -> None:
    unknown = _section(_call("get_time", _el("city", "Rome")))
    known = _section(_call("get", _el("city", "Rome")))
    message = chat().parse("Hmm. " + unknown + " Then " + known)
    assert message.content.startswith("Hmm. " + f"{NS}<tool_call>")
    assert 'get_time">' in message.content
    assert as_written(message) == (ToolCall("get", '{"city": "Rome"}'),)
    assert message.warnings


def test_name_prefix_of_a_longer_name() -> None:
    params = chat()
    head = f'{NS}<tool_call>\n{NS}<invoke name="get'
    assert params.parse(head, partial=True).tool_calls == ()
    assert as_written(params.parse(head + '_weather">', partial=True)) == (ToolCall("get_weather", ""),)


def test_end_of_turn_token_is_markup() -> None:
    params, text = rendered([("get", {"city": "Rome"})])
    message = params.parse(text + EOS + "\n")
    assert (message.content, message.warnings) == ("", ())
    assert params.parse("</mm:think>Done." + EOS).content == "Done."


def test_tools_disabled_leave_calls_in_content() -> None:
    text = _section(_call("get", _el("city", "Rome")))
    for params in (chat(tools=None), chat(tool_choice="none")):
        message = params.parse(text)
        assert (message.content, message.tool_calls) == (text, ())
        # Never silent: the call markup the parser did not read is named where it stands (docs/parsing.md).
        assert message.warnings and all("did not start a tool call" in w.message for w in message.warnings)


# --- streaming and truncation ------------------------------------------------------------------------------------


def _realistic(args: dict[str, Any]) -> str:
    calls = [("get_weather", args), ("get", {"city": "Zanzibar"}), ("ping", {})]
    return rendered(calls, content="Let me look that up.", reasoning="The user wants weather.\nThree calls.")[1]


REALISTIC = _realistic(FULL_ARGS)
# With the token dropped, a string holding its own end tag cannot be told apart (see test_token_dropped).
REALISTIC_PLAIN = _realistic(dict(FULL_ARGS, city=HOSTILE.replace("</city>", "</town>"))).replace(NS, "")
WORDS = ("Zanzibar", "umbrella", "rain", "hail", "deep", "01234", "look", "Three", "\u6771\u4eac")
MARKERS = (NS, "<tool_call>", "</tool_call>", '<invoke name="', "</invoke>", "<mm:think>", "</mm:think>", "<item>")


@pytest.mark.parametrize("tokened", [True, False], ids=["with-token", "token-dropped"])
def test_streaming_equals_parse_in_any_chunking(tokened: bool) -> None:
    text = REALISTIC if tokened else REALISTIC_PLAIN
    params = chat()
    expected = params.parse(text)
    assert len(expected.tool_calls) == 3 and expected.warnings == ()
    streamed = stream_char_by_char(params, text)  # every prefix equal to the partial parse
    assert [(c.name, c.arguments) for c in streamed.tool_calls] == [(c.name, c.arguments) for c in expected.tool_calls]
    chunkings = [char_chunks(text), *(random_chunks(text, seed) for seed in range(4))]
    chunkings += marker_cut_chunkings(text, MARKERS)
    for pieces in chunkings:
        assert check_stream(params, pieces, expected) == []


# Every cut of REALISTIC within a character of a structural marker (with the token before it: before the token,
# inside it, at the tag, inside the tag, after it), and of the others a seeded half in CI, a seeded tenth elsewhere.
# A cut costs a parse and a stream, so the sweep comes in parts that xdist spreads over its workers (each part a
# stride through the text: cuts late in a long call cost the most).
_STRUCTURE = [m for m in MARKERS if m != NS]
TRUNCATIONS = sweep(
    range(len(REALISTIC) + 1),
    10,
    keep=near_markers(REALISTIC, [*_STRUCTURE, *(NS + m for m in _STRUCTURE)], 1),
    ci_share=2,
)
TRUNCATION_PARTS = 6


@pytest.mark.parametrize("part", range(TRUNCATION_PARTS), ids=lambda part: f"part{part}")
def test_truncation_at_every_position_loses_nothing(part: int) -> None:
    params = chat()
    for end in TRUNCATIONS[part::TRUNCATION_PARTS]:
        text = REALISTIC[:end]
        message, failures = check_parse(params, text, words=WORDS, empty_arg_calls=("ping",))
        assert failures == [], (end, failures)
        assert message is not None
        assert check_stream(params, random_chunks(text, end, 9), message) == [], end
        partial = params.parse(text, partial=True)
        assert message.content.startswith(partial.content), end


# --- grammar -----------------------------------------------------------------------------------------------------


GRAMMAR_TOOLS = [
    _tool(
        "get_weather",
        {
            "type": "object",
            "properties": {
                "city": {"type": "string", "enum": ["Paris", "Tokyo"]},
                "days": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
                "filters": {"type": "object", "properties": {"max": {"type": "number"}}, "required": ["max"]},
                "metric": {"type": "boolean"},
            },
            "required": ["city", "days"],
        },
    ),
    _tool("get", {"type": "object", "properties": {"city": {"type": "string"}}}),
]


def grammar_chat(**kwargs: Any) -> ChatParams:
    options: dict[str, Any] = {"tools": GRAMMAR_TOOLS}
    options.update(kwargs)
    return ChatTemplate.load(TEMPLATE).apply(USER, **{"enable_thinking": True, "parallel_tool_calls": False, **options})


def grammar_output(calls: list[tuple[str, dict[str, Any]]], **kwargs: Any) -> str:
    """The template's rendering of a call turn (no reasoning: it starts with ``</mm:think>``)."""
    tmpl = ChatTemplate.load(TEMPLATE)
    message = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for name, args in calls
        ],
    }
    prompt = tmpl.apply(
        USER, tools=GRAMMAR_TOOLS, **{"enable_thinking": True, "parallel_tool_calls": False, **kwargs}
    ).prompt
    full = tmpl.apply(
        [*USER, message],
        tools=GRAMMAR_TOOLS,
        add_generation_prompt=False,
        **{"enable_thinking": True, "parallel_tool_calls": False, **kwargs},
    ).prompt
    return full[len(prompt) :].removesuffix(EOS + "\n")


VALID = {"city": "Paris", "days": 2, "tags": ["a b", "<c>"], "filters": {"max": 1.5}, "metric": True}


def test_grammar_shape() -> None:
    params = grammar_chat()
    assert params.grammar_lazy
    assert [t.value for t in params.grammar_triggers] == [NS + "<tool_call>"]
    assert NS in params.preserved_tokens
    assert (params.thinking_start_tag, params.thinking_end_tag) == ("<mm:think>", "</mm:think>")


@pytest.mark.parametrize(
    "args",
    [VALID, {"city": "Tokyo", "days": -3}, {"city": "Paris", "days": 0, "tags": []}, {"city": "Paris", "days": 1}],
)
def test_grammar_accepts_the_templates_rendering(args: dict[str, Any]) -> None:
    params = grammar_chat()
    output = grammar_output([("get_weather", args)])
    assert trigger_position(params, params.generation_prompt + output) > 0
    assert all_accept(params, output), verdicts(params, output)


@pytest.mark.parametrize(
    ("label", "args"),
    [
        ("missing required", {"city": "Paris"}),
        ("enum violation", {"city": "Berlin", "days": 2}),
        ("wrong type", {"city": "Paris", "days": "two"}),
        ("float for integer", {"city": "Paris", "days": 2.5}),
        ("too many items", {"city": "Paris", "days": 2, "tags": ["a", "b", "c"]}),
        ("nested required", {"city": "Paris", "days": 2, "filters": {}}),
        ("boolean spelling", {"city": "Paris", "days": 2, "metric": "yes"}),
        ("unknown argument", {"city": "Paris", "days": 2, "mood": "happy"}),
        ("not in schema order", {"days": 2, "city": "Paris"}),  # as for JSON arguments under the schema converter
    ],
)
def test_grammar_rejects_what_the_schema_forbids(label: str, args: dict[str, Any]) -> None:
    params = grammar_chat(tool_choice="required")
    output = grammar_output([("get_weather", args)])
    assert all_reject(params, output), (label, verdicts(params, output))


def test_grammar_rejects_an_unknown_tool_and_a_missing_token() -> None:
    params = grammar_chat(tool_choice="required")
    good = grammar_output([("get", {"city": "Rome"})])
    assert all_accept(params, good), verdicts(params, good)
    assert all_reject(params, good.replace('"get"', '"launch"'))
    assert all_reject(params, good.replace(f"{NS}</city>", "</city>"))


def test_grammar_parallel_calls_only_when_enabled() -> None:
    two = grammar_output([("get", {"city": "Rome"}), ("get_weather", VALID)])
    assert all_reject(grammar_chat(), two), verdicts(grammar_chat(), two)
    parallel = grammar_chat(parallel_tool_calls=True)
    assert all_accept(parallel, two), verdicts(parallel, two)


@pytest.mark.parametrize(
    ("mode", "before", "with_call", "ok"),
    [
        ("enabled", "The user asks.</mm:think>Sure.", True, True),
        ("enabled", "Sure.", True, False),  # the prompt opened <mm:think>: it must be closed before the call
        ("disabled", "Sure.", True, True),
        ("adaptive", "<mm:think>Hm.</mm:think>Sure.", True, True),
        ("adaptive", "</mm:think>", True, True),
        ("adaptive", "No call at all.", False, False),
    ],
)
def test_grammar_required_after_thinking(mode: str, before: str, with_call: bool, ok: bool) -> None:
    params = grammar_chat(tool_choice="required", chat_template_kwargs={"thinking_mode": mode})
    call = grammar_output([("get", {"city": "Rome"})]).removeprefix("</mm:think>")
    text = before + call if with_call else before
    if ok:
        assert all_accept(params, text), verdicts(params, text)
    else:
        assert all_reject(params, text), verdicts(params, text)


@pytest.mark.parametrize(
    ("output", "ok"),
    [
        ('{"a": 1}', True),
        ('</mm:think>{"a": 1}', True),
        ('<mm:think>Hm.</mm:think>{"a": 1}', True),
        ('{"a": "x"}', False),
    ],
)
def test_grammar_json_schema_answer(output: str, ok: bool) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    params = grammar_chat(tools=None, json_schema=schema, reasoning_format="auto")
    if ok:
        assert params.parse(output).content == output.rpartition(">")[2]
    assert (all_accept if ok else all_reject)(params, output), verdicts(params, output)
