"""Translate JSON-Schema ``pattern`` regexes (an ECMA-262 subset) to GBNF.

A pattern is parsed into a tiny AST (character sets, sequences, alternations, bounded repeats) and
lowered to a single GBNF rule. The rule only references terminal rules (``char`` / ``raw-char``), so
engines that compile terminal-only rules to one lexeme (llguidance) see a plain regular expression and
keep exact regex semantics (no greedy lexing in the middle of the pattern).

JSON Schema matches patterns as a *search*: without a leading ``^`` any text may precede the match and
without a trailing ``$`` any text may follow, so unanchored ends get an ``any*`` filler.

In quoted mode the grammar describes the *JSON-encoded* body of a string: characters that JSON must
escape (``"``, ``\\``, controls, and DEL, which this project's ``char`` rule also keeps escaped) are
written in their canonical escaped form (``\\n``, ``\\"``, ``\\u001f`` with either hex case); other
characters are accepted only literally (``\\u0041`` for ``A`` is not accepted).
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from dataclasses import dataclass

from ...errors import PatternError
from .gbnf_syntax import RuleSet, literal
from .regex_charsets import (
    CLASS_ESCAPES,
    CONTROL_ESCAPES,
    DOT,
    MAX_CODE_POINT,
    MUST_ESCAPE,
    SHORT_ESCAPES,
    Ranges,
    complement,
    intersect,
    json_char_options,
    normalize,
    set_text,
    without_surrogates,
)
from .schema_formats import ANY_JSON_CHAR, ANY_RAW_CHAR, MAX_REPEAT, json_rule, repeat

__all__ = ["regex_to_gbnf"]

_QUANTIFIER = re.compile(r"\{([0-9]+)(?:(,)([0-9]*))?\}")
_DIGITS = frozenset("0123456789")
_GROUP_NAME = re.compile(r"\?P?<([A-Za-z_$][A-Za-z0-9_$]*)>")


# --------------------------------------------------------------------------------------------- AST
@dataclass(frozen=True)
class CharSet:
    """One character out of ``ranges``."""

    ranges: Ranges


@dataclass(frozen=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    options: tuple[Node, ...]


@dataclass(frozen=True)
class Repeat:
    node: Node
    lo: int
    hi: int | None


Node = CharSet | Seq | Alt | Repeat


@dataclass(frozen=True)
class Branch:
    """A top-level alternative together with its anchors."""

    body: Seq
    anchored_start: bool
    anchored_end: bool


# ------------------------------------------------------------------------------------------ parser
class _Parser:
    """Recursive-descent parser for the supported ECMA-262 subset (non-unicode mode, Annex B ``{``)."""

    def __init__(self, pattern: str, path: str) -> None:
        self.pattern = pattern
        self.path = path
        self.pos = 0

    def fail(self, message: str, offset: int | None = None) -> PatternError:
        return PatternError(self.path, self.pattern, self.pos if offset is None else offset, message)

    def peek(self, n: int = 1) -> str:
        return self.pattern[self.pos : self.pos + n]

    def parse(self) -> list[Branch]:
        branches = [self._branch()]
        while self.peek() == "|":
            self.pos += 1
            branches.append(self._branch())
        if self.pos < len(self.pattern):  # only a stray ")" can stop a top-level branch early
            raise self.fail("unbalanced ')'")
        return branches

    def _branch(self) -> Branch:
        start = self.peek() == "^"
        if start:
            self.pos += 1
        items = self._items(depth=0)
        end = self.peek() == "$"
        if end:
            self.pos += 1
            if self.pos < len(self.pattern) and self.peek() != "|":
                raise self.fail("'$' is only supported at the end of the pattern", self.pos - 1)
        return Branch(Seq(tuple(items)), start, end)

    def _alternation(self, depth: int) -> Node:
        options: list[Node] = [Seq(tuple(self._items(depth)))]
        while self.peek() == "|":
            self.pos += 1
            options.append(Seq(tuple(self._items(depth))))
        return options[0] if len(options) == 1 else Alt(tuple(options))

    def _items(self, depth: int) -> list[Node]:
        items: list[Node] = []
        while self.pos < len(self.pattern):
            ch = self.peek()
            if ch == "|" or ch == ")":
                break
            if ch == "$" and depth == 0:
                break  # validated by _branch
            if ch in "^$":
                raise self.fail(f"'{ch}' is only supported at the start/end of the pattern")
            if ch in "*+?" or (ch == "{" and _QUANTIFIER.match(self.pattern, self.pos)):
                raise self.fail("nothing to repeat")
            atom = self._atom(depth)
            items.append(self._quantified(atom))
        return items

    def _quantified(self, atom: Node) -> Node:
        start = self.pos
        ch = self.peek()
        if ch and ch in "*+?":
            self.pos += 1
            lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[ch]
        elif ch == "{" and (m := _QUANTIFIER.match(self.pattern, self.pos)):
            self.pos = m.end()
            lo = int(m.group(1))
            hi = lo if m.group(2) is None else (int(m.group(3)) if m.group(3) else None)
            if hi is not None and hi < lo:
                raise self.fail("numbers out of order in {} quantifier", start)
            if lo > MAX_REPEAT:
                raise self.fail(f"repetition counts above {MAX_REPEAT} are not supported", start)
            if hi is not None and hi > MAX_REPEAT:
                hi = None
        else:
            return atom
        if self.peek() == "?":
            self.pos += 1  # lazy: irrelevant for the matched language
        nxt = self.peek()
        if nxt and (nxt in "*+?" or (nxt == "{" and _QUANTIFIER.match(self.pattern, self.pos))):
            raise self.fail("nothing to repeat (nested quantifier)")
        return Repeat(atom, lo, hi)

    def _atom(self, depth: int) -> Node:
        ch = self.peek()
        if ch == "(":
            return self._group(depth)
        if ch == "[":
            return self._class()
        self.pos += 1
        if ch == ".":
            return CharSet(DOT)
        if ch == "\\":
            return CharSet(self._escape())
        return CharSet(((ord(ch), ord(ch)),))

    def _group(self, depth: int) -> Node:
        start = self.pos
        self.pos += 1
        if self.peek() == "?":
            if self.peek(2) == "?:":
                self.pos += 2
            elif m := _GROUP_NAME.match(self.pattern, self.pos):
                self.pos = m.end()
            elif self.peek(2) in ("?=", "?!") or self.peek(3) in ("?<=", "?<!"):
                raise self.fail("lookaround assertions are not supported", start)
            else:
                raise self.fail("unsupported group syntax", start)
        node = self._alternation(depth + 1)
        if self.peek() != ")":
            raise self.fail("missing ')' for the group opened here", start)
        self.pos += 1
        return node

    def _class(self) -> Node:
        start = self.pos
        self.pos += 1
        negated = self.peek() == "^"
        if negated:
            self.pos += 1
        ranges: list[tuple[int, int]] = []
        while True:
            if self.pos >= len(self.pattern):
                raise self.fail("unterminated character class", start)
            if self.peek() == "]":
                self.pos += 1
                break
            item_start = self.pos
            lo = self._class_atom()
            if self.peek() == "-" and self.pos + 1 < len(self.pattern) and self.pattern[self.pos + 1] != "]":
                self.pos += 1
                hi = self._class_atom()
                if isinstance(lo, tuple) or isinstance(hi, tuple):
                    raise self.fail("a class escape cannot be a range bound", item_start)
                if hi < lo:
                    raise self.fail("range out of order in character class", item_start)
                ranges.append((lo, hi))
            elif isinstance(lo, tuple):
                ranges.extend(lo)
            else:
                ranges.append((lo, lo))
        chars = normalize(ranges)
        if negated:
            chars = complement(chars)
        if not without_surrogates(chars):
            raise self.fail("character class matches nothing", start)
        return CharSet(chars)

    def _class_atom(self) -> int | Ranges:
        ch = self.peek()
        self.pos += 1
        if ch != "\\":
            return ord(ch)
        esc = self.peek()
        if esc == "b":
            self.pos += 1
            return 0x08
        if esc == "-":
            self.pos += 1
            return ord("-")
        ranges = self._escape()
        if len(ranges) == 1 and ranges[0][0] == ranges[0][1] and esc not in CLASS_ESCAPES:
            return ranges[0][0]
        return ranges

    def _escape(self) -> Ranges:
        """Parse the escape after a backslash; returns the matched characters."""
        start = self.pos - 1
        if self.pos >= len(self.pattern):
            raise self.fail("pattern ends with a lone backslash", start)
        ch = self.peek()
        self.pos += 1
        if ch in CLASS_ESCAPES:
            return CLASS_ESCAPES[ch]
        if ch in CONTROL_ESCAPES:
            code = ord(CONTROL_ESCAPES[ch])
            return ((code, code),)
        if ch in "bB":
            raise self.fail("word boundary assertions are not supported", start)
        if ch == "0" and self.peek() not in _DIGITS:
            return ((0, 0),)
        if ch in _DIGITS:
            raise self.fail("backreferences (and octal escapes) are not supported", start)
        if ch == "k":
            raise self.fail("named backreferences are not supported", start)
        if ch in "pP":
            raise self.fail("unicode property escapes are not supported", start)
        if ch == "c":
            letter = self.peek()
            if not (letter.isascii() and letter.isalpha()):
                raise self.fail("\\c must be followed by a letter", start)
            self.pos += 1
            code = ord(letter) % 32
            return ((code, code),)
        if ch == "x":
            code = self._hex(2, start)
            return ((code, code),)
        if ch == "u":
            code = self._unicode_escape(start)
            return ((code, code),)
        if (ch.isascii() and ch.isalnum()) or ch == "_":
            raise self.fail(f"unknown escape '\\{ch}'", start)
        code = ord(ch)  # identity escape of punctuation (or any non-ASCII character)
        return ((code, code),)

    def _hex(self, digits: int, start: int) -> int:
        text = self.peek(digits)
        if len(text) != digits or not all(c in "0123456789abcdefABCDEF" for c in text):
            raise self.fail(f"expected {digits} hex digits", start)
        self.pos += digits
        return int(text, 16)

    def _unicode_escape(self, start: int) -> int:
        if self.peek() == "{":
            close = self.pattern.find("}", self.pos)
            body = self.pattern[self.pos + 1 : close] if close > 0 else ""
            if not body or not all(c in "0123456789abcdefABCDEF" for c in body) \
                    or int(body, 16) > MAX_CODE_POINT:
                raise self.fail("invalid \\u{...} escape", start)
            self.pos = close + 1
            code = int(body, 16)
        else:
            code = self._hex(4, start)
        if 0xD800 <= code <= 0xDBFF and self.peek(2) == "\\u":
            save = self.pos
            self.pos += 2
            low = self._hex(4, save)
            if 0xDC00 <= low <= 0xDFFF:
                return 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
            self.pos = save
        if 0xD800 <= code <= 0xDFFF:
            raise self.fail("lone surrogate escapes cannot be matched in UTF-8 text", start)
        return code


# ----------------------------------------------------------------------------------------- emitter
@dataclass(frozen=True)
class _Piece:
    text: str
    atomic: bool


def _unwrap(node: Node) -> Node:
    """A group around a single item is the item."""
    while isinstance(node, Seq) and len(node.items) == 1:
        node = node.items[0]
    return node


def _nested_counts(inner: Repeat, lo: int, hi: int | None) -> tuple[int, int | None] | None:
    """Counts of ``(x{a,b}){lo,hi}`` as one ``x{..}`` when the union of ``[k*a, k*b]`` is an interval."""
    a, b = inner.lo, inner.hi
    if hi == lo:
        return (0, 0) if lo == 0 else (lo * a, None if b is None else lo * b)
    if b is None:
        return (lo * a, None) if lo >= 1 or a <= 1 else None
    if (lo + 1) * a <= lo * b + 1:  # consecutive k overlap or touch (hardest for the smallest k)
        return lo * a, None if hi is None else hi * b
    return None


class _Emitter:
    def __init__(self, rules: RuleSet, quoted: bool, name: str, key: Hashable) -> None:
        self.rules = rules
        self.quoted = quoted
        self.name = name
        self.key = key

    def any_char(self) -> str:
        return json_rule(self.rules, ANY_JSON_CHAR if self.quoted else ANY_RAW_CHAR)

    def literal_text(self, node: Node) -> str | None:
        """The text of a single-character set that is written literally, else None."""
        if not isinstance(node, CharSet) or len(node.ranges) != 1 or node.ranges[0][0] != node.ranges[0][1]:
            return None
        ch = chr(node.ranges[0][0])
        if self.quoted:
            if ch in SHORT_ESCAPES:
                return SHORT_ESCAPES[ch]
            if intersect(node.ranges, MUST_ESCAPE):
                return None
        return ch

    def charset(self, ranges: Ranges) -> _Piece:
        if not without_surrogates(complement(ranges)):
            # every character: in quoted mode that is any JSON string character or escape
            return _Piece(self.any_char(), True)
        if not self.quoted:
            return _Piece(set_text(ranges), True)
        options = json_char_options(ranges)
        if len(options) == 1 and " " not in options[0]:
            return _Piece(options[0], True)
        return _Piece("( " + " | ".join(options) + " )", True)

    def emit(self, node: Node) -> _Piece:
        if isinstance(node, CharSet):
            text = self.literal_text(node)
            return _Piece(literal(text), True) if text is not None else self.charset(node.ranges)
        if isinstance(node, Seq):
            return self.sequence(node.items)
        if isinstance(node, Alt):
            return _Piece("( " + " | ".join(self.emit(o).text for o in node.options) + " )", True)
        lo, hi, inner_node = node.lo, node.hi, _unwrap(node.node)
        while isinstance(inner_node, Repeat) and (counts := _nested_counts(inner_node, lo, hi)):
            (lo, hi), inner_node = counts, _unwrap(inner_node.node)
        if hi == 0:
            return _Piece('""', True)
        inner = self.emit(inner_node)
        atom = inner.text if inner.atomic else f"( {inner.text} )"
        if isinstance(inner_node, Repeat):
            # (x{2,})* cannot be flattened, and llguidance's GBNF import drops the parentheses of
            # "( x{2,} )*" (giving an invalid "x{2,}*"), so the inner repeat gets a rule of its own.
            atom = self.rules.add(f"{self.name}-repeat", inner.text, ("regex-repeat", self.key, inner.text))
        text = repeat(atom, lo, hi)
        return _Piece(text, text == atom)  # a quantified atom cannot take another quantifier

    def sequence(self, items: tuple[Node, ...]) -> _Piece:
        pieces: list[_Piece] = []
        pending = ""  # consecutive literal characters become one GBNF string
        for item in items:
            text = self.literal_text(item)
            if text is not None:
                pending += text
                continue
            if pending:
                pieces.append(_Piece(literal(pending), True))
                pending = ""
            piece = self.emit(item)
            if piece.text != '""':
                pieces.append(piece)
        if pending:
            pieces.append(_Piece(literal(pending), True))
        if not pieces:
            return _Piece('""', True)
        return _Piece(" ".join(p.text for p in pieces), len(pieces) == 1 and pieces[0].atomic)


def regex_to_gbnf(pattern: str, rules: RuleSet, name: str, *, path: str, quoted: bool) -> str:
    """Define a rule for strings matching the JSON-Schema ``pattern`` and return its name.

    ``quoted=True`` describes the JSON-encoded body of a string (the caller adds the quotes);
    ``quoted=False`` describes raw text. Unsupported syntax raises :class:`PatternError` with the
    offset of the offending construct.
    """
    if not isinstance(pattern, str):
        raise PatternError(path, str(pattern), 0, "pattern must be a string")
    try:
        branches = _Parser(pattern, path).parse()
    except RecursionError:
        raise PatternError(path, pattern, 0, "pattern nests too deeply") from None
    key = ("regex", name, quoted, pattern)
    existing = rules.lookup(key)
    if existing is not None and existing in rules:
        return existing
    name = rules.reserve(name, key)
    emitter = _Emitter(rules, quoted, name, key)
    filler = f"{emitter.any_char()}*"
    options = []
    for branch in branches:
        parts = [] if branch.anchored_start else [filler]
        body = emitter.sequence(branch.body.items)
        if body.text != '""' or len(parts) + (not branch.anchored_end) == 0:
            parts.append(body.text)
        if not branch.anchored_end:
            parts.append(filler)
        options.append(" ".join(parts))
    return rules.define(name, " | ".join(dict.fromkeys(options)))
