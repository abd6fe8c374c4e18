"""Fast scanners for JSON values and Python literals (the leaves behind ``json()`` and friends).

A JSON value is scanned token by token with compiled regular expressions and an explicit stack, never
character by character in Python. Complete objects and arrays first go through the C-accelerated
``json.JSONDecoder.raw_decode``; only when that fails (malformed or cut-off input) does the token scanner
run, to find the failure position or decide that more input is needed.

Every scanner returns ``(status, end)`` with status FAIL (end = failure position), SUCCESS or
NEED_MORE (end = end of input). In partial mode a value cut off by the end of input needs more input, and a
number running to the end never commits (``12`` may become ``123``). Values do not consume trailing
whitespace.
"""

from __future__ import annotations

import json
import re
from typing import Final

__all__ = ["FAIL", "MORE", "OK", "scan_json", "scan_string_body"]

FAIL: Final = 0
OK: Final = 1
MORE: Final = 2

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
# A prefix of a number running to the end of input (may still grow into a number).
_NUMBER_PREFIX_AT_END = re.compile(r"-?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?(?:[eE][+-]?[0-9]*)?)?\Z")
_NUMBER_TAIL = frozenset("0123456789.eE+-")

# String bodies, written as unrolled loops so the regex engine never alternates per character.
_BODY = {
    ('"', "json"): re.compile(r'[^"\\]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\]*)*'),
    ("'", "json"): re.compile(r"[^'\\]*(?:\\(?:['\\/bfnrt]|u[0-9a-fA-F]{4})[^'\\]*)*"),
    ('"', "python"): re.compile(r'[^"\\]*(?:\\[\s\S][^"\\]*)*'),
    ("'", "python"): re.compile(r"[^'\\]*(?:\\[\s\S][^'\\]*)*"),
}
_PARTIAL_ESCAPE = {"json": re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?\Z"), "python": re.compile(r"\\\Z")}

_KEYWORDS = {
    "json": {"t": "true", "f": "false", "n": "null"},
    "python": {"T": "True", "F": "False", "N": "None"},
}
_QUOTES = {"json": '"', "python": "\"'"}


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(strict=False, parse_constant=_reject_constant)


def scan_string_body(text: str, pos: int, quote: str, flavor: str, partial: bool) -> tuple[int, int]:
    """Scan a string body from ``pos`` up to (not including) the unescaped ``quote``."""
    end = _BODY[quote, flavor].match(text, pos).end()
    n = len(text)
    if end < n and text[end] == quote:
        return OK, end
    if end >= n or (partial and _PARTIAL_ESCAPE[flavor].match(text, end)):
        return (MORE, n) if partial else (FAIL, end)
    return FAIL, end  # a bad escape sequence


def _scan_string(text: str, pos: int, flavor: str, partial: bool) -> tuple[int, int]:
    status, end = scan_string_body(text, pos + 1, text[pos], flavor, partial)
    return (OK, end + 1) if status == OK else (status, end)


def _scan_number(text: str, pos: int, partial: bool) -> tuple[int, int]:
    if partial and _NUMBER_PREFIX_AT_END.match(text, pos):
        return MORE, len(text)
    match = _NUMBER.match(text, pos)
    if match is None:
        return FAIL, pos
    end = match.end()
    if end < len(text) and text[end] in _NUMBER_TAIL:
        return FAIL, end
    return OK, end


def _scan_keyword(text: str, pos: int, word: str, partial: bool) -> tuple[int, int]:
    if text.startswith(word, pos):
        return OK, pos + len(word)
    n = len(text)
    if partial and n - pos < len(word) and word.startswith(text[pos:]):
        return MORE, n
    return FAIL, pos


def _scan_scalar(text: str, pos: int, flavor: str, partial: bool) -> tuple[int, int]:
    """A string, number or keyword at ``pos`` (``pos < len(text)``)."""
    ch = text[pos]
    if ch in _QUOTES[flavor]:
        return _scan_string(text, pos, flavor, partial)
    if ch == "-" or "0" <= ch <= "9":
        return _scan_number(text, pos, partial)
    word = _KEYWORDS[flavor].get(ch)
    if word is not None:
        return _scan_keyword(text, pos, word, partial)
    return FAIL, pos


def _scan_container(text: str, pos: int, flavor: str, partial: bool) -> tuple[int, int]:
    """Scan an object or array starting at ``pos`` with an explicit stack of expected closers."""
    n = len(text)
    quotes = _QUOTES[flavor]
    stack: list[str] = []
    i = pos
    expect_key = False  # inside an object, before a member
    while True:
        # --- a value (or, in an object, a member key) is expected at i
        if i >= n:
            return (MORE, n) if partial else (FAIL, n)
        ch = text[i]
        if expect_key:
            if ch not in quotes:
                return FAIL, i
            status, i = _scan_string(text, i, flavor, partial)
            if status != OK:
                return status, i
            i = _WS.match(text, i).end()
            if i >= n:
                return (MORE, n) if partial else (FAIL, n)
            if text[i] != ":":
                return FAIL, i
            i = _WS.match(text, i + 1).end()
            expect_key = False
            continue
        if ch == "{" or ch == "[":
            stack.append("}" if ch == "{" else "]")
            i = _WS.match(text, i + 1).end()
            if i < n and text[i] == stack[-1]:  # empty container
                stack.pop()
                i += 1
            else:
                expect_key = ch == "{"
                continue
        else:
            status, i = _scan_scalar(text, i, flavor, partial)
            if status != OK:
                return status, i
        # --- after a complete value: close containers or move to the next element
        while True:
            if not stack:
                return OK, i
            i = _WS.match(text, i).end()
            if i >= n:
                return (MORE, n) if partial else (FAIL, n)
            ch = text[i]
            if ch == ",":
                i = _WS.match(text, i + 1).end()
                expect_key = stack[-1] == "}"
                break
            if ch != stack[-1]:
                return FAIL, i
            stack.pop()
            i += 1


def _cut_off_at_end(text: str, err: json.JSONDecodeError) -> bool:
    """Whether the decoder failed only because the input ends (a cheap check for streaming).

    The decoder validated everything before ``err.pos``; the input is a viable prefix when the failure is
    at the very end, or when what follows the failure point is the start of the token the decoder wanted
    (a string, keyword or number) running to the end. Anything else goes to the exact scanner.
    """
    at, n = err.pos, len(text)
    if at >= n:
        return True
    if err.msg.startswith("Unterminated string"):
        return scan_string_body(text, at + 1, text[at], "json", True)[0] == MORE
    if err.msg == "Expecting value":
        word = _KEYWORDS["json"].get(text[at])
        if word is not None:
            return n - at < len(word) and word.startswith(text[at:])
        return _NUMBER_PREFIX_AT_END.match(text, at) is not None
    return False


_KIND_STARTS = {"object": "{", "array": "["}


def scan_json(text: str, pos: int, kind: str, flavor: str, partial: bool) -> tuple[int, int]:
    """Scan one value of ``kind`` (value/object/array/string/number/bool/null) at ``pos``."""
    n = len(text)
    if pos >= n:
        return (MORE, n) if partial else (FAIL, pos)
    ch = text[pos]
    if kind == "value" or kind in _KIND_STARTS:
        if ch == "{" or ch == "[":
            if kind != "value" and ch != _KIND_STARTS[kind]:
                return FAIL, pos
            if flavor == "json":
                try:
                    return OK, _DECODER.raw_decode(text, pos)[1]
                except json.JSONDecodeError as err:
                    if partial and _cut_off_at_end(text, err):
                        return MORE, n
                except (ValueError, RecursionError):
                    pass  # malformed or cut off: the scanner finds out which
            return _scan_container(text, pos, flavor, partial)
        if kind != "value":
            return FAIL, pos
        return _scan_scalar(text, pos, flavor, partial)
    if kind == "string":
        return _scan_string(text, pos, flavor, partial) if ch in _QUOTES[flavor] else (FAIL, pos)
    if kind == "number":
        return _scan_number(text, pos, partial)
    if kind == "null":
        return _scan_keyword(text, pos, _KEYWORDS[flavor]["n" if flavor == "json" else "N"], partial)
    # bool
    words = ("true", "false") if flavor == "json" else ("True", "False")
    for word in words:
        if ch == word[0]:
            return _scan_keyword(text, pos, word, partial)
    return FAIL, pos
