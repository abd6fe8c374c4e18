"""An exact recognizer for GBNF grammars (llama.cpp dialect): ``autoparser check`` and the tests use it to see that a
generated grammar accepts what the template writes.

Why this exists: llguidance (what vLLM and the tests' :mod:`tests.support.llg` use) imports GBNF by turning
terminal-only rules into greedy lexemes. Where a lexeme could stop early, llguidance disagrees with
context-free semantics: with ``root ::= x "a"`` / ``x ::= [a]*`` it rejects ``"aaa"`` because the lexeme
``x`` eats every ``a``. llama.cpp itself has no lexer and treats the grammar as a true CFG, so a test that
wants llama.cpp's answer needs an exact recognizer; this module is that recognizer.

How it works:

1. :meth:`Grammar.parse` reads the GBNF text into a small AST (literals, character classes, ``.``, rule
   references, groups, alternatives, quantifiers), reporting syntax errors with line and column.
2. The AST is lowered to plain BNF: every literal becomes a sequence of one-code-point terminals, every
   group and quantifier gets a fresh helper nonterminal (``x*`` becomes the left-recursive
   ``N ::= ε | N x``, which Earley handles in constant work per step), and bounded repetition ``{m,n}`` is
   expanded. Productions that can never derive a string (say, through the empty class ``[]``) are pruned,
   so that every surviving Earley item can still be completed; that is what makes :func:`prefix_ok` exact.
3. An Earley recognizer runs over the Python ``str`` code points. Nullable nonterminals are computed up
   front and handled with the Aycock–Horspool rule (predicting a nullable ``B`` also steps over it), which
   is the standard fix for Earley's empty-rule bug.

The dialect is llama.cpp's, with a few deliberate differences, all of them liberal except where an
error is almost surely a bug in the grammar generator:

* a rule may continue on following lines; a new rule starts only on a line matching ``^\\s*name\\s*::=``
  (llama.cpp only allows line breaks inside parentheses and after ``|`` or ``::=``);
* ``{,n}`` is accepted (llama.cpp requires the lower bound);
* a rule defined twice, an inverted range such as ``[z-a]`` and ``{m,n}`` with ``m > n`` are errors
  (llama.cpp keeps the last definition, or silently matches nothing);
* escapes are exactly llama.cpp's: ``\\n \\r \\t \\\\ \\" \\[ \\] \\xHH \\uHHHH \\UHHHHHHHH``. Anything else,
  notably ``\\-`` and ``\\^`` inside a class, is an error, as it is in llama.cpp and llguidance.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

__all__ = ["GbnfSyntaxError", "Grammar", "accepts", "earley_items", "prefix_ok"]

MAX_CODE_POINT = 0x10FFFF


class GbnfSyntaxError(ValueError):
    """Malformed GBNF. ``line`` and ``column`` are 1-based (the column counts code points)."""

    def __init__(self, message: str, source: str, offset: int) -> None:
        self.message = message
        self.offset = offset
        self.line = source.count("\n", 0, offset) + 1
        line_start = source.rfind("\n", 0, offset) + 1
        self.column = offset - line_start + 1
        line_end = source.find("\n", offset)
        line_text = source[line_start : len(source) if line_end < 0 else line_end].rstrip("\r")
        caret = " " * (self.column - 1) + "^"
        super().__init__(f"line {self.line}, column {self.column}: {message}\n  {line_text}\n  {caret}")


# --------------------------------------------------------------------------------------------------
# AST


@dataclass(frozen=True, slots=True)
class CharSet:
    """One code point out of sorted, disjoint, non-adjacent inclusive ranges (optionally negated).

    Literals, classes and ``.`` all become ``CharSet`` terminals: ``.`` is the negated empty set, so it
    matches every code point, newline included (llama.cpp semantics).
    """

    ranges: tuple[tuple[int, int], ...]
    negated: bool = False

    @classmethod
    def of(cls, ranges: Iterable[tuple[int, int]], negated: bool = False) -> CharSet:
        merged: list[tuple[int, int]] = []
        for lo, hi in sorted(ranges):
            if merged and lo <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
            else:
                merged.append((lo, hi))
        return cls(tuple(merged), negated)

    def matches(self, ch: str) -> bool:
        code = ord(ch)
        index = bisect.bisect_right(self.ranges, (code, MAX_CODE_POINT + 1)) - 1
        inside = index >= 0 and self.ranges[index][1] >= code
        return inside != self.negated

    def is_empty(self) -> bool:
        """True iff no code point matches (so any production using it is dead)."""
        if not self.negated:
            return not self.ranges
        return self.ranges == ((0, MAX_CODE_POINT),)


@dataclass(frozen=True, slots=True)
class Ref:
    """A reference to a rule; ``offset`` locates it in the source for the undefined-rule error."""

    name: str
    offset: int


@dataclass(frozen=True, slots=True)
class Literal:
    text: str


@dataclass(frozen=True, slots=True)
class Alt:
    """Alternatives; each is a sequence (an empty one matches the empty string)."""

    options: tuple[tuple[Expr, ...], ...]


@dataclass(frozen=True, slots=True)
class Repeat:
    """``item`` repeated ``low`` to ``high`` times (``high`` None = unbounded)."""

    item: Expr
    low: int
    high: int | None


Expr = CharSet | Ref | Literal | Alt | Repeat


# --------------------------------------------------------------------------------------------------
# Parsing

_NAME = re.compile(r"[a-zA-Z0-9-]+")
_RULE_START = re.compile(r"[ \t]*[a-zA-Z0-9-]+[ \t]*::=")
_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "[": "[", "]": "]"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


class _Parser:
    """Recursive-descent GBNF parser; ``pos`` is an index into ``src``."""

    def __init__(self, src: str) -> None:
        self.src = src
        self.pos = 0

    def error(self, message: str, offset: int | None = None) -> GbnfSyntaxError:
        return GbnfSyntaxError(message, self.src, self.pos if offset is None else offset)

    def peek(self) -> str:
        return self.src[self.pos] if self.pos < len(self.src) else ""

    def skip_space(self, newlines: bool) -> None:
        """Skip blanks and ``#`` comments; with ``newlines``, also line breaks that do not start a rule.

        Stopping before a line that starts a new rule is what lets a rule body span several lines
        without needing a terminator.
        """
        src, n = self.src, len(self.src)
        while self.pos < n:
            ch = src[self.pos]
            if ch in " \t":
                self.pos += 1
            elif ch == "#":
                end = src.find("\n", self.pos)
                self.pos = n if end < 0 else end
            elif ch in "\r\n" and newlines:
                if _RULE_START.match(src, self.pos + 1):
                    return
                self.pos += 1
            else:
                return

    def parse_grammar(self) -> dict[str, Alt]:
        rules: dict[str, Alt] = {}
        offsets: dict[str, int] = {}
        n = len(self.src)
        while True:
            # Between rules every line break is skippable (the rule-start check only matters in bodies).
            while True:
                self.skip_space(newlines=False)
                if self.peek() in ("\r", "\n"):
                    self.pos += 1
                else:
                    break
            if self.pos >= n:
                return rules
            start = self.pos
            name = self.parse_name()
            self.skip_space(newlines=False)
            if not self.src.startswith("::=", self.pos):
                raise self.error("expected '::='")
            self.pos += 3
            if name in rules:
                raise self.error(f"rule {name!r} is already defined at {self._where(offsets[name])}", start)
            self.skip_space(newlines=True)
            rules[name] = self.parse_alternatives()
            offsets[name] = start
            if self.pos < n and self.peek() not in ("\r", "\n"):
                raise self.error(f"unexpected {self.peek()!r} in the body of rule {name!r}")

    def parse_name(self) -> str:
        match = _NAME.match(self.src, self.pos)
        if match is None:
            raise self.error("expected a rule name ([a-zA-Z0-9-]+)")
        self.pos = match.end()
        return match.group()

    def parse_alternatives(self) -> Alt:
        options = [self.parse_sequence()]
        while self.peek() == "|":
            self.pos += 1
            self.skip_space(newlines=True)
            options.append(self.parse_sequence())
        return Alt(tuple(options))

    def parse_sequence(self) -> tuple[Expr, ...]:
        items: list[Expr] = []
        while True:
            ch = self.peek()
            if ch == '"':
                items.append(Literal(self.parse_literal()))
            elif ch == "[":
                items.append(self.parse_class())
            elif ch == ".":
                self.pos += 1
                items.append(CharSet((), negated=True))
            elif ch == "(":
                open_at = self.pos
                self.pos += 1
                self.skip_space(newlines=True)
                group = self.parse_alternatives()
                if self.peek() != ")":
                    raise self.error(f"expected ')' to close the '(' at {self._where(open_at)}")
                self.pos += 1
                items.append(group)
            elif ch and _NAME.match(ch):
                offset = self.pos
                items.append(Ref(self.parse_name(), offset))
            elif ch in ("*", "+", "?", "{"):
                if not items:
                    raise self.error(f"{ch!r} has nothing to repeat")
                items[-1] = Repeat(items[-1], *self.parse_quantifier())
            else:
                return tuple(items)
            self.skip_space(newlines=True)

    def _where(self, offset: int) -> str:
        line = self.src.count("\n", 0, offset) + 1
        return f"line {line}, column {offset - (self.src.rfind(chr(10), 0, offset) + 1) + 1}"

    def parse_quantifier(self) -> tuple[int, int | None]:
        ch = self.src[self.pos]
        self.pos += 1
        if ch != "{":
            return {"*": (0, None), "+": (1, None), "?": (0, 1)}[ch]
        start = self.pos - 1
        self.skip_space(newlines=True)
        low = self.parse_int()
        high: int | None = low
        self.skip_space(newlines=True)
        if self.peek() == ",":
            self.pos += 1
            self.skip_space(newlines=True)
            high = self.parse_int()
            self.skip_space(newlines=True)
        elif low is None:
            raise self.error("expected a repetition count")
        if self.peek() != "}":
            raise self.error("expected '}'")
        self.pos += 1
        if low is None and high is None:
            raise self.error("'{,}' needs at least one bound", start)
        low = low or 0
        if high is not None and high < low:
            raise self.error(f"repetition {{{low},{high}}} has max < min", start)
        return low, high

    def parse_int(self) -> int | None:
        start = self.pos
        while self.peek().isascii() and self.peek().isdigit():
            self.pos += 1
        return int(self.src[start : self.pos]) if self.pos > start else None

    def parse_char(self, terminator: str) -> str:
        """One (possibly escaped) code point of a literal or class body."""
        if self.pos >= len(self.src):
            raise self.error(f"missing closing {terminator!r}")
        ch = self.src[self.pos]
        if ch != "\\":
            self.pos += 1
            return ch
        escape_at = self.pos
        code = self.src[self.pos + 1 : self.pos + 2]
        if code in _SIMPLE_ESCAPES:
            self.pos += 2
            return _SIMPLE_ESCAPES[code]
        width = _HEX_ESCAPES.get(code)
        if width is None:
            raise self.error(f"unknown escape '\\{code}'", escape_at)
        digits = self.src[self.pos + 2 : self.pos + 2 + width]
        if len(digits) != width or not set(digits) <= _HEX_DIGITS:
            raise self.error(f"'\\{code}' needs exactly {width} hex digits", escape_at)
        value = int(digits, 16)
        if value > MAX_CODE_POINT:
            raise self.error(f"code point U+{value:X} is out of range", escape_at)
        self.pos += 2 + width
        return chr(value)

    def parse_literal(self) -> str:
        start = self.pos
        self.pos += 1
        chars: list[str] = []
        while self.peek() != '"':
            if self.pos >= len(self.src):
                raise self.error("unterminated string literal", start)
            chars.append(self.parse_char('"'))
        self.pos += 1
        return "".join(chars)

    def parse_class(self) -> CharSet:
        start = self.pos
        self.pos += 1
        negated = self.peek() == "^"
        if negated:
            self.pos += 1
        ranges: list[tuple[int, int]] = []
        while self.peek() != "]":
            if self.pos >= len(self.src):
                raise self.error("unterminated character class", start)
            range_at = self.pos
            lo = ord(self.parse_char("]"))
            hi = lo
            # As in llama.cpp, '-' makes a range unless it is the last character of the class.
            if self.peek() == "-" and self.src[self.pos + 1 : self.pos + 2] not in ("]", ""):
                self.pos += 1
                hi = ord(self.parse_char("]"))
                if hi < lo:
                    raise self.error(f"inverted range U+{lo:04X}-U+{hi:04X}", range_at)
            ranges.append((lo, hi))
        self.pos += 1
        return CharSet.of(ranges, negated)


# --------------------------------------------------------------------------------------------------
# Lowering to BNF

# A symbol in a lowered production: a nonterminal index (>= 0) or ``-1 - terminal_index``.
Symbol = int
Production = tuple[Symbol, ...]


class _Lowering:
    """Turns the AST into numbered nonterminals, terminals and productions (plain BNF)."""

    def __init__(self, rules: dict[str, Alt], source: str) -> None:
        self.rules = rules
        self.source = source
        self.names: list[str] = list(rules)
        self.index = {name: i for i, name in enumerate(self.names)}
        self.productions: list[list[Production]] = [[] for _ in self.names]
        self.terminals: list[CharSet] = []
        self.terminal_index: dict[CharSet, int] = {}
        self.helpers: dict[tuple[object, ...], int] = {}

    def run(self) -> None:
        for name, body in self.rules.items():
            nt = self.index[name]
            for option in body.options:
                self.add(nt, self.sequence(option))

    def new_nonterminal(self, label: str) -> int:
        self.names.append(label)
        self.productions.append([])
        return len(self.names) - 1

    def add(self, nt: int, production: Production) -> None:
        if production not in self.productions[nt]:
            self.productions[nt].append(production)

    def terminal(self, charset: CharSet) -> Symbol:
        index = self.terminal_index.get(charset)
        if index is None:
            index = self.terminal_index[charset] = len(self.terminals)
            self.terminals.append(charset)
        return -1 - index

    def sequence(self, items: Sequence[Expr]) -> Production:
        out: list[Symbol] = []
        for item in items:
            out.extend(self.expr(item))
        return tuple(out)

    def expr(self, node: Expr) -> Production:
        """The symbols that ``node`` contributes, inline, to the enclosing production."""
        match node:
            case CharSet():
                return (self.terminal(node),)
            case Literal(text):
                return tuple(self.terminal(CharSet(((ord(c), ord(c)),))) for c in text)
            case Ref(name, offset):
                if name not in self.index:
                    raise GbnfSyntaxError(f"undefined rule {name!r}", self.source, offset)
                return (self.index[name],)
            case Alt(options):
                if len(options) == 1:
                    return self.sequence(options[0])
                return (self.group(options),)
            case Repeat(item, low, high):
                return self.repeat(self.expr(item), low, high)
        raise TypeError(node)  # pragma: no cover - exhaustive match

    def group(self, options: tuple[tuple[Expr, ...], ...]) -> Symbol:
        nt = self.new_nonterminal("(group)")
        for option in options:
            self.add(nt, self.sequence(option))
        return nt

    def single(self, symbols: Production) -> Symbol:
        """One symbol standing for ``symbols`` (a helper nonterminal unless it already is one)."""
        if len(symbols) == 1:
            return symbols[0]
        return self.helper(("seq", symbols), lambda nt: [symbols])

    def helper(self, key: tuple[object, ...], productions: Callable[[int], list[Production]]) -> Symbol:
        """A memoized helper nonterminal, so ``x*`` used twice lowers to one nonterminal."""
        nt = self.helpers.get(key)
        if nt is None:
            nt = self.helpers[key] = self.new_nonterminal(f"({key[0]})")
            for production in productions(nt):
                self.add(nt, production)
        return nt

    def repeat(self, symbols: Production, low: int, high: int | None) -> Production:
        if high == 0:
            return ()
        x = self.single(symbols)
        if high is None:
            # Left recursion: constant Earley work per iteration, with no need for Leo's memo.
            star = self.helper(("star", x), lambda nt: [(), (nt, x)])
            return (x,) * low + (star,)
        # {low,high}: low copies, then a chain  opt_k ::= ε | x opt_{k-1}  of high - low optional ones.
        tail: Production = ()
        for k in range(1, high - low + 1):
            rest = tail
            tail = (self.helper(("opt", x, k), lambda nt, rest=rest: [(), (x, *rest)]),)
        return (x,) * low + tail


@dataclass(frozen=True, slots=True)
class _Tables:
    """The lowered grammar as flat arrays indexed by LR(0) item, for a tight Earley loop.

    An LR(0) item is a production with a dot; items of one production are numbered consecutively, so
    advancing the dot is ``item + 1``. ``next_symbol[item]`` is the symbol after the dot, or None when
    the dot is at the end, in which case ``lhs[item]`` is the nonterminal that was recognized.
    """

    names: tuple[str, ...]
    next_symbol: tuple[Symbol | None, ...]
    lhs: tuple[int, ...]
    predict: tuple[tuple[int, ...], ...]  # nonterminal -> first LR(0) item of each of its productions
    nullable: tuple[bool, ...]
    productive: tuple[bool, ...]
    terminals: tuple[CharSet, ...]


def _nullable(productions: list[list[Production]]) -> list[bool]:
    """Which nonterminals derive the empty string (needed by the Aycock–Horspool prediction rule)."""
    nullable = [False] * len(productions)
    changed = True
    while changed:
        changed = False
        for nt, prods in enumerate(productions):
            if not nullable[nt] and any(all(s >= 0 and nullable[s] for s in p) for p in prods):
                nullable[nt] = changed = True
    return nullable


def _productive(productions: list[list[Production]], live_terminal: list[bool]) -> list[bool]:
    """Which nonterminals derive at least one string; the others are dead ends to prune."""
    productive = [False] * len(productions)

    def ok(symbol: Symbol) -> bool:
        return productive[symbol] if symbol >= 0 else live_terminal[-1 - symbol]

    changed = True
    while changed:
        changed = False
        for nt, prods in enumerate(productions):
            if not productive[nt] and any(all(ok(s) for s in p) for p in prods):
                productive[nt] = changed = True
    return productive


def _tables(lowering: _Lowering) -> _Tables:
    live_terminal = [not t.is_empty() for t in lowering.terminals]
    productive = _productive(lowering.productions, live_terminal)

    def live(symbol: Symbol) -> bool:
        return productive[symbol] if symbol >= 0 else live_terminal[-1 - symbol]

    # Drop productions that can never derive a string, so every Earley item can be completed.
    productions = [[p for p in prods if all(live(s) for s in p)] for prods in lowering.productions]
    next_symbol: list[Symbol | None] = []
    lhs: list[int] = []
    predict: list[tuple[int, ...]] = []
    for nt, prods in enumerate(productions):
        starts = []
        for production in prods:
            starts.append(len(next_symbol))
            next_symbol.extend(production)
            next_symbol.append(None)
            lhs.extend([nt] * (len(production) + 1))
        predict.append(tuple(starts))
    return _Tables(
        names=tuple(lowering.names),
        next_symbol=tuple(next_symbol),
        lhs=tuple(lhs),
        predict=tuple(predict),
        nullable=tuple(_nullable(productions)),
        productive=tuple(productive),
        terminals=tuple(lowering.terminals),
    )


# --------------------------------------------------------------------------------------------------
# Public API


class Grammar:
    """A parsed and lowered GBNF grammar. Build it with :meth:`parse`; it is immutable afterwards."""

    def __init__(self, source: str, rules: dict[str, Alt], tables: _Tables) -> None:
        self.source = source
        self.rules = rules
        self._tables = tables

    @classmethod
    def parse(cls, text: str) -> Grammar:
        """Parse and lower ``text``; raises :class:`GbnfSyntaxError` (with line and column) if malformed."""
        rules = _Parser(text).parse_grammar()
        lowering = _Lowering(rules, text)
        lowering.run()
        return cls(text, rules, _tables(lowering))

    def __repr__(self) -> str:
        names = list(self.rules)
        shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
        return f"Grammar({len(names)} rules: {shown})"

    def accepts(self, text: str, root: str = "root") -> bool:
        """True iff ``text`` as a whole derives from ``root``."""
        return self._run(text, root, complete=True)

    def prefix_ok(self, text: str, root: str = "root") -> bool:
        """True iff ``text`` is a prefix of some string that ``root`` derives (possibly ``text`` itself)."""
        return self._run(text, root, complete=False)

    def _run(self, text: str, root: str, complete: bool) -> bool:
        return _earley(self._tables, self._start(root), text, complete)

    def _start(self, root: str) -> int:
        # Rules are numbered first, in definition order, so a rule's index is its position in ``rules``.
        try:
            return self._tables.names.index(root, 0, len(self.rules))
        except ValueError:
            raise ValueError(f"the grammar has no rule named {root!r}") from None


def _earley(
    tables: _Tables, start: int, text: str, complete: bool, leo: bool = True, set_sizes: list[int] | None = None
) -> bool:
    """Earley recognition of ``text`` from nonterminal ``start``.

    Items are ``(lr0_item, origin)`` pairs. Per Earley set we keep ``waiting``: nonterminal -> items in
    this set whose dot is before it, stored already advanced, so a completion is a dict lookup plus a
    list walk. Scanning items are grouped by terminal so each terminal is tested once per character.

    ``leo`` enables Leo's optimization, which makes right recursion (``list ::= item list | item``)
    linear instead of quadratic: when completing ``B`` from set ``j`` can only ever complete one item,
    which in turn is complete, the chain of such completions is followed once and memoized per
    ``(j, B)``, and only its topmost item is added. Chains only step to strictly earlier, hence final,
    sets and never into set 0, so the accepting item ``(start, origin 0)`` is always added explicitly.

    ``set_sizes``, when given, receives the number of items of each Earley set built: the work done, counted
    without a clock (:func:`earley_items`).
    """
    if not tables.productive[start]:  # its productions were pruned: nothing derives from it
        return False
    next_symbol, lhs, predict, nullable = tables.next_symbol, tables.lhs, tables.predict, tables.nullable
    terminals = tables.terminals
    match_cache: list[dict[str, bool]] = [{} for _ in terminals]
    waiting_sets: list[dict[int, list[tuple[int, int]]]] = []
    leo_memo: dict[tuple[int, int], tuple[int, int] | None] = {}

    def leo_top(origin: int, nt: int) -> tuple[int, int] | None:
        """Topmost item of the deterministic completion chain of ``nt`` from set ``origin``, if any."""
        keys: list[tuple[int, int]] = []
        links: list[tuple[int, int]] = []
        key = (origin, nt)
        top: tuple[int, int] | None = None
        while True:
            if key in leo_memo:
                top = leo_memo[key]
                break
            waiters = waiting_sets[key[0]].get(key[1], ())
            if len(waiters) != 1 or next_symbol[waiters[0][0]] is not None:
                leo_memo[key] = None
                break
            link = waiters[0]
            keys.append(key)
            links.append(link)
            if not 0 < link[1] < key[0]:
                break
            key = (link[1], lhs[link[0]])
        for key, link in zip(reversed(keys), reversed(links), strict=True):
            top = top or link
            leo_memo[key] = top
        return top

    kernel: list[tuple[int, int]] = [(item, 0) for item in predict[start]]
    n = len(text)
    i = 0
    while True:
        seen = set(kernel)
        agenda = list(seen)
        waiting: dict[int, list[tuple[int, int]]] = {}
        waiting_sets.append(waiting)
        scans: dict[int, list[tuple[int, int]]] = {}
        accepted = False
        while agenda:
            item, origin = agenda.pop()
            symbol = next_symbol[item]
            if symbol is None:  # complete: advance everything in the origin set that waited for lhs
                nt = lhs[item]
                if nt == start and origin == 0:
                    accepted = True
                top = leo_top(origin, nt) if leo and 0 < origin < i else None
                if top is not None:
                    if top not in seen:
                        seen.add(top)
                        agenda.append(top)
                    continue
                for advanced in waiting_sets[origin].get(nt, ()):
                    if advanced not in seen:
                        seen.add(advanced)
                        agenda.append(advanced)
            elif symbol >= 0:  # predict
                advanced = (item + 1, origin)
                waiters = waiting.get(symbol)
                if waiters is None:
                    waiting[symbol] = [advanced]
                    for first in predict[symbol]:
                        predicted = (first, i)
                        if predicted not in seen:
                            seen.add(predicted)
                            agenda.append(predicted)
                else:
                    waiters.append(advanced)
                # Aycock–Horspool: a nullable nonterminal may be skipped right away. This also covers
                # items that start waiting after its empty completion was processed in this set.
                if nullable[symbol] and advanced not in seen:
                    seen.add(advanced)
                    agenda.append(advanced)
            else:  # terminal: scanned when the next character is known
                scans.setdefault(-1 - symbol, []).append((item + 1, origin))
        if set_sizes is not None:
            set_sizes.append(len(seen))
        if i == n:
            return accepted if complete else True
        ch = text[i]
        kernel = []
        for terminal, advanced_items in scans.items():
            cache = match_cache[terminal]
            hit = cache.get(ch)
            if hit is None:
                hit = cache[ch] = terminals[terminal].matches(ch)
            if hit:
                kernel.extend(advanced_items)
        if not kernel:
            return False
        i += 1


@functools.lru_cache(maxsize=256)
def _compiled(text: str) -> Grammar:
    return Grammar.parse(text)


def _grammar(gbnf: str | Grammar) -> Grammar:
    return gbnf if isinstance(gbnf, Grammar) else _compiled(gbnf)


def accepts(gbnf: str | Grammar, text: str, root: str = "root") -> bool:
    """True iff ``text`` as a whole is in the language of ``gbnf`` (exact context-free semantics)."""
    return _grammar(gbnf).accepts(text, root)


def prefix_ok(gbnf: str | Grammar, text: str, root: str = "root") -> bool:
    """True iff some string accepted by ``gbnf`` starts with ``text`` (useful to check streaming)."""
    return _grammar(gbnf).prefix_ok(text, root)


def earley_items(gbnf: str | Grammar, text: str, root: str = "root", *, complete: bool = True, leo: bool = True) -> int:
    """How many Earley items recognizing ``text`` builds: the recognizer's work, deterministic where a clock is
    not (tests compare it across input sizes to check that the work grows linearly)."""
    grammar = _grammar(gbnf)
    sizes: list[int] = []
    _earley(grammar._tables, grammar._start(root), text, complete, leo, sizes)
    return sum(sizes)
