"""First characters: which characters a parser can start with, so a choice skips alternatives that cannot match.

A chat parser's item loop offers a handful of alternatives at every position (a tool-call section, markers that
did not start a call, plain text); at a position where the text starts with ``H`` only the plain-text one can match.
:func:`first_set` answers conservatively: a set of characters the match must start with when it consumes anything,
plus whether it may consume nothing (then the choice must try it at any character).
"""

from __future__ import annotations

from .nodes import (
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

__all__ = ["First", "first_set"]

First = tuple[frozenset[str] | None, bool]  # (first characters, None: any; whether it can match empty)

_SPACE = frozenset(" \t\n\r\x0b\x0c")
_DIGITS = frozenset("0123456789")
_JSON_FIRST = {
    ("value", "json"): frozenset('{["-tfn') | _DIGITS,
    ("value", "python"): frozenset("{[\"'-TFN") | _DIGITS,
    ("object", "json"): frozenset("{"),
    ("object", "python"): frozenset("{"),
    ("object", "gemma"): frozenset("{"),
    ("array", "json"): frozenset("["),
    ("array", "python"): frozenset("["),
    ("array", "gemma"): frozenset("["),
    ("value", "gemma"): None,
    ("string", "json"): frozenset('"'),
    ("string", "python"): frozenset("\"'"),
    ("number", "json"): frozenset("-") | _DIGITS,
    ("number", "python"): frozenset("-") | _DIGITS,
    ("bool", "json"): frozenset("tf"),
    ("bool", "python"): frozenset("TF"),
    ("null", "json"): frozenset("n"),
    ("null", "python"): frozenset("N"),
    ("value", "pythonic"): frozenset("{[\"'-TFNtfn") | _DIGITS,
    ("object", "pythonic"): frozenset("{"),
    ("array", "pythonic"): frozenset("["),
    ("string", "pythonic"): frozenset("\"'"),
    ("number", "pythonic"): frozenset("-") | _DIGITS,
    ("bool", "pythonic"): frozenset("TFtf"),
    ("null", "pythonic"): frozenset("Nn"),
}
_LARGEST_CLASS = 128  # character classes with more members than this count as "any character"


def first_set(node: Parser) -> First:
    """What ``node`` can start with (see the module docstring). References are not followed (recursion)."""
    match node:
        case Literal(text=text):
            return (frozenset(text[0]), False) if text else (frozenset(), True)
        case Eps() | Start() | End() | Commit() | Peek() | Negate() | JsonNotKnownInvalid():
            return frozenset(), True  # zero width: what follows decides
        case AnyChar():
            return None, False
        case Space():
            return _SPACE, True
        case Chars(char_class=cls, min=lo):
            return _class_members(cls.ranges, cls.negated), lo == 0
        case Until() | UntilViableJson() | StringContent() | Ref():
            return None, True
        case Json(kind=kind, flavor=flavor):
            family = "gemma" if flavor.startswith("dict:") else flavor  # registered dict syntaxes (json_scan)
            return _JSON_FIRST.get((kind, family)), False
        case Sequence(items=items):
            found: frozenset[str] = frozenset()
            for item in items:
                chars, nullable = first_set(item)
                if chars is None:
                    return None, True
                found |= chars
                if not nullable:
                    return found, False
            return found, True
        case Choice(items=items):
            found = frozenset()
            empty = False
            for item in items:
                chars, nullable = first_set(item)
                if chars is None:
                    return None, True
                found |= chars
                empty = empty or nullable
            return found, empty
        case Repeat(child=child, min=lo):
            chars, nullable = first_set(child)
            return chars, nullable or lo == 0
        case Tag(child=child) | Atomic(child=child) | Recover(child=child) | Schema(child=child) | Gbnf(child=child):
            return first_set(child)
        case Rule(body=body):
            return first_set(body)
    return None, True


def _class_members(ranges: tuple[tuple[str, str], ...], negated: bool) -> frozenset[str] | None:
    if negated:
        return None
    size = sum(ord(hi) - ord(lo) + 1 for lo, hi in ranges)
    if size > _LARGEST_CLASS:
        return None
    return frozenset(chr(c) for lo, hi in ranges for c in range(ord(lo), ord(hi) + 1))
