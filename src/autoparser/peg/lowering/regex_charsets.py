"""Character sets for the regex → GBNF lowering: code point range algebra and GBNF rendering.

Sets are sorted tuples of inclusive ``(lo, hi)`` code point ranges. Rendering drops surrogates (UTF-8
text never contains them) and writes a negated class when the set reaches U+10FFFF. In quoted mode a
set becomes the JSON-encoded forms of its characters: the raw ones JSON allows, plus the canonical
escapes (``\\n``, ``\\"``, ``\\u001f`` in either hex case) of those it does not.
"""

from __future__ import annotations

from .gbnf_syntax import class_char, literal

__all__ = [
    "CLASS_ESCAPES",
    "CONTROL_ESCAPES",
    "DOT",
    "MAX_CODE_POINT",
    "MUST_ESCAPE",
    "SHORT_ESCAPES",
    "Ranges",
    "char_class",
    "complement",
    "intersect",
    "json_char_options",
    "normalize",
    "set_text",
    "without_surrogates",
]

MAX_CODE_POINT = 0x10FFFF
_SURROGATES = (0xD800, 0xDFFF)

Ranges = tuple[tuple[int, int], ...]


def normalize(ranges: list[tuple[int, int]] | Ranges) -> Ranges:
    """Sort and merge overlapping/adjacent code point ranges."""
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return tuple(merged)


def complement(ranges: Ranges) -> Ranges:
    out: list[tuple[int, int]] = []
    start = 0
    for lo, hi in ranges:
        if lo > start:
            out.append((start, lo - 1))
        start = hi + 1
    if start <= MAX_CODE_POINT:
        out.append((start, MAX_CODE_POINT))
    return tuple(out)


def intersect(a: Ranges, b: Ranges) -> Ranges:
    return complement(normalize(complement(a) + complement(b)))


def subtract(a: Ranges, b: Ranges) -> Ranges:
    return intersect(a, complement(b))


def without_surrogates(ranges: Ranges) -> Ranges:
    """UTF-8 text can never contain surrogates, so they are dropped before writing a class."""
    return subtract(ranges, (_SURROGATES,))


def _chars(*items: str | tuple[str, str]) -> Ranges:
    return normalize([(ord(i), ord(i)) if isinstance(i, str) else (ord(i[0]), ord(i[1])) for i in items])


DIGIT = _chars(("0", "9"))
WORD = _chars(("0", "9"), ("A", "Z"), "_", ("a", "z"))
SPACE = _chars(
    ("\t", "\r"), " ", "\xa0", "\u1680", ("\u2000", "\u200a"), "\u2028", "\u2029", "\u202f", "\u205f",
    "\u3000", "\ufeff",
)
LINE_TERMINATORS = _chars("\n", "\r", "\u2028", "\u2029")
DOT = complement(LINE_TERMINATORS)
#: Characters that must not appear raw inside a JSON string body (DEL by this project's convention).
MUST_ESCAPE = _chars(("\x00", "\x1f"), '"', "\\", "\x7f")
SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
CLASS_ESCAPES = {"d": DIGIT, "D": complement(DIGIT), "w": WORD, "W": complement(WORD), "s": SPACE,
                  "S": complement(SPACE)}
CONTROL_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "v": "\v", "f": "\f"}

def _class_char(code: int) -> str:
    # GBNF has no \- or \^ escape (llama.cpp and llguidance reject them), so use hex escapes.
    ch = chr(code)
    if ch == "-":
        return "\\x2D"
    if ch == "^":
        return "\\x5E"
    return class_char(ch)


def char_class(ranges: Ranges) -> str:
    """A GBNF class for the (non-empty) ranges, negated when that is shorter."""
    ranges = without_surrogates(ranges)
    negated = bool(ranges) and ranges[-1][1] == MAX_CODE_POINT
    shown = without_surrogates(complement(ranges)) if negated else ranges
    parts = []
    for lo, hi in shown:
        if lo == hi:
            parts.append(_class_char(lo))
        elif hi == lo + 1:
            parts.append(_class_char(lo) + _class_char(hi))
        else:
            parts.append(f"{_class_char(lo)}-{_class_char(hi)}")
    return ("[^" if negated else "[") + "".join(parts) + "]"


def set_text(ranges: Ranges) -> str:
    """A literal for a single character, else a class."""
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return literal(chr(ranges[0][0]))
    return char_class(ranges)


def _hex_nibble_class(values: list[int]) -> str:
    chars = {f"{v:x}" for v in values} | {f"{v:X}" for v in values}
    if len(chars) == 1:
        return literal(chars.pop())
    return char_class(normalize([(ord(c), ord(c)) for c in chars]))


def _unicode_escapes(codes: list[int]) -> list[str]:
    """``\\u00XY`` alternatives (either hex case) for code points below 0x80, grouped by high nibble."""
    by_high: dict[int, list[int]] = {}
    for code in codes:
        by_high.setdefault(code >> 4, []).append(code & 0xF)
    prefix = "\\u00"
    return [f"{literal(f'{prefix}{high:x}')} {_hex_nibble_class(lows)}" for high, lows in sorted(by_high.items())]



def json_char_options(ranges: Ranges) -> list[str]:
    """GBNF alternatives for one character of ``ranges`` inside a JSON string body."""
    options: list[str] = []
    plain = without_surrogates(subtract(ranges, MUST_ESCAPE))
    if plain:
        options.append(set_text(plain))
    escaped = [code for lo, hi in intersect(ranges, MUST_ESCAPE) for code in range(lo, hi + 1)]
    options += [literal(SHORT_ESCAPES[chr(c)]) for c in escaped if chr(c) in SHORT_ESCAPES]
    options += _unicode_escapes([c for c in escaped if chr(c) not in SHORT_ESCAPES])
    return options
