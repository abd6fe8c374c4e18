"""Resumable parsing: a :class:`ParseSession` fed a growing input gives exactly what a fresh parse gives.

A session skips settled items, restores settled iterations and continues scans where they stopped; none of that
may change a result. Random graphs (every combinator, recursion, JSON leaves) and random texts, cut into random
pieces: after every piece, the session's result (status, span, the whole AST with its settled flags) must equal
a fresh partial parse of the same prefix, and the final complete parse must equal a fresh complete parse.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from autoparser import peg as p
from autoparser.peg import AstNode, ParseResult, TextBuffer, json_scan

from .strategies import graph_cases, hermes_outputs, qwen_outputs, reasoning_outputs


def _shape(nodes: list[AstNode]) -> list[tuple[object, ...]]:
    return [(n.tag, n.rule, n.start, n.end, n.is_partial, n.settled, tuple(_shape(n.children))) for n in nodes]


def _summary(result: ParseResult) -> tuple[object, ...]:
    return result.status, result.end, tuple(_shape(result.nodes))


def _skeleton(nodes: list[AstNode]) -> list[tuple[object, ...]]:
    """The AST without end positions (what stays put while the frontier primitive keeps needing more input)."""
    return [(n.tag, n.rule, n.start, n.is_partial, n.settled, tuple(_skeleton(n.children))) for n in nodes]


def _check_session(parser: p.Parser, text: str, cuts: list[int]) -> None:
    compiled = parser.compile()
    session = compiled.session()
    buffer = TextBuffer()
    done = 0
    previous: list[tuple[object, ...]] = []
    for cut in [*sorted(set(cuts)), len(text)]:
        if cut <= done:
            continue
        buffer.append(text[done:cut])
        done = cut
        fresh = compiled.parse(text[:cut], partial=True)
        advanced = session.advance(buffer)
        if advanced is not None:
            # No parse needed: the fresh parse is the previous one with the frontier moved to `advanced`.
            assert fresh.status is p.Status.NEED_MORE_INPUT, text[:cut]
            assert fresh.frontier is not None and fresh.frontier[2] == advanced, text[:cut]
            assert _skeleton(fresh.nodes) == previous, text[:cut]
        got = session.parse(buffer, partial=True)
        previous = _skeleton(got.nodes)
        assert _summary(got) == _summary(fresh), (text[:cut], cuts)
    assert _summary(session.parse(buffer, partial=False)) == _summary(compiled.parse(text)), (text, cuts)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=graph_cases(), data=st.data())
def test_session_equals_fresh_parse_on_random_graphs(case: tuple[p.Parser, str], data: st.DataObject) -> None:
    parser, text = case
    looped = p.zero_or_more(parser) + p.end()  # the root item-loop shape, which sessions resume
    for root in (parser, looped):
        cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=6))
        _check_session(root, text, cuts)
        _check_session(root, text, list(range(len(text))))  # one character at a time


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=graph_cases(recover=True), data=st.data())
def test_session_recovers_what_a_fresh_parse_recovers(case: tuple[p.Parser, str], data: st.DataObject) -> None:
    """A structure that broke after its commit() is kept as it stood on its longest viable prefix, whatever a
    session's resumed parse recorded about where it failed: at every cut, and in the final complete parse, the
    session recovers exactly what a fresh parse recovers (a stream that recovered a call elsewhere showed
    arguments the parse does not have)."""
    parser, text = case
    looped = p.zero_or_more(parser) + p.end()
    for root in (parser, looped):
        cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=6))
        _check_session(root, text, cuts)
        _check_session(root, text, list(range(len(text))))


def _chat_parser() -> p.Parser:
    think = p.optional("<think>" + p.tag("reasoning", p.until("</think>")) + p.choice("</think>", p.end()))
    name = p.atomic(p.tag("tool-name", p.choice("get_weather", "get_time", "search")))
    json_call = (
        p.literal("{")
        + p.space()
        + '"name"'
        + p.space()
        + ":"
        + p.space()
        + '"'
        + name
        + '"'
        + p.space()
        + ","
        + p.space()
        + '"arguments"'
        + p.space()
        + ":"
        + p.space()
        + p.tag("tool-args", p.json())
        + p.space()
        + "}"
    )
    call = p.tag("tool", "<tool_call>" + p.space() + json_call + p.space() + p.choice("</tool_call>", p.end()))
    value = p.tag("arg-value", p.until("</parameter>"))
    param = p.tag("arg", "<parameter=" + p.tag("arg-name", p.until(">")) + ">" + value + "</parameter>")
    tagged = p.tag("tool", "<function=" + name + ">" + p.zero_or_more(p.space() + param) + p.space() + "</function>")
    content = p.tag("content", p.until_one_of(["<tool_call>", "<function="]))
    unparsed = p.tag("unparsed", p.choice("<tool_call>", "<function="))
    items = p.choice(call, tagged, unparsed, p.negate(p.end()) + content)
    return think + p.space() + p.zero_or_more(items) + p.end()


_CHAT = _chat_parser()


@settings(max_examples=150, deadline=None)
@given(output=hermes_outputs() | qwen_outputs() | reasoning_outputs(), data=st.data())
def test_session_equals_fresh_parse_on_chat_outputs(output: object, data: st.DataObject) -> None:
    text = output.text  # type: ignore[attr-defined]
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=12))
    _check_session(_CHAT, text, cuts)
    _check_session(_CHAT, text, list(range(len(text))))


def test_session_skips_settled_items() -> None:
    """Resumption is real: after many settled calls, a parse starts at the last one, not at the beginning."""
    compiled = _CHAT.compile()
    session = compiled.session()
    buffer = TextBuffer()
    call = '<tool_call>{"name": "search", "arguments": {"q": [1, 2, 3]}}</tool_call>\n'
    for _ in range(50):
        buffer.append(call)
        session.parse(buffer)
    assert session.settled_end >= len(buffer.text) - len(call)


def test_session_rejects_a_shrinking_input() -> None:
    session = _CHAT.compile().session()
    session.parse(TextBuffer("hello there"))
    try:
        session.parse(TextBuffer("hello"))
    except ValueError:
        pass
    else:  # pragma: no cover
        raise AssertionError("a shrinking input must be refused")


def _long_structures() -> p.Parser:
    """Committed structures that break far from where they start: a tagged body read by ``until()`` (MiniMax-M3's
    elements) and a JSON body (a JSON call), with and without a rest to skip, between text."""
    closer = p.choice("</c>", p.peek(p.choice("<c>", "<j>")))
    tagged = p.tag(
        "call", p.literal("<c>") + p.commit() + p.tag("args", p.until_one_of(["</c>", "<c>", "[e]"])) + closer
    )
    json_call = p.tag("call", p.literal("<j>") + p.commit() + p.tag("args", p.json()) + p.space() + "</j>")
    item = p.choice(
        p.recover(tagged),
        p.recover(json_call, rest=("</j>", "<j>"), balanced="{[", closers=("</j>",), rest_tag="rest"),
        p.tag("eot", p.literal("[e]")),
        p.tag("text", p.literal("<") + p.until_one_of(["<c>", "<j>", "[e]"])),  # (a marker that did not parse)
        p.tag("text", p.until_one_of(["<c>", "<j>", "[e]"])),
    )
    return p.zero_or_more(item) + p.end()


_LONG = _long_structures()
_PIECES = (
    "<c>",
    "</c>",
    "<j>",
    "</j>",
    "[e]",
    "[e",
    "</",
    "<",
    "[",
    '{"a": ',
    '"x y z"',
    ", ",
    "}",
    "]",
    "1",
    "x" * 70,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(st.sampled_from(_PIECES), min_size=1, max_size=14), data=st.data())
@example(pieces=["<c>", "x" * 70, "[e]"], data=None)  # (MiniMax-M3 cut off in `]<]min[e~[`, shrunk)
@example(pieces=["x" * 70, "<c>", "}}<", "x" * 70, "[e]", "</j>", "]}"], data=None)
def test_a_structure_broken_far_from_its_start_recovers_the_same_in_a_session(
    pieces: list[str], data: st.DataObject
) -> None:
    """The recovery of a long broken structure is a function of the text: a session, whose resumed parses record
    failures further back than a fresh parse does (or none), recovers it where a fresh parse does, at every cut."""
    text = "".join(pieces)
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=8)) if data is not None else []
    _check_session(_LONG, text, cuts)
    _check_session(_LONG, text, list(range(len(text))))


# --- string values growing across feeds ------------------------------------------------------------------------------

# String values as each flavor writes them, with what makes resuming a scan delicate: escapes (cut between their
# characters when fed piece by piece), escaped quotes, the other quote, backslashes, non-ASCII text, and a few that
# are malformed (a bad escape, no closing quote).
_STRINGS = {
    "json": [
        '"say \\"hi\\" to Zo\\u00eb \\u2014 it\'s 5\\\\6, [x] {y}\\n"',
        '"Zoë — 😀 \\ud83d\\ude00 tab\\tend\\\\"',
        '"a\\/b\\b\\f\\r"',
        '"bad \\q escape"',
        '"no closing quote',
    ],
    "pythonic": [
        "'it\\'s \"quoted\" — Zoë 😀\\n'",
        '"say \\"hi\\" \\x41\\u00e9\\N{EM DASH} back\\\\slash"',
        "'ends in a backslash\\\\'",
        "'no closing quote",
    ],
}
_STRINGS["python"] = _STRINGS["pythonic"]


def _string_parsers(flavor: str) -> list[p.Parser]:
    """A string value alone, as a pythonic argument (``f(x=...)``), and inside a list and an object."""
    value = p.tag("v", p.json(flavor))
    return [
        value + p.end(),
        p.tag("s", p.json_string(flavor)) + p.space() + p.end(),
        p.tag("call", p.literal("f(x=") + value + p.space() + ")") + p.end(),
        p.tag("list", p.json(flavor)) + p.end(),
        p.zero_or_more(p.choice(p.tag("call", p.literal("f(x=") + value + ")"), p.tag("t", p.until("f(")))) + p.end(),
    ]


@pytest.mark.parametrize(("flavor", "text"), [(f, t) for f, texts in _STRINGS.items() for t in texts])
def test_a_string_value_read_across_feeds_equals_a_fresh_parse(flavor: str, text: str) -> None:
    """A string value cut off by the end of the input resumes its scan after its last complete character or escape
    on the next feed (a long pythonic string argument was rescanned from its opening quote on every feed): at every
    cut in two, and fed one character at a time, a session reads exactly what a fresh parse of each prefix reads."""
    wrapped = {
        0: text,
        1: text,
        2: f"f(x={text})",
        3: f"[1, {text}, {{'k': {text}}}]".replace("'k'", '"k"' if flavor == "json" else "'k'"),
        4: f"text f(x={text})f(x={text})",
    }
    for parser, sample in zip(_string_parsers(flavor), wrapped.values(), strict=True):
        for cut in range(len(sample) + 1):
            _check_session(parser, sample, [cut])
        _check_session(parser, sample, list(range(len(sample))))


_STRING_BODY = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@settings(max_examples=150, deadline=None)
@given(value=_STRING_BODY, flavor=st.sampled_from(["json", "pythonic"]), data=st.data())
def test_any_string_read_across_feeds_equals_a_fresh_parse(value: str, flavor: str, data: st.DataObject) -> None:
    """Any string, written the flavor's way (``json.dumps``, Python's ``repr``), cut anywhere and fed in pieces."""
    text = json.dumps(value, ensure_ascii=data.draw(st.booleans())) if flavor == "json" else repr(value)
    sample = f"f(x={text})"
    parser = _string_parsers(flavor)[2]
    _check_session(parser, sample, data.draw(st.lists(st.integers(0, len(sample)), max_size=8)))
    _check_session(parser, sample, list(range(len(sample))))


class _CountingPattern:
    """A string-body pattern that counts the characters its matches pass over (how much scanning a stream costs)."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.scanned = 0

    def match(self, text: str, pos: int) -> re.Match[str] | None:
        found = self.pattern.match(text, pos)
        if found is not None:
            self.scanned += found.end() - pos
        return found


@pytest.mark.parametrize(("flavor", "quote"), [("pythonic", '"'), ("json", '"')])
def test_a_long_string_fed_one_character_at_a_time_is_scanned_once(
    flavor: str, quote: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Linear streaming, counted rather than timed: feeding a 4,000-character string value one character at a time
    scans each character a bounded number of times (rescanning from the opening quote would pass over about
    eight million)."""
    counting = _CountingPattern(json_scan._BODY[quote, flavor])
    monkeypatch.setitem(json_scan._BODY, (quote, flavor), counting)
    parser = p.tag("call", p.literal("f(x=") + p.tag("v", p.json(flavor)) + ")") + p.end()
    text = "f(x=" + quote + ("Zoë said \\" + quote + "hi\\" + quote + ", 5\\\\6 ") * 200 + quote + ")"
    session = parser.compile().session()
    buffer = TextBuffer()
    for char in text:
        buffer.append(char)
        if session.advance(buffer) is None:
            session.parse(buffer)
    assert session.parse(buffer, partial=False).success
    assert counting.scanned <= 3 * len(text), counting.scanned
