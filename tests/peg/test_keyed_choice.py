"""A choice among many alternatives with leading texts of their own (one call per declared tool) dispatches on that
text and compiles an alternative only when it is tried (``engine._keyed_choice``). It must mean exactly what an
ordered choice means: the same status, end and AST, whole and partial, and in a streaming session, and for a failed
parse the same failure position and expectations (its error message) — checked against the plain choice on random
alternatives and random text. (A parse that does not fail may have recorded fewer failed attempts on its way: the
alternatives the keyed choice ruled out by their text were never tried; nothing reads those records.)"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoparser import peg as p
from autoparser.peg import TextBuffer, engine

from .test_session import _check_session, _summary

NAMES = st.sampled_from(["get", "get_weather", "get_w", "set", "set_alarm", "ab", "a", "b", "weather"])


@st.composite
def alternatives(draw: st.DrawFn) -> list[p.Parser]:
    """8 to 14 calls ``<call=NAME>ARGS</call>``, some led by whitespace, some tagged, some bare literals, plus
    alternatives with no leading text (they are tried everywhere)."""
    result: list[p.Parser] = []
    for _ in range(draw(st.integers(8, 14))):
        name = draw(NAMES)
        shape = draw(st.integers(0, 4))
        if shape == 0:
            result.append(p.literal(f"<{name}>"))
        elif shape == 1:
            result.append(p.space() + p.literal("<call=") + p.tag("name", p.literal(name)) + p.space() + ">")
        elif shape == 2:
            body = p.until("</call>") + p.literal("</call>")
            result.append(p.atomic(p.literal(f"<call={name}>") + p.tag("args", body)))
        elif shape == 3:
            result.append(p.tag("json", p.literal(f'{{"{name}": ') + p.json() + "}"))
        else:
            result.append(p.choice(p.literal(name), p.chars("[a-z]", 1, 3)))  # no single leading text
    return result


TEXT = st.text(alphabet=st.sampled_from(list('<>/=call get_weathrsmb{}": 1\n')), max_size=30)


def texts(alts: list[p.Parser]) -> st.SearchStrategy[str]:
    names = st.lists(NAMES.map(lambda n: f"<call={n}>"), max_size=3).map("".join)
    return st.one_of(TEXT, st.tuples(names, TEXT).map("".join), st.tuples(st.just("  "), names).map("".join))


def _plain(monkeypatch: pytest.MonkeyPatch, parser: p.Parser) -> Any:
    with monkeypatch.context() as patched:
        patched.setattr(engine, "_KEYED", 10**9)
        return engine.CompiledParser(parser)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(alts=alternatives(), data=st.data())
def test_keyed_choice_means_what_the_ordered_choice_means(
    alts: list[p.Parser], data: st.DataObject, monkeypatch: pytest.MonkeyPatch
) -> None:
    parser = p.choice(*alts) + p.rest()
    keyed, plain = engine.CompiledParser(parser), _plain(monkeypatch, parser)
    text = data.draw(texts(alts))
    for partial in (False, True):
        for end in range(len(text) + 1):
            got, want = keyed.parse(text[:end], partial=partial), plain.parse(text[:end], partial=partial)
            assert _summary(got) == _summary(want), (text[:end], partial)
            if want.status is p.Status.FAIL:  # what a failed parse's error message says
                assert (got.fail_pos, sorted(got.expected)) == (want.fail_pos, sorted(want.expected)), text[:end]


@settings(max_examples=150, deadline=None)
@given(alts=alternatives(), data=st.data())
def test_keyed_choice_in_a_session_equals_a_fresh_parse(alts: list[p.Parser], data: st.DataObject) -> None:
    text = data.draw(texts(alts))
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=6))
    _check_session(p.choice(*alts) + p.rest(), text, cuts)


def test_only_the_alternative_tried_is_compiled() -> None:
    """A thousand tools cost one compiled call when the reply calls one."""
    calls = [p.space() + p.literal(f"<call=tool_{i}>") + p.tag("args", p.until("</call>")) + "</call>" for i in
             range(1000)]  # fmt: skip
    parser = engine.CompiledParser(p.zero_or_more(p.choice(*calls)) + p.end())
    before = len(parser_cache(parser))
    result = parser.parse("<call=tool_500>x</call>  <call=tool_7>y</call>")
    assert result.status is p.Status.SUCCESS
    compiled = len(parser_cache(parser)) - before
    assert 0 < compiled < 30, compiled  # two calls' nodes, not a thousand
    streamed = parser.session()
    buffer = TextBuffer()
    for piece in ("<call=to", "ol_99", "9>z</ca", "ll>"):
        buffer.append(piece)
        assert streamed.parse(buffer, partial=True).status is not p.Status.FAIL
    assert streamed.parse(buffer, partial=False).status is p.Status.SUCCESS
    assert len(parser_cache(parser)) - before < 60


def parser_cache(parser: engine.CompiledParser) -> dict[int, Any]:
    """The compiler's table of compiled nodes (reached through a keyed choice's closure)."""
    return _compiler_of(parser).cache


def _compiler_of(parser: engine.CompiledParser) -> Any:
    seen: set[int] = set()
    stack: list[Any] = [parser._match]
    while stack:
        fn = stack.pop()
        if id(fn) in seen or not callable(fn):
            continue
        seen.add(id(fn))
        for cell in getattr(fn, "__closure__", None) or ():
            value = cell.cell_contents
            if isinstance(value, engine._Compiler):
                return value
            if callable(value):
                stack.append(value)
            elif isinstance(value, (tuple, list)):
                stack.extend(v for v in value if callable(v))
    raise AssertionError("no compiler reachable")
