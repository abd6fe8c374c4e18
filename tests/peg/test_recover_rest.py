"""``recover(..., rest=...)``: the rest of a structure that broke after its commit is skipped into one node, up to a
stop string or the bracket closing what it left open, then its closers are consumed; a session (a stream) reads
the same as a complete parse."""

from __future__ import annotations

import pytest

from autoparser import peg as p
from autoparser.errors import GrammarError
from autoparser.peg import TextBuffer


def _grammar(balanced: str = "{[", quotes: str = '"') -> p.Parser:
    call = p.tag("call", p.literal("<c>") + p.commit() + p.tag("args", p.json()) + p.space() + "</c>")
    item = p.choice(
        p.recover(call, rest=("</c>", "<c>"), balanced=balanced, quotes=quotes, closers=("</c>",), rest_tag="rest"),
        p.tag("text", p.literal("<") + p.until_one_of(["<c>"])),
        p.tag("text", p.until_one_of(["<c>"])),
    )
    return p.zero_or_more(item) + p.end()


GRAMMAR = _grammar()


def _nodes(text: str, partial: bool = False) -> list[tuple[str | None, str, bool]]:
    result = GRAMMAR.parse(text, partial=partial)
    return [(n.tag, n.text, n.broken) for n in result.nodes]


def test_a_well_formed_structure_has_no_rest() -> None:
    assert _nodes('<c>{"a": 1}</c>ok') == [("call", '<c>{"a": 1}</c>', False), ("text", "ok", False)]


def test_the_rest_runs_to_the_bracket_closing_what_was_open() -> None:
    assert _nodes('<c>{"a": x}</c>ok') == [
        ("call", '<c>{"a": ', True),
        ("rest", "x}", False),
        ("text", "ok", False),  # (the closer `</c>` was consumed)
    ]


def test_the_rest_stops_at_a_stop_string() -> None:
    assert _nodes('<c>{"a": x</c>ok<c>{"b": 2}</c>') == [
        ("call", '<c>{"a": ', True),
        ("rest", "x", False),
        ("text", "ok", False),
        ("call", '<c>{"b": 2}</c>', False),
    ]


def test_brackets_inside_strings_do_not_count() -> None:
    assert _nodes('<c>{"a": x, "s": "}}"}</c>ok')[1] == ("rest", 'x, "s": "}}"}', False)


def test_without_an_end_the_rest_runs_to_the_end_of_the_input() -> None:
    assert _nodes('<c>{"a": x, y') == [("call", '<c>{"a": ', True), ("rest", "x, y", False)]
    partial = GRAMMAR.parse('<c>{"a": x, y', partial=True)
    assert partial.need_more_input and partial.nodes[-1].tag == "rest" and partial.nodes[-1].is_partial


def test_a_closing_bracket_of_an_enclosing_structure_ends_the_rest_before_it() -> None:
    grammar = p.zero_or_more(
        p.choice(
            p.literal("[")
            + p.recover(
                p.tag("call", p.literal("f(") + p.commit() + p.tag("args", p.chars("[a-z=0-9]")) + ")"),
                rest=(),
                balanced="([{",
                quotes="\"'",
                rest_tag="rest",
            )
            + "]",
            p.tag("text", p.until_one_of(["["])),
        )
    ) + p.end()
    nodes = [(n.tag, n.text) for n in grammar.parse("[f(a=1 ')' x]tail").nodes]
    assert nodes == [("call", "f(a=1"), ("rest", " ')' x"), ("text", "tail")]


@pytest.mark.parametrize(
    "text",
    [
        '<c>{"a": x}</c>ok',
        '<c>{"a": x</c>ok<c>{"b": 2}</c>',
        '<c>{"a": x, "s": "}}"}</c>ok',
        '<c>{"a": "\\"}" x}</c>ok',
        '<c>{"a": x, y',
        '<c>{"a": [1, {x}]} </c> ok',
    ],
)
def test_a_session_fed_piece_by_piece_reads_what_a_complete_parse_reads(text: str) -> None:
    compiled = GRAMMAR.compile()
    session = compiled.session()
    buffer = TextBuffer("")
    for char in text:
        buffer.append(char)
        if session.advance(buffer) is None:
            session.parse(buffer, partial=True)
    final = session.parse(buffer, partial=False)
    fresh = compiled.parse(text)
    assert [(n.tag, n.start, n.end) for n in final.nodes] == [(n.tag, n.start, n.end) for n in fresh.nodes]


def test_a_longer_stop_still_arriving_before_a_shorter_one_is_not_passed() -> None:
    """The rest of `<c>{"a": x ~~end` (stops `~~end~~` and `end`), fed one character at a time: while `~~end` may
    still become `~~end~~`, the rest must not run up to the `end` inside it (Command R+'s `Action:\n```json`, whose
    `` ``` `` is also a stop); a complete parse ends the rest where a stream does."""
    call = p.tag("call", p.literal("<c>") + p.commit() + p.tag("args", p.json()) + p.space() + "</c>")
    grammar = p.zero_or_more(
        p.choice(
            p.recover(call, rest=("~~end~~", "end"), rest_tag="rest"),
            p.tag("marker", p.literal("~~end~~")),
            p.tag("text", p.until_one_of(["<c>", "~~end~~"])),
        )
    ) + p.end()
    compiled = grammar.compile()
    for text in ('<c>{"a": x ~~end~~ok', '<c>{"a": x ~~end', '<c>{"a": x ~~en and end'):
        session, buffer = compiled.session(), TextBuffer("")
        for char in text:
            buffer.append(char)
            if session.advance(buffer) is None:
                session.parse(buffer, partial=True)
        final = session.parse(buffer, partial=False)
        fresh = compiled.parse(text)
        assert [(n.tag, n.start, n.end) for n in final.nodes] == [(n.tag, n.start, n.end) for n in fresh.nodes], text


def test_bad_arguments() -> None:
    with pytest.raises(GrammarError):
        p.recover(p.literal("a"), rest=("",))
    with pytest.raises(GrammarError):
        p.recover(p.literal("a"), rest=(), balanced="<")
