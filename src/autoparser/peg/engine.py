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

**Settled results and resumption.** Every primitive whose outcome depends on where the input ends (a literal
cut off, ``until`` without its delimiter, whitespace or a repetition running into the end, ``end()``...) marks
the parse as having *touched the end*. Everything the parse completed before that moment depends only on text
that a longer input keeps, so it is settled: its AST nodes are flagged ``settled`` and a longer input reproduces
it exactly. A :class:`ParseSession` (one growing input, e.g. a stream) exploits that: it resumes the root's item
loop after the last settled item, unbounded repetitions resume after their settled iterations, and ``until``,
whitespace, character classes and JSON values continue scanning where they stopped. So each feed costs what
the unsettled tail costs, not the whole input. Within any parse, scan results are cached (the next delimiter
after a position, nested JSON values), so retrying at many positions stays linear.
"""

from __future__ import annotations

import bisect
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from ..errors import GrammarError
from . import json_scan
from .ast import AstNode, ParseResult, Status, TextBuffer
from .first import first_set
from .graph import describe, rules_and_size
from .nodes import (
    COMMIT_TAG,
    AnyChar,
    Atomic,
    Chars,
    Choice,
    Commit,
    End,
    Eps,
    Gbnf,
    Json,
    JsonNotKnownInvalid,
    Literal,
    Negate,
    Parser,
    Peek,
    Recover,
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
    UntilViableJson,
)

__all__ = ["CompiledParser", "ParseSession"]

FAIL: Final = 0
OK: Final = 1
MORE: Final = 2

_STATUS = (Status.FAIL, Status.SUCCESS, Status.NEED_MORE_INPUT)
_SPACE = re.compile(r"[ \t\n\r\x0b\x0c]*")
_SPACE_CHARS = frozenset(" \t\n\r\x0b\x0c")


@dataclass(slots=True)
class _Settled:
    """The settled iterations of one unbounded repetition at one position (see :class:`ParseSession`)."""

    pos: int  # where the next iteration starts
    count: int
    nodes: list[AstNode]
    commits: int = 0  # commit() markers passed by these iterations (an enclosing recover() counts them)
    done: bool = False  # the repetition itself ended without touching the end: (OK, pos) is its final result


@dataclass(slots=True)
class _Checkpoint:
    """The root item loop after its last settled item."""

    pos: int
    count: int
    node_count: int


class _State:
    """Mutable per-parse state shared by all matchers."""

    __slots__ = (
        "commits",
        "expected",
        "fail_pos",
        "frontier",
        "json",
        "n",
        "nodes",
        "partial",
        "private_json",
        "progress",
        "repeats",
        "scans",
        "source",
        "text",
        "touched",
    )

    def __init__(
        self,
        source: TextBuffer,
        partial: bool,
        nodes: list[AstNode],
        scans: dict[Any, Any] | None = None,
        json_memo: json_scan.JsonMemo | None = None,
        repeats: dict[tuple[int, int], _Settled] | None = None,
        private_json: json_scan.JsonMemo | None = None,
    ) -> None:
        self.source = source
        self.text = source.text
        self.n = len(self.text)
        self.partial = partial
        self.nodes = nodes
        self.fail_pos = -1
        self.expected: list[str] = []  # what was expected at fail_pos (a list: cheaper than a set per failure)
        self.touched = False  # whether anything so far depended on where the input ends
        # The primitive that touched the end first, when it answered NEED_MORE: (matcher, position, end). That answer
        # propagated straight up, so while the primitive keeps answering NEED_MORE on a longer input, the parse
        # would come out the same except for the spans ending there (see ParseSession.advance).
        self.frontier: tuple[Matcher, int, int] | None = None
        self.scans = {} if scans is None else scans  # per scanning primitive: its last scanned interval; recoveries
        self.json = json_scan.JsonMemo() if json_memo is None else json_memo
        # Scans of `json(private=True)` values: kept apart, so that a guard reading `json` never depends on whether
        # such a value was tried before it (a recovery's probes, fresh parses of a prefix, know nothing of them).
        self.private_json = json_scan.JsonMemo() if private_json is None else private_json
        self.repeats = repeats  # settled iterations (sessions only)
        self.progress = repeats  # settled sequence items / ruled-out choice alternatives (sessions only)
        self.commits = 0  # commit() markers passed so far (see recover())

    def failed(self, pos: int, what: str) -> None:
        """Record a failure; only the furthest position's expectations are kept."""
        if pos > self.fail_pos:
            self.fail_pos = pos
            self.expected = [what]
        elif pos == self.fail_pos:
            self.expected.append(what)


Matcher = Callable[[_State, int], tuple[int, int]]


class _Compiler:
    """Turns nodes into matcher closures; one instance per compiled graph."""

    def __init__(self, root: Parser) -> None:
        self.rules, self.size = rules_and_size(root)
        self.rule_cells: dict[str, list[Matcher]] = {}
        self.cache: dict[int, Matcher] = {}
        self._keep: list[Parser] = []  # keeps ids in `cache` valid
        self._uids = 0
        # Held while a keyed choice compiles an alternative during a parse (other threads may parse meanwhile)
        self.lock = threading.RLock()

    def uid(self) -> int:
        """A small integer naming one scanning primitive or repetition (keys of the per-parse caches)."""
        self._uids += 1
        return self._uids

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
            nodes.append(AstNode(tag, rule, pos, end, st.source, children, status == MORE, not st.touched))
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
            st.touched = True
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
            if not st.touched:
                st.touched, st.frontier = True, (match, pos, pos)
            return MORE, pos  # nothing committed: the cut-off text may still turn out to be something else
        st.failed(pos, what)
        return FAIL, pos

    return match


def _any(c: _Compiler, node: AnyChar) -> Matcher:
    def match(st: _State, pos: int) -> tuple[int, int]:
        if pos < st.n:
            return OK, pos + 1
        st.touched = True
        if st.partial:
            return MORE, pos
        st.failed(pos, "any character")
        return FAIL, pos

    return match


def _greedy_run(uid: int, regex_match: Callable[[str, int], re.Match[str]]) -> Callable[[_State, int], int]:
    """The end of the greedy ``regex_match`` run at a position, remembering the last run: asked again anywhere
    inside it (or, for a growing input, after it ran into the old end) the answer costs O(1) / O(new text)."""

    def run(st: _State, pos: int) -> int:
        known = st.scans.get(uid)
        if known is not None and known[0] <= pos <= known[1]:
            if known[1] < known[2]:  # the run ended at a character of the text: final
                return known[1]
            end = regex_match(st.text, known[1]).end()  # it ran into the end of a shorter input: continue
        else:
            end = regex_match(st.text, pos).end()
            known = [pos, end, st.n]
            st.scans[uid] = known
        known[1], known[2] = end, st.n
        return end

    return run


def _space(c: _Compiler, node: Space) -> Matcher:
    space_chars = _SPACE_CHARS
    run = _greedy_run(c.uid(), _SPACE.match)

    def match(st: _State, pos: int) -> tuple[int, int]:
        n = st.n
        if pos < n and st.text[pos] in space_chars:
            end = run(st, pos)
            if end >= n:
                st.touched = True  # more whitespace may follow
            return OK, end
        if pos >= n:
            st.touched = True
        return OK, pos

    return match


def _chars(c: _Compiler, node: Chars) -> Matcher:
    upper = "" if node.max < 0 else str(node.max)
    regex_match = re.compile(f"{node.char_class.regex()}{{0,{upper}}}").match
    run = _greedy_run(c.uid(), regex_match) if node.max < 0 else None
    lower, bounded = node.min, node.max >= 0
    what = describe(node)

    def match(st: _State, pos: int) -> tuple[int, int]:
        end = run(st, pos) if run is not None else regex_match(st.text, pos).end()
        n = st.n
        if end >= n and not (bounded and end - pos >= node.max):
            st.touched = True  # the class may continue
        if end - pos >= lower:
            return OK, end
        if st.partial and end >= n:
            return MORE, end
        st.failed(end, what)
        return FAIL, pos

    return match


def _sequence(c: _Compiler, node: Sequence) -> Matcher:
    items = tuple(c.compile(child) for child in node.items)
    count = len(items)
    uid = c.uid()

    def match(st: _State, pos: int) -> tuple[int, int]:
        start = pos
        memo = st.progress
        if memo is None:
            for item in items:
                status, pos = item(st, pos)
                if status != OK:
                    return (FAIL, start) if status == FAIL else (status, pos)
            return OK, pos
        # In a session: skip the items a shorter input already settled (the nodes they made come back).
        nodes = st.nodes
        first = 0
        settled = memo.get((uid, start))
        if settled is not None:
            nodes.extend(settled.nodes)
            st.commits += settled.commits
            first, pos = settled.count, settled.pos
        for index in range(first, count):
            if st.touched:  # nothing more settles in this parse: plain evaluation
                status, pos = items[index](st, pos)
                if status != OK:
                    return (FAIL, start) if status == FAIL else (status, pos)
                continue
            mark, commits = len(nodes), st.commits
            status, pos = items[index](st, pos)
            if status != OK:
                return (FAIL, start) if status == FAIL else (status, pos)
            if not st.touched:
                if settled is None:
                    settled = memo[uid, start] = _Settled(pos, index + 1, nodes[mark:], st.commits - commits)
                else:
                    settled.nodes.extend(nodes[mark:])
                    settled.pos, settled.count = pos, index + 1
                    settled.commits += st.commits - commits
        return OK, pos

    return match


def _dispatch(node: Choice) -> tuple[dict[str, tuple[int, ...]], tuple[int, ...]]:
    """For each character some alternative must start with: the alternatives worth trying there (in order); and
    those to try at any other character (the ones that can match empty or start with anything)."""
    firsts = [first_set(item) for item in node.items]
    anywhere = tuple(i for i, (chars, nullable) in enumerate(firsts) if chars is None or nullable)
    table: dict[str, tuple[int, ...]] = {}
    for ch in set().union(*(chars for chars, _ in firsts if chars is not None)):
        table[ch] = tuple(i for i, (chars, nullable) in enumerate(firsts) if chars is None or nullable or ch in chars)
    return table, anywhere


_KEYED = 8  # alternatives with a leading text from which a choice dispatches on it (and compiles lazily)


def leading_text(node: Parser) -> tuple[bool, str, bool]:
    """What every match of ``node`` starts with: whether whitespace may come first, the text that follows it
    (literals in sequence, through tags and rules), and whether that is all ``node`` matches."""
    match node:
        case Literal(text=text):
            return False, text, True
        case Eps():
            return False, "", True
        case Space():
            return True, "", False
        case Tag(child=child) | Atomic(child=child) | Rule(body=child):
            return leading_text(child)
        case Sequence(items=items):
            spaced = False
            pieces: list[str] = []
            for item in items:
                if isinstance(item, Space) and not pieces and not spaced:
                    spaced = True
                    continue
                item_spaced, text, whole = leading_text(item)
                if item_spaced:
                    if pieces or spaced:
                        return spaced, "".join(pieces), False
                    spaced = True
                pieces.append(text)
                if not whole:
                    return spaced, "".join(pieces), False
            return spaced, "".join(pieces), True
        case _:
            return False, "", False


def _choice(c: _Compiler, node: Choice) -> Matcher:
    if len(node.items) >= _KEYED:
        keys = [leading_text(item)[:2] for item in node.items]
        if sum(bool(text) for _, text in keys) >= _KEYED:
            return _keyed_choice(c, node, keys)
    items = tuple(c.compile(child) for child in node.items)
    uid = c.uid()
    table, anywhere = _dispatch(node)
    every = tuple(range(len(items)))
    dispatch = len(anywhere) < len(items)  # some alternative can be ruled out by the next character alone

    def match(st: _State, pos: int) -> tuple[int, int]:
        nodes = st.nodes
        mark = len(nodes)
        order = (table.get(st.text[pos], anywhere) if pos < st.n else every) if dispatch else every
        memo = st.progress
        if memo is None:
            for index in order:
                status, end = items[index](st, pos)
                if status != FAIL:
                    return status, end
                del nodes[mark:]
            if order is not every:  # all failed: let the skipped ones record what they expected (error messages)
                for index in every:
                    if index not in order:
                        items[index](st, pos)
                        del nodes[mark:]
            return FAIL, pos
        # In a session: skip the alternatives a shorter input already ruled out.
        failed = memo.get((uid, pos))
        first = failed.count if failed is not None else 0
        for index in order:
            if index < first:
                continue
            status, end = items[index](st, pos)
            if status != FAIL:
                return status, end
            del nodes[mark:]
            if not st.touched:
                if failed is None:
                    failed = memo[uid, pos] = _Settled(pos, index + 1, [])
                else:
                    failed.count = index + 1
        return FAIL, pos

    return match


def _keyed_choice(c: _Compiler, node: Choice, keys: list[tuple[bool, str]]) -> Matcher:
    """A choice among many alternatives that start with texts of their own (one call per tool: a request may
    declare hundreds of tools, and a reply calls a few): at a position only the alternatives whose text is there
    (after whitespace, for those that start with it), or in partial mode may still come, are tried, and each is
    compiled the first time it is tried. So building the parser costs next to nothing per alternative, and trying
    them costs a lookup per key length, not an attempt per alternative. The result is the same as trying every
    alternative in order: one whose leading text is not at the position fails there. Only when all fail are the
    others run too (compiled then), so that the failure records what each expected, as a plain choice does."""
    count = len(node.items)
    slots: list[Matcher | None] = [None] * count

    def item(index: int) -> Matcher:
        matcher = slots[index]
        if matcher is None:
            with c.lock:  # another thread may be compiling it (a parser is shared between threads)
                matcher = slots[index]
                if matcher is None:
                    matcher = slots[index] = c.compile(node.items[index])
        return matcher

    # The alternatives with no leading text, by the character they may start with (as a plain choice dispatches)
    free = tuple(i for i, (_, key) in enumerate(keys) if not key)
    firsts = {i: first_set(node.items[i]) for i in free}
    free_anywhere = tuple(i for i in free if firsts[i][0] is None or firsts[i][1])
    free_table = {
        ch: tuple(i for i in free if i in free_anywhere or ch in (firsts[i][0] or ()))
        for ch in set().union(*(chars for chars, _ in firsts.values() if chars is not None))
    }
    groups = [_KeyGroup([(i, key) for i, (spaced, key) in enumerate(keys) if key and spaced == lead]) for lead in
              (False, True)]  # fmt: skip
    plain, spaced = groups
    every = tuple(range(count))
    uid = c.uid()

    def candidates(st: _State, pos: int) -> tuple[int, ...]:
        found = list(free_table.get(st.text[pos], free_anywhere) if pos < st.n else free)
        if plain.keys:
            plain.find(st, pos, found)
        if spaced.keys:
            spaced.find(st, _SPACE.match(st.text, pos).end(), found)
        found.sort()
        return tuple(found)

    def match(st: _State, pos: int) -> tuple[int, int]:
        nodes = st.nodes
        mark = len(nodes)
        order = candidates(st, pos)
        memo = st.progress
        first = 0
        failed = None
        if memo is not None:  # in a session: skip the alternatives a shorter input already ruled out
            failed = memo.get((uid, pos))
            if failed is not None:
                first = failed.count
        for index in order:
            if index < first:
                continue
            status, end = item(index)(st, pos)
            if status != FAIL:
                return status, end
            del nodes[mark:]
            if memo is not None and not st.touched:
                if failed is None:
                    failed = memo[uid, pos] = _Settled(pos, index + 1, [])
                else:
                    failed.count = index + 1
        if memo is None:  # all failed: let the others record what they expected (error messages)
            for index in every:
                if index not in order:
                    item(index)(st, pos)
                    del nodes[mark:]
        return FAIL, pos

    return match


class _KeyGroup:
    """The leading texts of a keyed choice's alternatives: which are at a position, or may still come there."""

    def __init__(self, keyed: list[tuple[int, str]]) -> None:
        self.keys = bool(keyed)
        tables: dict[int, dict[str, tuple[int, ...]]] = {}
        for index, key in keyed:
            table = tables.setdefault(len(key), {})
            table[key] = (*table.get(key, ()), index)
        self.tables = tuple(tables.items())
        self.ordered = sorted((key, index) for index, key in keyed)
        self.sorted_keys = [key for key, _ in self.ordered]
        self.longest = max((len(key) for _, key in keyed), default=0)

    def find(self, st: _State, pos: int, found: list[int]) -> None:
        """Add to ``found`` the alternatives whose key starts at ``pos``; in partial mode also those whose key the
        text, ending before the key would, may still grow into."""
        text, n = st.text, st.n
        for size, table in self.tables:
            if pos + size <= n:
                hit = table.get(text[pos : pos + size])
                if hit:
                    found.extend(hit)
        if st.partial and n - pos < self.longest:
            rest = text[pos:n]
            low = bisect.bisect_left(self.sorted_keys, rest)
            high = bisect.bisect_left(self.sorted_keys, rest + "\U0010ffff")
            found.extend(index for key, index in self.ordered[low:high] if len(key) > len(rest))


def _repeat(c: _Compiler, node: Repeat) -> Matcher:
    child = c.compile(node.child)
    lower, upper = node.min, node.max
    uid = c.uid()
    memoize = upper < 0  # only unbounded repetitions grow with the input

    def match(st: _State, pos: int) -> tuple[int, int]:
        nodes = st.nodes
        n = st.n
        count = 0
        start = pos
        memo = st.repeats if memoize else None
        settled = None
        if memo is not None:
            settled = memo.get((uid, pos))
            if settled is not None:  # resume after the iterations a shorter input already settled
                nodes.extend(settled.nodes)
                st.commits += settled.commits
                pos, count = settled.pos, settled.count
                if settled.done:
                    return OK, pos
        while count != upper:
            if pos >= n:
                st.touched = True
                break
            mark = len(nodes)
            commits = st.commits
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
            if memo is not None and not st.touched:
                if settled is None:
                    settled = memo[uid, start] = _Settled(pos, count, nodes[mark:], st.commits - commits)
                else:
                    settled.nodes.extend(nodes[mark:])
                    settled.pos, settled.count = pos, count
                    settled.commits += st.commits - commits
        if count >= lower:
            if settled is not None and not st.touched and settled.pos == pos:
                settled.done = True
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
        st.fail_pos, st.expected = -1, []
        status, _ = child(st, pos)
        del nodes[mark:]
        st.fail_pos, st.expected = saved
        if status == FAIL:
            return OK, pos
        if status == MORE or (st.partial and pos >= st.n):
            # At the end of partial input a negation is undecided: a greedy element before it (space, a
            # repetition) may still consume more, moving the position it is tested at.
            st.touched = True
            return MORE, pos
        st.failed(pos, what)
        return FAIL, pos

    return match


def _until(c: _Compiler, node: Until) -> Matcher:
    delimiters = node.delimiters
    if not delimiters:

        def rest(st: _State, pos: int) -> tuple[int, int]:
            if st.partial:
                if not st.touched:
                    st.touched, st.frontier = True, (rest, pos, st.n)
                return MORE, st.n
            st.touched = True
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
    partial_end: Callable[[str, int], re.Match[str] | None] | None = None  # compiled on first use: partial input only
    uid = c.uid()

    def first_delimiter(st: _State, pos: int) -> int:
        """The first delimiter at or after ``pos`` (-1: none), from the last answer where it still holds: no
        delimiter lies wholly within [from, old end) before the old hit (if any)."""
        text = st.text
        known = st.scans.get(uid)
        if known is None or not known[0] <= pos:
            hit = find(text, pos)
            st.scans[uid] = [pos, hit, st.n]
            return hit
        hit = known[1]
        if hit >= 0 and pos > hit:
            hit = find(text, pos)
        elif hit < 0 or (known[2] != st.n and hit + longest - 1 > known[2]):
            # Without a hit, or with one so close to the old end that a longer delimiter starting before it may
            # have been completed since: only a delimiter reaching past the old end is new.
            hit = find(text, max(pos, known[2] - longest + 1))
        else:
            return hit
        known[0], known[1], known[2] = pos, hit, st.n
        return hit

    def match(st: _State, pos: int) -> tuple[int, int]:
        nonlocal partial_end
        n = st.n
        hit = first_delimiter(st, pos)
        if not st.partial:
            if hit < 0:
                st.touched = True
                return OK, n
            return OK, hit
        text = st.text
        stop = n if hit < 0 else hit
        tail = max(pos, n - longest + 1)
        if partial_end is None:
            partial_end = _partial_end_pattern(delimiters)
        partial = partial_end(text, tail) if tail < stop else None
        if partial is not None and partial.start() < stop:
            # The tail may become a delimiter: withhold it, and don't guess what follows.
            q = partial.start()
            if not st.touched:
                st.touched, st.frontier = True, (match, pos, q)
            return MORE, q
        if hit < 0:
            if not st.touched:
                st.touched, st.frontier = True, (match, pos, n)
            return MORE, n
        return OK, hit

    return match


def _partial_end_pattern(delimiters: tuple[str, ...]) -> Callable[[str, int], re.Match[str] | None]:
    """``search(text, pos)``: the leftmost (so longest) proper prefix of a delimiter that ends the text.

    Each delimiter becomes nested optional groups (``a(?:b(?:c)?)?\\Z`` for ``abcd``), so a position is
    rejected after a character or two, in C, instead of slicing and comparing at every candidate in Python (a
    run of ``[`` before a ``[BEGIN ...]`` delimiter has a candidate at every character)."""
    branches = []
    for d in sorted(set(delimiters), key=len, reverse=True):
        if len(d) < 2:
            continue
        branch = ""
        for ch in reversed(d[1:-1]):
            branch = f"(?:{re.escape(ch)}{branch})?"
        branches.append(re.escape(d[0]) + branch)
    if not branches:
        return lambda text, pos: None
    return re.compile("(?:" + "|".join(branches) + r")\Z", re.DOTALL).search


def _json(c: _Compiler, node: Json) -> Matcher:
    kind, flavor, private, canonical = node.kind, node.flavor, node.private, node.canonical
    if kind not in ("value", "object", "array", "string", "number", "bool", "null"):
        raise GrammarError(f"unknown JSON kind {kind!r}")
    dict_like = json_scan.dict_syntax(flavor) is not None  # Gemma 4's argument dicts and their family
    if flavor not in ("json", "python", "pythonic") and not dict_like:
        raise GrammarError(f"unknown JSON flavor {flavor!r}")
    if dict_like and kind not in ("value", "object", "array"):
        raise GrammarError(f"the {flavor} flavor has no {kind} values")
    scan = json_scan.scan_json
    what = describe(node)

    def match(st: _State, pos: int) -> tuple[int, int]:
        memo = st.private_json if private else st.json
        spans = st.source.canonical_json if canonical else None
        status, end = scan(st.text, pos, kind, flavor, st.partial, memo, spans)
        if status == FAIL:
            if end >= st.n:
                st.touched = True  # unterminated (complete input)
            st.failed(end, what)
            return FAIL, pos
        if status == MORE:
            if not st.touched:
                st.touched, st.frontier = True, (match, pos, end)
        elif end >= st.n:
            st.touched = True  # a value right at the end
        return status, end

    return match


def _json_not_known_invalid(c: _Compiler, node: JsonNotKnownInvalid) -> Matcher:
    keys = ((node.kind, node.flavor), ("value", node.flavor))
    what = describe(node)

    def match(st: _State, pos: int) -> tuple[int, int]:
        results = st.json.results
        for kind, flavor in keys:
            known = results.get((pos, kind, flavor))
            if known is not None and known[0] == FAIL:
                st.failed(pos, what)
                return FAIL, pos
        return OK, pos

    return match


def _until_viable_json(c: _Compiler, node: UntilViableJson) -> Matcher:
    opener, keys = node.opener, ((node.kind, node.flavor), ("value", node.flavor))
    if node.stops:
        return _until_viable_json_or(c, node)

    def viable(st: _State, pos: int, limit: int) -> int:
        """The first opener in [pos, limit) not known to start a malformed value, or -1."""
        text, results = st.text, st.json.results
        hit = text.find(opener, pos, limit)
        while hit >= 0:
            known = results.get((hit, keys[0][0], keys[0][1])) or results.get((hit, keys[1][0], keys[1][1]))
            if known is None or known[0] != FAIL:
                return hit
            hit = text.find(opener, hit + 1, limit)  # a known-malformed value: its opener is text
        return -1

    def match(st: _State, pos: int) -> tuple[int, int]:
        hit = viable(st, pos, st.n)
        if hit >= 0:
            return OK, hit
        if st.partial:
            if not st.touched:
                st.touched, st.frontier = True, (match, pos, st.n)
            return MORE, st.n
        st.touched = True
        return OK, st.n

    return match


def _until_viable_json_or(c: _Compiler, node: UntilViableJson) -> Matcher:
    """Text up to the first viable opener or the first of the literal stops (found as :func:`_until` finds them,
    including a stop cut off by the end of partial input)."""
    opener, keys = node.opener, ((node.kind, node.flavor), ("value", node.flavor))
    until = _until(c, Until(node.stops))
    uid = c.uid()

    def match(st: _State, pos: int) -> tuple[int, int]:
        touched, frontier = st.touched, st.frontier
        status, limit = until(st, pos)
        text, results = st.text, st.json.results
        # [pos, checked) holds no viable opener (a known-malformed value stays malformed as the input grows)
        known = st.scans.get(uid)
        checked = known[1] if known is not None and known[0] == pos else pos
        hit = text.find(opener, min(checked, limit), limit)
        while hit >= 0:
            known = results.get((hit, keys[0][0], keys[0][1])) or results.get((hit, keys[1][0], keys[1][1]))
            if known is None or known[0] != FAIL:
                st.touched, st.frontier = touched, frontier  # ended at an opener: where the input ends is moot
                return OK, hit
            hit = text.find(opener, hit + 1, limit)  # a known-malformed value: its opener is text
        st.scans[uid] = [pos, limit]
        if status == MORE and not touched:
            st.frontier = (match, pos, limit)  # this primitive, not the inner scan, is what advance() re-runs
        return status, limit

    return match


def _string_content(c: _Compiler, node: StringContent) -> Matcher:
    quote, flavor = node.quote, node.flavor
    if quote not in ('"', "'") or flavor not in ("json", "python", "pythonic"):
        raise GrammarError(f"string_content(): unsupported quote {quote!r} or flavor {flavor!r}")
    scan = json_scan.resume_string_body
    what = describe(node)
    uid = c.uid()

    def match(st: _State, pos: int) -> tuple[int, int]:
        # A body scanned before from the same position (an earlier feed, or an earlier try in this parse) goes on
        # after its last complete character or escape: a long string streamed piece by piece is scanned once.
        known = st.scans.get(uid)
        resume = known[1] if known is not None and known[0] == pos else pos
        status, end, resume = scan(st.text, pos, resume, quote, flavor, st.partial)
        st.scans[uid] = (pos, resume)
        if status == MORE:
            if not st.touched:
                st.touched, st.frontier = True, (match, pos, end)
        elif end >= st.n:
            st.touched = True
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


def _commit(c: _Compiler, node: Commit) -> Matcher:
    def match(st: _State, pos: int) -> tuple[int, int]:
        st.commits += 1
        st.nodes.append(AstNode(COMMIT_TAG, None, pos, pos, st.source, [], False, not st.touched))
        return OK, pos

    return match


def _recover(c: _Compiler, node: Recover) -> Matcher:
    child = c.compile(node.child)
    uid = c.uid()
    skip = _rest_skipper(node, uid) if node.rest is not None else None
    whole_words = node.whole_words

    def match(st: _State, pos: int) -> tuple[int, int]:
        nodes = st.nodes
        if skip is not None:
            # A recovery found by a shorter partial input is final (a FAIL in partial mode is, and it broke before
            # that input's end): reuse it, so a stream waiting for the end of a broken structure's rest does not
            # recover it again on every feed, nor differently at the end (a session's failure positions may be
            # incomplete, see ParseSession).
            known = st.scans.get((uid, pos))
            if known is not None:
                end, found, commits = known
                nodes.extend(found)
                st.commits += commits
                return skip(st, match, pos, end)
        commits = st.commits
        saved = st.fail_pos, st.expected
        st.fail_pos, st.expected = -1, []
        mark = len(nodes)
        status, end = child(st, pos)
        failed_at = st.fail_pos
        if saved[0] > st.fail_pos:
            st.fail_pos, st.expected = saved
        elif saved[0] == st.fail_pos:
            st.expected = saved[1] + st.expected
        if status != FAIL or st.commits == commits:
            return status, end
        del nodes[mark:]
        recovered = _last_viable(child, st, pos, failed_at)
        if recovered is not None and whole_words:
            recovered = _before_word(child, st, pos, recovered)
        if recovered is None:
            return FAIL, pos
        end, found = recovered
        nodes.extend(found)
        if skip is None:
            return OK, end
        if st.partial:
            st.scans[uid, pos] = (end, found, st.commits - commits)
        return skip(st, match, pos, end)

    return match


_CLOSING = {"}": "{", "]": "["}


_PAIRS = {"{": "}", "[": "]", "(": ")"}


def _rest_skipper(node: Recover, uid: int) -> Callable[[_State, Matcher, int, int], tuple[int, int]]:
    """After a recovery of ``node`` ending at ``end``: skip the broken structure's rest (a node tagged
    ``node.rest_tag``), then consume its closers (see :class:`~.nodes.Recover`)."""
    stops = node.rest or ()
    tag, closers = node.rest_tag, node.closers
    openers = frozenset(node.balanced)
    closing = {_PAIRS[b] for b in node.balanced}
    quotes = frozenset(node.quotes)
    pattern = re.compile("|".join(map(re.escape, stops))) if stops else None
    partial_stop: Callable[[str, int], re.Match[str] | None] | None = None  # compiled on first use: partial input only
    longest = max(map(len, stops), default=1)

    def cut_at(text: str, pos: int) -> re.Match[str] | None:
        nonlocal partial_stop
        if partial_stop is None:
            partial_stop = _partial_end_pattern(stops)
        return partial_stop(text, pos)

    def brackets(text: str, start: int, stop: int, open_: str, quote: str) -> tuple[int, str, str, int]:
        """Scan ``text[start:stop]`` from the open brackets ``open_`` (and the open quote ``quote``, "" if none):
        where the rest ends (just after the bracket closing the first one, or before a bracket closing an
        enclosing structure; -1: not in this stretch), the brackets and quote open where the scan stopped, and
        where to resume (past ``stop`` when an escape there continues beyond it)."""
        stack = list(open_)
        i = start
        while i < stop:
            char = text[i]
            if quote:
                if char == "\\":
                    i += 2
                    continue
                if char == quote:
                    quote = ""
            elif char in quotes:
                quote = char
            elif char in openers:
                stack.append(char)
            elif char in closing and stack:
                if _PAIRS[stack[-1]] != char:
                    return i, "".join(stack), quote, i  # it closes something the structure is inside of
                stack.pop()
                if not stack:
                    return i + 1, "", quote, i + 1
            i += 1
        return -1, "".join(stack), quote, i

    def skip(st: _State, match: Matcher, pos: int, end: int) -> tuple[int, int]:
        text, n = st.text, st.n
        key = ("rest", uid, pos, end)
        known = st.scans.get(key) if st.partial else None
        if known is not None:  # what a shorter input scanned: no stop before it, nothing closed
            open_, quote, scanned = known
        else:
            open_, quote, scanned = "", "", end
            if openers:
                _, open_, quote, _ = brackets(text, pos, end, "", "")
        hit = -1
        if pattern is not None:
            found = pattern.search(text, max(end, scanned - longest + 1))
            hit = found.start() if found is not None else -1
            if hit >= 0 and st.partial:
                # A longer stop that starts before it may still be arriving (`Action:\n``` ` of `Action:\n```json`
                # before the `` ``` `` stop): where the rest ends is not known yet (as until() withholds it).
                cut = cut_at(text, max(end, n - longest + 1))
                if cut is not None and cut.start() < hit:
                    hit = -1
        limit = hit if hit >= 0 else n
        stop, resume = -1, limit
        if open_:
            stop, open_, quote, resume = brackets(text, max(scanned, end), limit, open_, quote)
        if stop < 0 and hit >= 0:
            stop = hit
        status = OK
        if stop < 0:
            stop = n
            if st.partial:
                st.scans[key] = (open_, quote, max(resume, n))
                cut = cut_at(text, max(end, n - longest + 1)) if stops else None
                if cut is not None:
                    stop = cut.start()
                status = MORE
            else:
                st.touched = True
        if status == MORE and not st.touched:  # (before the node: a rest still arriving is not settled)
            st.touched, st.frontier = True, (match, pos, stop)
        if stop > end or status == MORE:
            # (an empty rest still arriving is a node too: a stream extends it without parsing, see advance())
            st.nodes.append(AstNode(tag, None, end, stop, st.source, [], status == MORE, not st.touched))
        if status == MORE:
            return MORE, stop
        at = stop
        for closer in closers:
            after = _SPACE.match(text, at).end()
            if text.startswith(closer, after):
                at = after + len(closer)
            elif st.partial and n - after < len(closer) and closer.startswith(text[after:]):
                # The rest is complete now, the closer still arriving: no frontier (advance() may only move the end of
                # a node that stays partial), so the next piece is parsed; a closer is short.
                st.touched = True
                return MORE, at
        return OK, at

    return skip


def _last_viable(child: Matcher, st: _State, pos: int, failed_at: int) -> tuple[int, list[AstNode]] | None:
    """``child`` parsed in partial mode on the longest prefix of the input on which it is still viable (it fails on
    the whole input), if that parse committed; its nodes moved to the input's coordinates.

    Viability only shrinks as the input grows (a FAIL in partial mode means no continuation can match), so that
    longest prefix is one boundary, found by probing: the answer is a function of the text alone. ``failed_at``
    (where the failure was recorded) only says where to start looking: a session's parse skips what earlier parses
    settled and records failures further back, or none, and a recovery must come out the same in a stream, at any
    chunking, as in ``parse()`` of the whole text (a stream that recovered a call elsewhere showed other text).
    From the start point the search gallops towards the boundary (1, 2, 4... characters), then halves the last
    step: a few probes, each as long as the structure, and none past twice the distance to the boundary."""
    text = st.text
    cache: dict[int, tuple[int, list[AstNode]] | None] = {}

    def probe(k: int) -> tuple[int, list[AstNode]] | None:
        if k not in cache:
            sub = _State(TextBuffer(text[pos:k]), True, [])
            status, end = child(sub, 0)
            cache[k] = None if status == FAIL else (end, sub.nodes)
        return cache[k]

    size = st.n
    start = min(max(failed_at, pos), size)
    if probe(start) is not None:
        low, step, high = start, 1, size + 1  # viable at `low`, not at `high` (size + 1: at the whole input)
        while low + step <= size:
            if probe(low + step) is None:
                high = low + step
                break
            low, step = low + step, step * 2
        else:
            if probe(size) is not None:
                low = size  # viable on the whole input: it was cut off (complete mode)
            else:
                high = size
    else:
        low, high = pos, start  # the failure was recorded past the breaking point: search below it
        if probe(low) is None:
            return None
    while high - low > 1:
        middle = (low + high) // 2
        if probe(middle) is None:
            high = middle
        else:
            low = middle
    return _settled(st, pos, low, probe(low))


def _before_word(
    child: Matcher, st: _State, pos: int, recovered: tuple[int, list[AstNode]]
) -> tuple[int, list[AstNode]] | None:
    """``recovered`` (see :func:`_last_viable`), or — where it ends inside a word — ``child`` as it stood before
    that word, if it was viable and committed there (see :class:`~.nodes.Recover`'s ``whole_words``)."""
    text, end = st.text, recovered[0]
    if not (pos < end < st.n and _WORD.match(text, end - 1) and _WORD.match(text, end)):
        return recovered
    start = end - 1
    while start > pos and _WORD.match(text, start - 1):
        start -= 1
    sub = _State(TextBuffer(text[pos:start]), True, [])
    status, stop = child(sub, 0)
    shorter = _settled(st, pos, start, None if status == FAIL else (stop, sub.nodes))
    return recovered if shorter is None else shorter


_WORD = re.compile(r"\w")


def _settled(
    st: _State, pos: int, best_at: int, best: tuple[int, list[AstNode]] | None
) -> tuple[int, list[AstNode]] | None:
    """The partial parse ``best`` of the prefix ending at ``best_at`` as a recovery: None unless it committed; its
    nodes moved to the input's coordinates, the unfinished ones flagged broken."""
    if best is None:
        return None
    end, found_nodes = best
    if not any(n.tag == COMMIT_TAG for top in found_nodes for n in top.walk()):
        return None
    settled = not st.touched
    cut_off = best_at >= st.n and not st.partial  # the whole input was a viable prefix: it was cut off
    stack = list(found_nodes)
    while stack:
        n = stack.pop()
        n.start += pos
        n.end += pos
        n._source = st.source
        n.settled = settled
        if n.is_partial and not n.broken:  # (a node an inner recovery broke keeps how it broke)
            n.broken = True
            n.cut_off = cut_off
        stack.extend(n.children)
    return pos + end, found_nodes


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
    JsonNotKnownInvalid: _json_not_known_invalid,
    UntilViableJson: _until_viable_json,
    StringContent: _string_content,
    Rule: _rule,
    Ref: _ref,
    Atomic: _atomic,
    Tag: _tag,
    Commit: _commit,
    Recover: _recover,
    Schema: _passthrough,
    Gbnf: _passthrough,
}


class _RootLoop:
    """The root's item loop: a root sequence ``head... item* tail...`` run with a checkpoint after each settled item.

    Generated chat parsers all have this shape (``[reasoning] item* end``); a parse that resumes from a checkpoint
    skips the head and every settled item without even looking at them.
    """

    __slots__ = ("head", "item", "lower", "tail")

    def __init__(self, compiler: _Compiler, root: Parser) -> None:
        if not isinstance(root, Sequence):
            raise ValueError("no item loop")
        loops = [i for i, item in enumerate(root.items) if isinstance(item, Repeat) and item.max < 0]
        if not loops:
            raise ValueError("no item loop")
        at = loops[-1]
        loop = root.items[at]
        assert isinstance(loop, Repeat)
        self.head = tuple(compiler.compile(item) for item in root.items[:at])
        self.item = compiler.compile(loop.child)
        self.lower = loop.min
        self.tail = tuple(compiler.compile(item) for item in root.items[at + 1 :])

    def run(self, st: _State, start: int, resume: _Checkpoint | None) -> tuple[int, int, _Checkpoint | None]:
        nodes = st.nodes
        checkpoint = resume
        if resume is not None:
            del nodes[resume.node_count :]
            pos, count = resume.pos, resume.count
        else:
            nodes.clear()
            pos, count = start, 0
            for item in self.head:
                status, end = item(st, pos)
                if status != OK:
                    return (FAIL, start, None) if status == FAIL else (status, end, None)
                pos = end
            if not st.touched:
                checkpoint = _Checkpoint(pos, 0, len(nodes))
        item, n = self.item, st.n
        while True:
            if pos >= n:
                st.touched = True
                break
            mark = len(nodes)
            status, end = item(st, pos)
            if status == FAIL:
                del nodes[mark:]
                break
            if status == MORE:
                return MORE, end, checkpoint
            if end == pos:
                count = max(count, self.lower)
                break
            pos, count = end, count + 1
            if not st.touched:
                checkpoint = _Checkpoint(pos, count, len(nodes))
        if count < self.lower:
            return (MORE, pos, checkpoint) if pos >= n and st.partial else (FAIL, start, checkpoint)
        for item in self.tail:
            status, end = item(st, pos)
            if status != OK:
                return (FAIL, start, checkpoint) if status == FAIL else (status, end, checkpoint)
            pos = end
        return OK, pos, checkpoint


class CompiledParser:
    """A node graph compiled for parsing. Reusable and safe to share between threads."""

    __slots__ = ("_loop", "_match", "graph_nodes", "nodes", "root", "rules")

    def __init__(self, root: Parser) -> None:
        compiler = _Compiler(root)
        self.root = root
        self.rules = compiler.rules
        self._match = compiler.compile(root)
        try:
            self._loop: _RootLoop | None = _RootLoop(compiler, root)
        except ValueError:
            self._loop = None
        # what the memory this parser holds grows with (autoparser.cache's estimate): the nodes compiled now, and
        # those of the whole graph (behind a keyed choice, compiled when first tried)
        self.nodes = len(compiler.cache)
        self.graph_nodes = compiler.size

    def parse(self, text: str, *, partial: bool = False, start: int = 0) -> ParseResult:
        """Parse ``text`` from ``start``. ``partial=True``: the text may still grow (streaming)."""
        if not isinstance(text, str):
            raise TypeError(f"parse() needs a str, got {type(text).__name__}")
        if not 0 <= start <= len(text):
            raise ValueError(f"start={start} is outside the input (length {len(text)})")
        st = _State(TextBuffer(text), partial, [])
        status, end, checkpoint = self._run(st, start, None)
        return self._result(st, status, start, end, checkpoint)

    def session(self) -> ParseSession:
        """A :class:`ParseSession` for one input that will only grow (a stream)."""
        return ParseSession(self)

    def _run(self, st: _State, start: int, resume: _Checkpoint | None) -> tuple[int, int, _Checkpoint | None]:
        try:
            if self._loop is not None:
                return self._loop.run(st, start, resume)
            st.nodes.clear()
            status, end = self._match(st, start)
            return status, end, None
        except RecursionError:  # a recursive grammar on absurdly nested input: report, don't crash
            st.fail_pos, st.expected = start, ["input nested less deeply"]
            return FAIL, start, None

    @staticmethod
    def _result(st: _State, status: int, start: int, end: int, checkpoint: _Checkpoint | None) -> ParseResult:
        nodes = st.nodes if status != FAIL else []
        result = ParseResult(_STATUS[status], start, end, nodes, st.source, st.fail_pos, frozenset(st.expected))
        if status == MORE:
            result.frontier = st.frontier
        if status == FAIL:
            result.settled_nodes = 0
        elif not st.partial:
            result.settled_nodes = len(nodes)
        elif checkpoint is not None:
            result.settled_nodes = checkpoint.node_count
        return result


class ParseSession:
    """Parses one input that only grows (a model output arriving token by token), again and again, cheaply.

    Each :meth:`parse` resumes after what earlier parses settled (see the module docstring): the root's item loop
    restarts at its last settled item, and repetitions and scanners inside the unsettled tail continue from their
    own settled state. The input must only ever grow by appending (``TextBuffer.append``); what a shorter input
    settled is trusted, never re-checked. A result's ``nodes`` list belongs to the session and is rebuilt by the
    next parse, as is the buffer text the nodes read; failure details (``expected``) may be incomplete.
    """

    __slots__ = (
        "_checkpoint",
        "_compiled",
        "_finished",
        "_frontier",
        "_json",
        "_nodes",
        "_private_json",
        "_probe",
        "_repeats",
        "_scans",
        "_size",
    )

    def __init__(self, compiled: CompiledParser) -> None:
        self._compiled = compiled
        self._checkpoint: _Checkpoint | None = None
        self._nodes: list[AstNode] = []
        self._repeats: dict[tuple[int, int], _Settled] = {}
        self._json = json_scan.JsonMemo(states={})
        self._private_json = json_scan.JsonMemo(states={})
        self._scans: dict[Any, Any] = {}
        self._size = 0
        self._finished = False
        self._frontier: tuple[Matcher, int, int] | None = None
        self._probe: _State | None = None  # reused by advance()

    @property
    def settled_end(self) -> int:
        """Where the root item loop resumes: everything before it is settled."""
        return self._checkpoint.pos if self._checkpoint is not None else 0

    def parse(self, source: TextBuffer, *, partial: bool = True) -> ParseResult:
        """Parse the buffer's current text; ``partial=False`` once it is complete (no parse may follow that)."""
        if self._finished:
            raise RuntimeError("the session already parsed its complete input")
        if len(source.text) < self._size:
            raise ValueError("a parse session's input may only grow")
        self._size = len(source.text)
        self._finished = not partial
        self._frontier = None
        st = self._state(source, partial, self._nodes)
        before = self._checkpoint
        try:
            status, end, checkpoint = self._compiled._run(st, 0, before)
        except Exception:
            self._reset()
            raise
        if status == FAIL:  # only when a grammar cannot match at all: start afresh next time
            self._reset()
        elif partial:
            self._checkpoint = checkpoint
            self._frontier = st.frontier if status == MORE else None
            if checkpoint is not None and (before is None or checkpoint.pos > before.pos):
                # Everything the memos know about lies before the new checkpoint or in the one unsettled item
                # after it, which a later parse re-reads cheaply: drop them rather than let them grow.
                self._repeats.clear()
                self._json.clear()
                self._private_json.clear()
        return CompiledParser._result(st, status, 0, end, checkpoint)

    def advance(self, source: TextBuffer) -> int | None:
        """The input grew: if the last parse's frontier primitive still needs more input, its new end, else None.

        While that holds, :meth:`parse` would return the same AST as last time, except that the partial nodes
        ending at the frontier now end at the returned position (the NEED_MORE answer propagates straight up, and
        everything evaluated before it was settled). So a stream can extend the open element without parsing; the
        re-run primitive continues from its cached scan state, so this costs what the new text costs.
        """
        frontier = self._frontier
        if frontier is None or self._finished:
            return None
        if len(source.text) < self._size:
            raise ValueError("a parse session's input may only grow")
        self._size = len(source.text)
        matcher, pos, _ = frontier
        st = self._probe
        if st is None:
            st = self._probe = self._state(source, True, [])
        else:
            st.text, st.touched, st.frontier = source.text, False, None
            st.n = len(st.text)
        status, end = matcher(st, pos)
        st.text = ""  # hold no reference to the buffer's text: it must stay resizable in place
        if status != MORE or st.frontier is None or st.frontier[0] is not matcher:
            self._frontier = None
            return None
        self._frontier = (matcher, pos, end)
        return end

    def _state(self, source: TextBuffer, partial: bool, nodes: list[AstNode]) -> _State:
        return _State(source, partial, nodes, self._scans, self._json, self._repeats, self._private_json)

    def _reset(self) -> None:
        self._checkpoint = None
        self._nodes = []
        self._repeats.clear()
        self._json.clear()
        self._private_json.clear()
        self._scans.clear()
        self._frontier = None
