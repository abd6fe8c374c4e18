"""Python keyword arguments (``city="Paris", days=2, flags=[True, null]``) as parsers, and their JSON.

Pythonic tool calls (LFM2, MiniCPM3, Gemma 3n, ...) write arguments as Python keyword arguments whose values are
Python literals, often with JSON's spellings mixed in (models trained on ``tojson`` renders write ``true`` and
``null``): :func:`keyword_arguments` reads them with the PEG engine's ``pythonic`` flavor. Some templates write
string values bare (Gemma 3n renders ``city=Paris``); with ``bare=True`` a value that is not a literal is text up to
the ``,`` that starts the next argument or the ``)`` that ends the call. Beyond the template's bytes, two more things
are read: a string whose inner quotes are not escaped (``title="Q3 "sync" review"``: it ends at the quote its
argument's end follows; LFM2.5-VL's template writes strings so, models trained on it do too), and arguments
separated by whitespace only (``f(a=1 b=2)``).

:func:`kwargs_to_json` turns the complete argument text of a call into a JSON object, typing bare values by the
tool's parameter schema.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from typing import Any

from ... import peg as p
from .. import tags
from ..request import ToolSpec
from ..schema_types import only_string
from .repairs import RepairedArguments

__all__ = [
    "IDENTIFIER",
    "decode_python_escapes",
    "keyword_arguments",
    "kwargs_to_json",
    "python_literal_to_json",
]

IDENTIFIER = p.chars("[a-zA-Z_]", 1, 1) + p.chars("[a-zA-Z0-9_]", 0)
# Between keyword arguments: a comma — or only whitespace, which some templates write (``f(a=1 b=2)``) and models
# copy: a name and "=" must follow it then.
_NEXT_NAME = IDENTIFIER + p.space() + "="
_COMMA = p.choice(p.space() + "," + p.space(), p.chars("[ \t\r\n]", 1) + p.peek(_NEXT_NAME))
# Where a bare value ends: at a "," that starts the next keyword argument, or at a ")" that ends the call (the end of
# the output, of the line, of a list or a fence, or another call after it). Any other "," or ")" is text.
_NEXT_ARGUMENT = p.literal(",") + p.space() + _NEXT_NAME
_SPACED_ARGUMENT = p.chars("[ \t]", 1) + _NEXT_NAME  # the next argument where the template separates them by a space
_NEXT_CALL = p.literal(",") + p.space() + p.choice(IDENTIFIER + p.space() + "(", "]", p.end())
_CALL_END = p.literal(")") + p.chars("[ \t]", 0) + p.choice(p.end(), p.chars("[\r\n\\];`<]", 1, 1), _NEXT_CALL)
_BARE_CHUNK = p.until_one_of([",", ")", "\n"])
# A line that opens a call (`name(` then `key=` or `)`): bare text may run over line breaks, but not into the next
# call. (A damaged call end, `city=Zanzibar)x` then a call on the next line, would otherwise take that call as text.)
_LINE_CALL = p.literal("\n") + p.chars("[ \t]", 0) + IDENTIFIER + "(" + p.space() + p.choice(_NEXT_NAME, ")")
# What follows a complete literal value: the next argument (after a comma, or whitespace) or the call's end. A quote
# that a comma follows but no next argument (`"a", b"`) or a name written right after it (`"a"b=1"`) closes no
# literal: the string is one whose inner quotes are not escaped (see _loose_string).
_AFTER_LITERAL = p.peek(
    p.choice(
        p.space() + p.choice(p.literal(",") + p.space() + p.choice(_NEXT_NAME, ")", p.end()), ")", p.end()),
        p.chars("[ \t\r\n]", 1) + _NEXT_NAME,
    )
)
_LOOSE = "loose-string"  # tag (inside the keyword-argument parser only): a string whose inner quotes are not escaped


def _bare_text(spaced: bool) -> p.Parser:
    """Unquoted text up to the end of its argument; it may hold ``,`` and ``)`` that end nothing and line breaks
    that open no call (``spaced``: the template separates arguments by a space, so a space before ``name=`` ends it
    too)."""
    if spaced:
        chunk = p.until_one_of([",", ")", " ", "\t", "\n"])
        stops = p.choice(_NEXT_ARGUMENT, _CALL_END, _SPACED_ARGUMENT, _LINE_CALL)
        inner = p.negate(stops) + p.chars("[,) \t\n]", 1, 1) + chunk
        return chunk + p.zero_or_more(inner)
    inner = p.negate(p.choice(_NEXT_ARGUMENT, _CALL_END, _LINE_CALL)) + p.chars("[,)\n]", 1, 1) + _BARE_CHUNK
    return _BARE_CHUNK + p.zero_or_more(inner)


def _loose_string() -> p.Parser:
    """A quoted string whose inner quotes the writer did not escape (``"Q3 "sync" review"``): it ends at the quote
    that the end of its argument follows — the next ``name=`` after a comma or a space, or the ``)`` that ends the
    call — and any other quote is the string's own. It never runs past the end of the call (a ``)`` that ends it:
    ``city="Zanzibar), get_weather(`` lost its closing quote; the call is broken, not one string). A backslash
    escapes the character after it, as in any Python string (``"Pa \\"`` cut off there is no string)."""
    # (the end of the text too: a call's argument text is converted without its ")")
    ends = p.choice(p.space() + p.choice(_NEXT_ARGUMENT, _CALL_END, p.end()), _SPACED_ARGUMENT)
    forms = []
    for quote in ('"', "'"):
        closing = p.literal(quote) + p.peek(ends)
        chunk = p.until_one_of([quote, ")", "\\"])
        step = p.choice(p.literal("\\") + p.any_char(), p.negate(closing) + quote, p.negate(_CALL_END) + ")")
        forms.append(p.literal(quote) + chunk + p.zero_or_more(step + chunk) + closing)
    return p.choice(*forms)


def keyword_arguments(*, tagged: bool, bare: bool = False, spaced: bool = False) -> p.Parser:
    """``name=value, ...`` (possibly empty, a trailing comma allowed), values being Python or JSON literals.

    ``tagged`` marks each argument's name and value (for :func:`kwargs_to_json`: a literal is TOOL_ARG_VALUE, bare
    text TOOL_ARG_STRING, a string with unescaped quotes ``_LOOSE``); inside a call the whole text is one TOOL_ARGS
    node and needs no inner tags. ``bare``: values may also be unquoted text. ``spaced``: the template separates
    arguments by whitespace only (``f(a=1 b=2)``; read everywhere, but bare text then also ends at a space before the
    next ``name=``)."""
    literal = p.json("pythonic") + _AFTER_LITERAL
    loose = _loose_string()
    name: p.Parser = IDENTIFIER
    value: p.Parser = literal
    if tagged:
        name, value = p.tag(tags.TOOL_ARG_NAME, name), p.tag(tags.TOOL_ARG_VALUE, literal)
        loose = p.tag(_LOOSE, loose)
    value = p.space() + p.choice(value, loose)
    if bare:
        # Bare text starts right after "=": its own leading spaces are kept. (A literal only if the argument ends
        # right after it: `city=2nd street` is text, `days=2` a number.)
        text = p.tag(tags.TOOL_ARG_STRING, _bare_text(spaced)) if tagged else _bare_text(spaced)
        value = p.choice(value, text)
    kwarg = name + p.space() + "=" + value
    if tagged:
        kwarg = p.tag(tags.TOOL_ARG, kwarg)
    return p.optional(kwarg + p.zero_or_more(_COMMA + kwarg) + p.optional(p.space() + ","))


@functools.cache
def _kwargs_parser(bare: bool, spaced: bool) -> p.CompiledParser:
    return (p.space() + keyword_arguments(tagged=True, bare=bare, spaced=spaced) + p.space() + p.end()).compile()


def kwargs_to_json(
    text: str, tool: ToolSpec | None = None, *, bare: bool = False, spaced: bool = False, raw: bool = False
) -> str:
    """The JSON object for the keyword arguments ``text`` of a complete call (``a="v", b=[1, True]``).

    The text was validated by the same grammar, so the parse succeeds (text that does not parse raises
    ``ValueError``: a broken call's repair tries prefixes). A repeated name is written twice: the mapper keeps the
    first and warns. With ``bare``, the template writes strings unquoted: a value of a parameter that only takes
    strings is its text (``zip=01234``, ``flag=True`` are strings there), other bare text becomes a JSON string too,
    and literals keep their type. A string whose inner quotes are not escaped is read up to the quote its argument
    ends at; unless the template writes strings so (``raw``), that is a repair: the result is then
    :class:`.repairs.RepairedArguments` with a note."""
    result = _kwargs_parser(bare, spaced).parse(text)
    if result.fail:
        raise ValueError(f"not keyword arguments: {text[:80]!r}")
    members: list[tuple[str, str]] = []
    notes: list[str] = []
    for node in result.nodes:
        if node.tag != tags.TOOL_ARG:
            continue
        name, value = node.children  # the tagged name and value (sequences make no nodes)
        if value.tag == _LOOSE and not raw:
            notes.append(f"the string of argument {name.text!r} holds quotes that are not escaped: {value.text!r}")
        members.append((name.text, _value_json(value.tag, value.text, tool, name.text, bare)))
    body = "{" + ", ".join(f"{json.dumps(name, ensure_ascii=False)}: {value}" for name, value in members) + "}"
    return RepairedArguments(body, notes) if notes else body


def _value_json(tag: str, text: str, tool: ToolSpec | None, name: str, bare: bool) -> str:
    if tag == tags.TOOL_ARG_STRING:
        return json.dumps(text, ensure_ascii=False)  # exactly what the template wrote between "=" and "," / ")"
    if tag == _LOOSE:
        return json.dumps(decode_python_escapes(text[1:-1]), ensure_ascii=False)  # (escapes read as in any string)
    if bare and text[:1] not in ("'", '"') and _only_string(tool, name):
        return json.dumps(text, ensure_ascii=False)  # the template writes this parameter's strings unquoted
    return python_literal_to_json(text)


def _only_string(tool: ToolSpec | None, name: str) -> bool:
    schema: Any = tool.property_schema(name) if tool is not None else None
    return isinstance(schema, dict) and only_string(schema)


# Outside strings, a validated Python literal differs from JSON only in its keywords; numbers are JSON numbers.
_PY_TOKEN = re.compile(r"""'([^'\\]*(?:\\[\s\S][^'\\]*)*)'|"([^"\\]*(?:\\[\s\S][^"\\]*)*)"|True|False|None""")
_KEYWORDS = {"True": "true", "False": "false", "None": "null"}
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|N\{[^}]*\}|[0-7]{1,3}|\r\n|[\s\S])")
_SIMPLE_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "v": "\v",
    "\n": "",  # a backslash before a line break continues the string
    "\r\n": "",
    "\r": "",
}
_SURROGATE = re.compile("[\ud800-\udfff]")


def python_literal_to_json(text: str) -> str:
    """JSON text for a (validated) Python literal: strings re-quoted with their escapes decoded the Python way,
    ``True``/``False``/``None`` as ``true``/``false``/``null``; everything else (JSON's own keywords too) is already
    JSON."""

    def token(match: re.Match[str]) -> str:
        word = match.group()
        if word in _KEYWORDS:
            return _KEYWORDS[word]
        body = match.group(1) if match.group(1) is not None else match.group(2)
        return json.dumps(decode_python_escapes(body), ensure_ascii=False)

    return _PY_TOKEN.sub(token, text)


def decode_python_escapes(body: str) -> str:
    """The value of a Python string literal's body. Unknown escapes keep their backslash (as Python does); escapes
    Python rejects (``\\N{bad name}``) are kept as written, since model output must never make parsing fail. A
    surrogate pair written as two ``\\u`` escapes (JSON habit) becomes the one character it encodes."""
    if "\\" not in body:
        return body

    def escape(match: re.Match[str]) -> str:
        seq = match.group(1)
        simple = _SIMPLE_ESCAPES.get(seq)
        if simple is not None:
            return simple
        kind = seq[0]
        if kind in "xuU" and len(seq) > 1:
            code = int(seq[1:], 16)
            return chr(code) if code <= 0x10FFFF else match.group()
        if kind == "N" and len(seq) > 1:
            try:
                return unicodedata.lookup(seq[2:-1])
            except KeyError:
                return match.group()
        if kind in "01234567":
            return chr(int(seq, 8))
        return match.group()

    value = _ESCAPE.sub(escape, body)
    if _SURROGATE.search(value):
        value = value.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")
    return value
