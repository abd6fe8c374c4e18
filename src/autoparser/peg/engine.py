"""The parsing engine: compiles a node graph into closures and runs them.

Each node becomes one closure ``match(state, pos) -> (status, end)``; attributes are captured once at
compile time, so parsing is plain function calls with no per-node dispatch. Status codes are the ints
of :class:`~.ast.Status` (FAIL 0, SUCCESS 1, NEED_MORE_INPUT 2).

Semantics (partial = "more input may still arrive"):

* ``literal`` cut off by the end of partial input needs more input and commits nothing (its end is where
  it started, so an enclosing tag never shows text that may turn out to be content); in complete mode it
  fails.
* ``sequence`` stops at the first child that does not succeed and returns its status.
* ``choice`` takes the first alternative that does not fail, so an alternative that needs more input
  wins even if a later one would succeed (streaming must not commit to a guess).
* ``repeat`` stops at the end of input without trying the child; fewer than ``min`` matches there needs
  more input (partial) or fails. A child matching empty ends the loop and satisfies ``min``.
* ``until`` stops before the first full delimiter; in partial mode a proper prefix of a delimiter running
  to the end of input is withheld (the match ends before it and needs more input), and without any
  delimiter it needs more input.
* ``end`` at the end of partial input needs more input: the input may still continue.

Partial mode never commits to a guess that more input could refute: a FAIL in partial mode means no
continuation of the text can match.
* ``atomic`` drops its AST nodes while incomplete; ``tag``/``rule`` nodes are marked partial then.
* Lookaheads never create AST nodes nor leave failure records behind.

AST nodes created by a branch that later fails are removed where the failure is recovered (choice,
repeat, lookahead), so no orphan nodes survive.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from ..errors import GrammarError
from . import json_scan
from .ast import AstNode, ParseResult, Status
from .graph import collect_rules, describe
from .nodes import (
    AnyChar,
    Atomic,
    Chars,
    Choice,
    End,
    Eps,
    Gbnf,
    Json,
    Literal,
    Negate,
    Parser,
    Peek,
    Ref,
    Repeat,
    Rule,
    Schema,
    Sequence,
    Space,
    Start,
    StringContent,
    Tag,
    Until,
)

__all__ = ["CompiledParser"]

FAIL: Final = 0
OK: Final = 1
MORE: Final = 2

_STATUS = (Status.FAIL, Status.SUCCESS, Status.NEED_MORE_INPUT)
_SPACE = re.compile(r"[ \t\n\r\x0b\x0c]*")
_SPACE_CHARS = frozenset(" \t\n\r\x0b\x0c")


class _State:
    """Mutable per-parse state shared by all matchers."""

    __slots__ = ("expected", "fail_pos", "n", "nodes", "open_until", "partial", "text")

    def __init__(self, text: str, partial: bool) -> None:
        self.text = text
        self.n = len(text)
        self.partial = partial
        self.nodes: list[AstNode] = []
        self.fail_pos = -1
        self.expected: set[str] = set()
        # The last until() that ran into the end of partial input: (its start, its delimiters). A NEED_MORE result
        # stems from exactly one such primitive, so for an until-driven NEED_MORE this is the element still open.
        self.open_until: tuple[int, tuple[str, ...]] | None = None

    def failed(self, pos: int, what: str) -> None:
        """Record a failure; only the furthest position's expectations are kept."""
        if pos > self.fail_pos:
            self.fail_pos = pos
            self.expected = {what}
        elif pos == self.fail_pos:
            self.expected.add(what)


Matcher = Callable[[_State, int], tuple[int, int]]


class _Compiler:
    """Turns nodes into matcher closures; one instance per compiled graph."""

    def __init__(self, root: Parser) -> None:
        self.rules = collect_rules(root)
        self.rule_cells: dict[str, list[Matcher]] = {}
        self.cache: dict[int, Matcher] = {}
        self._keep: list[Parser] = []  # keeps ids in `cache` valid

    def compile(self, node: Parser) -> Matcher:
        key = id(node)
        matcher = self.cache.get(key)
        if matcher is None:
            builder = _BUILDERS.get(type(node))
            if builder is None:
                raise GrammarError(f"cannot compile parser node of type {type(node).__name__}")
            matcher = builder(self, node)
            self.cache[key] = matcher
            self._keep.append(node)
        return matcher

    def rule_matcher(self, name: str) -> Matcher:
        """A matcher that calls rule ``name`` (compiled lazily so recursion works)."""
        cell = self.rule_cells.get(name)
        if cell is None:
            rule = self.rules.get(name)
            if rule is None:
                raise GrammarError(f"rule {name!r} is referenced but not defined")
            cell = self.rule_cells[name] = []
            cell.append(self._compile_rule_body(rule))
        if cell:
            return cell[0]

        def call_rule(st: _State, pos: int) -> tuple[int, int]:
            return cell[0](st, pos)

        return call_rule

    def _compile_rule_body(self, rule: Rule) -> Matcher:
        return _node_maker(self.compile(rule.body), None, rule.name)


def _node_maker(body: Matcher, tag: str | None, rule: str | None) -> Matcher:
    """Wrap ``body`` so that a non-failing match becomes one AST node holding the nodes it created."""

    def match(st: _State, pos: int) -> tuple[int, int]:
        nodes = st.nodes
        mark = len(nodes)
        status, end = body(st, pos)
        if status != FAIL:
            children = nodes[mark:]
            del nodes[mark:]
            nodes.append(AstNode(tag, rule, pos, end, st.text, children, status == MORE))
        return status, end

    return match


# --------------------------------------------------------------------------------------------------
# Builders, one per node type.


def _eps(c: _Compiler, node: Eps) -> Matcher:
    def match(st: _State, pos: int) -> tuple[int, int]:
        return OK, pos

    return match


def _start(c: _Compiler, node: Start) -> Matcher:
    def match(st: _State, pos: int) -> tuple[int, int]:
        if pos == 0:
            return OK, pos
        st.failed(pos, "start of input")
        return FAIL, pos

    return match


def _end(c: _Compiler, node: End) -> Matcher:
    def match(st: _State, pos: int) -> tuple[int, int]:
        if pos >= st.n:
            return (MORE if st.partial else OK), pos  # partial input may still continue
        st.failed(pos, "end of input")
        return FAIL, pos

    return match


def _literal(c: _Compiler, node: Literal) -> Matcher:
    text_ = node.text
    size = len(text_)
    what = describe(node)

    def match(st: _State, pos: int) -> tuple[int, int]:
        text = st.text
        if text.startswith(text_, pos):
            return OK, pos + size
        if st.partial and st.n - pos < size and text_.startswith(text[pos:]):
            return MORE, pos  # nothing committed: the cut-off text may still turn out to be something else
        st.failed(pos, what)
        return FAIL, pos

    return match


def _any(c: _Compiler, node: AnyChar) -> Matcher:
    def match(st: _State, pos: int) -> tuple[int, int]:
        if pos < st.n:
            return OK, pos + 1
        if st.partial:
            return MORE, pos
        st.failed(pos, "any character")
        return FAIL, pos

    return match


def _space(c: _Compiler, node: Space) -> Matcher:
    space_match = _SPACE.match
    space_chars = _SPACE_CHARS

    def match(st: _State, pos: int) -> tuple[int, int]:
        if pos < st.n and st.text[pos] in space_chars:
            return OK, space_match(st.text, pos).end()
        return OK, pos

    return match


def _chars(c: _Compiler, node: Chars) -> Matcher:
    upper = "" if node.max < 0 else str(node.max)
    regex_match = re.compile(f"{node.char_class.regex()}{{0,{upper}}}").match
    lower = node.min
    what = describe(node)

    def match(st: _State, pos: int) -> tuple[int, int]:
        end = regex_match(st.text, pos).end()
        if end - pos >= lower:
            return OK, end
        if st.partial and end >= st.n:
            return MORE, end
        st.failed(end, what)
        return FAIL, pos

    return match


def _sequence(c: _Compiler, node: Sequence) -> Matcher:
    items = tuple(c.compile(child) for child in node.items)

    def match(st: _State, pos: int) -> tuple[int, int]:
        start = pos
        for item in items:
            status, pos = item(st, pos)
            if status != OK:
                return (FAIL, start) if status == FAIL else (status, pos)
        return OK, pos

    return match


def _choice(c: _Compiler, node: Choice) -> Matcher:
    items = tuple(c.compile(child) for child in node.items)

    def match(st: _State, pos: int) -> tuple[int, int]:
        nodes = st.nodes
        mark = len(nodes)
        for item in items:
            status, end = item(st, pos)
            if status != FAIL:
                return status, end
            del nodes[mark:]
        return FAIL, pos

    return match


def _repeat(c: _Compiler, node: Repeat) -> Matcher:
    child = c.compile(node.child)
    lower, upper = node.min, node.max

    def match(st: _State, pos: int) -> tuple[int, int]:
        nodes = st.nodes
        n = st.n
        count = 0
        start = pos
        while count != upper:
            if pos >= n:
                break
            mark = len(nodes)
            status, end = child(st, pos)
            if status == FAIL:
                del nodes[mark:]
                break
            if status == MORE:
                return MORE, end
            if end == pos:  # empty match: repeating it changes nothing, and it satisfies any minimum
                count = max(count, lower)
                break
            pos = end
            count += 1
        if count >= lower:
            return OK, pos
        if pos >= n and st.partial:
            return MORE, pos
        return FAIL, start

    return match


def _peek(c: _Compiler, node: Peek) -> Matcher:
    child = c.compile(node.child)

    def match(st: _State, pos: int) -> tuple[int, int]:
        nodes = st.nodes
        mark = len(nodes)
        status, _ = child(st, pos)
        del nodes[mark:]
        return status, pos

    return match


def _negate(c: _Compiler, node: Negate) -> Matcher:
    child = c.compile(node.child)
    what = describe(node)

    def match(st: _State, pos: int) -> tuple[int, int]:
        nodes = st.nodes
        mark = len(nodes)
        saved = st.fail_pos, st.expected
        st.fail_pos, st.expected = -1, set()
        status, _ = child(st, pos)
        del nodes[mark:]
        st.fail_pos, st.expected = saved
        if status == FAIL:
            return OK, pos
        if status == MORE or (st.partial and pos >= st.n):
            # At the end of partial input a negation is undecided: a greedy element before it (space, a
            # repetition) may still consume more, moving the position it is tested at.
            return MORE, pos
        st.failed(pos, what)
        return FAIL, pos

    return match


def _until(c: _Compiler, node: Until) -> Matcher:
    delimiters = node.delimiters
    if not delimiters:

        def rest(st: _State, pos: int) -> tuple[int, int]:
            if st.partial:
                st.open_until = (pos, ())
                return MORE, st.n
            return OK, st.n

        return rest

    if len(delimiters) == 1:
        only = delimiters[0]

        def find(text: str, pos: int) -> int:
            return text.find(only, pos)

    else:
        pattern = re.compile("|".join(re.escape(d) for d in sorted(set(delimiters), key=len, reverse=True)))

        def find(text: str, pos: int) -> int:
            found = pattern.search(text, pos)
            return -1 if found is None else found.start()

    longest = max(map(len, delimiters))
    # proper prefixes of delimiters, by length: a partial delimiter at the end of input is one of them
    prefixes = [frozenset(d[:k] for d in delimiters if len(d) > k) for k in range(longest)]

    def match(st: _State, pos: int) -> tuple[int, int]:
        text, n = st.text, st.n
        hit = find(text, pos)
        if not st.partial:
            return OK, (n if hit < 0 else hit)
        stop = n if hit < 0 else hit
        for q in range(max(pos, n - longest + 1), min(stop, n)):
            if text[q:] in prefixes[n - q]:
                st.open_until = (pos, delimiters)
                return MORE, q  # the tail may become a delimiter: withhold it, and don't guess what follows
        if hit < 0:
            st.open_until = (pos, delimiters)
            return MORE, n
        return OK, hit

    return match


def _json(c: _Compiler, node: Json) -> Matcher:
    kind, flavor = node.kind, node.flavor
    if kind not in ("value", "object", "array", "string", "number", "bool", "null"):
        raise GrammarError(f"unknown JSON kind {kind!r}")
    if flavor not in ("json", "python"):
        raise GrammarError(f"unknown JSON flavor {flavor!r}")
    scan = json_scan.scan_json
    what = describe(node)

    def match(st: _State, pos: int) -> tuple[int, int]:
        status, end = scan(st.text, pos, kind, flavor, st.partial)
        if status == FAIL:
            st.failed(end, what)
            return FAIL, pos
        return status, end

    return match


def _string_content(c: _Compiler, node: StringContent) -> Matcher:
    quote, flavor = node.quote, node.flavor
    if quote not in ('"', "'") or flavor not in ("json", "python"):
        raise GrammarError(f"string_content(): unsupported quote {quote!r} or flavor {flavor!r}")
    scan = json_scan.scan_string_body
    what = describe(node)

    def match(st: _State, pos: int) -> tuple[int, int]:
        status, end = scan(st.text, pos, quote, flavor, st.partial)
        if status == FAIL:
            st.failed(end, what)
            return FAIL, pos
        return status, end

    return match


def _rule(c: _Compiler, node: Rule) -> Matcher:
    return c.rule_matcher(node.name)


def _ref(c: _Compiler, node: Ref) -> Matcher:
    return c.rule_matcher(node.name)


def _atomic(c: _Compiler, node: Atomic) -> Matcher:
    child = c.compile(node.child)

    def match(st: _State, pos: int) -> tuple[int, int]:
        nodes = st.nodes
        mark = len(nodes)
        status, end = child(st, pos)
        if status == MORE:
            del nodes[mark:]
        return status, end

    return match


def _tag(c: _Compiler, node: Tag) -> Matcher:
    return _node_maker(c.compile(node.child), node.name, None)


def _passthrough(c: _Compiler, node: Schema | Gbnf) -> Matcher:
    return c.compile(node.child)


_BUILDERS: dict[type, Callable[[_Compiler, Parser], Matcher]] = {  # type: ignore[dict-item]
    Eps: _eps,
    Start: _start,
    End: _end,
    Literal: _literal,
    AnyChar: _any,
    Space: _space,
    Chars: _chars,
    Sequence: _sequence,
    Choice: _choice,
    Repeat: _repeat,
    Peek: _peek,
    Negate: _negate,
    Until: _until,
    Json: _json,
    StringContent: _string_content,
    Rule: _rule,
    Ref: _ref,
    Atomic: _atomic,
    Tag: _tag,
    Schema: _passthrough,
    Gbnf: _passthrough,
}


class CompiledParser:
    """A node graph compiled for parsing. Reusable and safe to share between threads."""

    __slots__ = ("_match", "root", "rules")

    def __init__(self, root: Parser) -> None:
        compiler = _Compiler(root)
        self.root = root
        self.rules = compiler.rules
        self._match = compiler.compile(root)

    def parse(self, text: str, *, partial: bool = False, start: int = 0) -> ParseResult:
        """Parse ``text`` from ``start``. ``partial=True``: the text may still grow (streaming)."""
        if not isinstance(text, str):
            raise TypeError(f"parse() needs a str, got {type(text).__name__}")
        if not 0 <= start <= len(text):
            raise ValueError(f"start={start} is outside the input (length {len(text)})")
        st = _State(text, partial)
        try:
            status, end = self._match(st, start)
        except RecursionError:  # a recursive grammar on absurdly nested input: report, don't crash
            st.fail_pos, st.expected = start, {"input nested less deeply"}
            status, end = FAIL, start
        nodes = st.nodes if status != FAIL else []
        result = ParseResult(_STATUS[status], start, end, nodes, text, st.fail_pos, frozenset(st.expected))
        if status == MORE:
            result.open_until = st.open_until
        return result
