"""Character classes such as ``[a-zA-Z0-9_]`` or ``[^\\n<]``: parsed once, used by the parser and GBNF.

The syntax is the reference's: optional ``^`` negation, ranges ``a-z``, and the escapes ``\\n \\t \\r \\\\
\\] \\[ \\- \\^ \\xHH \\uHHHH \\UHHHHHHHH``. Surrounding brackets are optional.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import GrammarError
from .lowering.gbnf_syntax import class_char

__all__ = ["CharClass", "parse_char_class"]

_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "0": "\0"}
_HEX_LENGTHS = {"x": 2, "u": 4, "U": 8}


@dataclass(frozen=True, slots=True)
class CharClass:
    """A set of code points as inclusive ranges, possibly negated."""

    ranges: tuple[tuple[str, str], ...]
    negated: bool = False

    def regex(self) -> str:
        """The class as a Python regular-expression character class."""
        body = "".join(
            re.escape(lo) if lo == hi else f"{re.escape(lo)}-{re.escape(hi)}" for lo, hi in self.ranges
        )
        if not body:  # only the negated empty class can exist (see parse_char_class): everything
            return r"[\s\S]"
        return f"[{'^' if self.negated else ''}{body}]"

    def gbnf(self) -> str:
        """The class in GBNF syntax."""
        body = "".join(
            class_char(lo) if lo == hi else f"{class_char(lo)}-{class_char(hi)}" for lo, hi in self.ranges
        )
        if not body:  # only the negated empty class can exist (see parse_char_class)
            return r'([^\n] | "\n")'
        return f"[{'^' if self.negated else ''}{body}]"

    def describe(self) -> str:
        """Short human description used in error messages."""
        return self.gbnf()


def _read_char(spec: str, i: int) -> tuple[str, int]:
    ch = spec[i]
    if ch != "\\":
        return ch, i + 1
    if i + 1 >= len(spec):
        raise GrammarError(f"character class {spec!r}: dangling backslash at the end")
    code = spec[i + 1]
    if code in _HEX_LENGTHS:
        width = _HEX_LENGTHS[code]
        digits = spec[i + 2 : i + 2 + width]
        if len(digits) != width or not all(c in "0123456789abcdefABCDEF" for c in digits):
            raise GrammarError(f"character class {spec!r}: bad \\{code} escape at offset {i}")
        value = int(digits, 16)
        if value > 0x10FFFF:
            raise GrammarError(f"character class {spec!r}: code point {value:#x} out of range")
        return chr(value), i + 2 + width
    return _SIMPLE_ESCAPES.get(code, code), i + 2


def parse_char_class(spec: str) -> CharClass:
    """Parse ``spec`` (``"[a-z]"``, ``"^0-9"``, ``"[\\u4e00-\\u9fff]"``...) into a :class:`CharClass`."""
    if not isinstance(spec, str):
        raise GrammarError(f"character class must be a string, got {type(spec).__name__}")
    body = spec[1:-1] if len(spec) >= 2 and spec[0] == "[" and spec[-1] == "]" else spec
    negated = body.startswith("^")
    if negated:
        body = body[1:]
    ranges: list[tuple[str, str]] = []
    i = 0
    while i < len(body):
        lo, i = _read_char(body, i)
        if i + 1 < len(body) and body[i] == "-":
            hi, i = _read_char(body, i + 1)
            if ord(hi) < ord(lo):
                raise GrammarError(f"character class {spec!r}: range {lo!r}-{hi!r} is reversed")
            ranges.append((lo, hi))
        else:
            ranges.append((lo, lo))
    if not ranges and not negated:
        raise GrammarError(f"character class {spec!r} is empty and can never match")
    return CharClass(tuple(ranges), negated)
