"""The combinator functions: the public way to build parsers.

Typical use::

    from autoparser import peg as p
    think = p.optional("<think>" + p.tag("reasoning", p.until("</think>")) + "</think>")
    parser = think + p.space() + p.tag("content", p.rest()) + p.end()
    parser.parse("<think>hmm</think> Hi").tag_text("content")   # 'Hi'
"""

from __future__ import annotations

import json as _json_module
from collections.abc import Iterable
from typing import Any

from ..errors import GrammarError
from .charclass import parse_char_class
from .json_scan import dict_syntax
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
    JsonFlavor,
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
    coerce,
)

__all__ = [
    "any_char",
    "atomic",
    "chars",
    "choice",
    "commit",
    "end",
    "eps",
    "json",
    "json_array",
    "json_bool",
    "json_member",
    "json_not_known_invalid",
    "json_null",
    "json_number",
    "json_object",
    "json_string",
    "json_string_content",
    "literal",
    "negate",
    "one_or_more",
    "optional",
    "peek",
    "python_value",
    "recover",
    "ref",
    "repeat",
    "rest",
    "rule",
    "schema",
    "sequence",
    "space",
    "start",
    "tag",
    "trigger_rule",
    "until",
    "until_one_of",
    "until_viable_json",
    "with_gbnf",
    "zero_or_more",
]

_FLAVORS = ("json", "python", "pythonic", "gemma")


def eps() -> Parser:
    """Match nothing, always succeed."""
    return Eps()


def start() -> Parser:
    """Match only at the start of the input."""
    return Start()


def end() -> Parser:
    """Match only at the end of the input."""
    return End()


def literal(text: str) -> Parser:
    """Match ``text`` exactly."""
    if not isinstance(text, str):
        raise GrammarError(f"literal() needs a str, got {type(text).__name__}")
    return Literal(text)


def any_char() -> Parser:
    """Match one code point."""
    return AnyChar()


def chars(char_class: str, min: int = 1, max: int = -1) -> Parser:
    """Match ``min``..``max`` (``-1``: unbounded) code points of a class such as ``"[a-zA-Z_]"``."""
    return Chars(parse_char_class(char_class), char_class, min, max)


def sequence(*parts: Parser | str) -> Parser:
    """Match ``parts`` in order."""
    return Sequence.of(*parts)


def choice(*parts: Parser | str) -> Parser:
    """Ordered choice: the first alternative that does not fail."""
    return Choice.of(*parts)


def repeat(p: Parser | str, min: int, max: int | None = None) -> Parser:
    """``p`` between ``min`` and ``max`` times; ``repeat(p, n)`` is exactly ``n``; ``max=-1`` unbounded."""
    return Repeat(coerce(p), min, min if max is None else max)


def optional(p: Parser | str) -> Parser:
    """Zero or one ``p``."""
    return Repeat(coerce(p), 0, 1)


def zero_or_more(p: Parser | str) -> Parser:
    """Any number of ``p``."""
    return Repeat(coerce(p), 0, -1)


def one_or_more(p: Parser | str) -> Parser:
    """At least one ``p``."""
    return Repeat(coerce(p), 1, -1)


def peek(p: Parser | str) -> Parser:
    """Positive lookahead (``&p``)."""
    return Peek(coerce(p))


def negate(p: Parser | str) -> Parser:
    """Negative lookahead (``!p``)."""
    return Negate(coerce(p))


def space() -> Parser:
    """Zero or more whitespace characters."""
    return Space()


def until(delimiter: str) -> Parser:
    """Everything up to (not including) ``delimiter``, or to the end of input."""
    return until_one_of([delimiter])


def until_one_of(delimiters: Iterable[str]) -> Parser:
    """Everything up to (not including) the first of ``delimiters``."""
    items = tuple(delimiters)
    if isinstance(delimiters, str) or not all(isinstance(d, str) and d for d in items):
        raise GrammarError(f"until_one_of() needs non-empty string delimiters, got {delimiters!r}")
    if not items:
        raise GrammarError("until_one_of() needs at least one delimiter (use rest() for everything)")
    return Until(items)


def rest() -> Parser:
    """Everything up to the end of input."""
    return Until(())


def rule(name: str, p: Parser | str) -> Parser:
    """A named rule; ``ref(name)`` refers to it, also from inside ``p`` (recursion)."""
    return Rule(_rule_name(name), coerce(p), False)


def trigger_rule(name: str, p: Parser | str) -> Parser:
    """A named rule that starts a lazy grammar (see :func:`~autoparser.peg.lowering.gbnf.to_gbnf`)."""
    return Rule(_rule_name(name), coerce(p), True)


def ref(name: str) -> Parser:
    """Reference to the rule called ``name``."""
    return Ref(_rule_name(name))


def commit() -> Parser:
    """Mark the enclosing structure as committed (see :func:`recover`); consumes nothing."""
    return Commit()


def recover(
    p: Parser | str,
    *,
    rest: tuple[str, ...] | list[str] | None = None,
    balanced: str = "",
    quotes: str = '"',
    closers: tuple[str, ...] | list[str] = (),
    rest_tag: str = "rest",
    whole_words: bool = False,
) -> Parser:
    """``p``, kept as it stood on its longest viable prefix if it fails after a :func:`commit` (see
    :class:`~.nodes.Recover`): once a stream has announced a structure, a complete parse keeps it. With ``rest``
    (stop strings; ``balanced``: opening brackets, ``"{["``, whose closing one also ends the rest; strings quoted
    with ``quotes`` are skipped) the rest of a broken structure is skipped into a node tagged ``rest_tag``, then its
    ``closers`` are consumed where they follow. ``whole_words``: that prefix never ends inside a word."""
    if rest is not None and any(not stop for stop in rest):
        raise GrammarError("recover(): rest stops must be non-empty strings")
    if any(b not in "{[(" for b in balanced) or any(q not in "\"'" for q in quotes):
        raise GrammarError(f"recover(): unsupported brackets {balanced!r} or quotes {quotes!r}")
    stops = None if rest is None else tuple(sorted(set(rest), key=len, reverse=True))
    return Recover(coerce(p), stops, balanced, quotes, tuple(c for c in closers if c), rest_tag, whole_words)


def atomic(p: Parser | str) -> Parser:
    """Drop ``p``'s AST nodes while it is incomplete (e.g. a tool name not fully received yet)."""
    return Atomic(coerce(p))


def tag(name: str, p: Parser | str) -> Parser:
    """Tag the text matched by ``p`` in the AST."""
    if not isinstance(name, str) or not name:
        raise GrammarError(f"tag() needs a non-empty name, got {name!r}")
    return Tag(name, coerce(p))


def schema(p: Parser | str, name: str, json_schema: Any, raw: bool = False) -> Parser:
    """Parse as ``p``; in grammars, emit the grammar of ``json_schema`` (``raw``: an unquoted string)."""
    return Schema(coerce(p), _rule_name(name), json_schema, raw)


def with_gbnf(p: Parser | str, grammar: str) -> Parser:
    """Parse as ``p``; in grammars, emit ``grammar`` verbatim."""
    return Gbnf(coerce(p), grammar)


def _flavor(flavor: str) -> JsonFlavor:
    if flavor not in _FLAVORS and dict_syntax(flavor) is None:
        raise GrammarError(f"unknown flavor {flavor!r}; expected 'json', 'python', 'pythonic' or 'gemma'")
    return flavor  # type: ignore[return-value]


def json(flavor: str = "json", *, private: bool = False, canonical: bool = False) -> Parser:
    """Any JSON value (``flavor="python"``: a Python literal with ``'`` strings, True/False/None; ``"pythonic"``:
    a Python literal that may also spell its keywords the JSON way, true/false/null, as models calling tools
    Python-style do). ``private``: what its scans find out about the values inside stays unknown to the guards of
    other alternatives; ``canonical``: the parse records whether a complete object or array is strict JSON with
    every key once per object (see :class:`~.nodes.Json`)."""
    return Json("value", _flavor(flavor), private, canonical)


def python_value() -> Parser:
    """Any Python literal value (dicts, lists, quoted strings, numbers, True/False/None)."""
    return Json("value", "python")


def json_object(flavor: str = "json", *, canonical: bool = False) -> Parser:
    """A JSON object (``flavor="gemma"``: Gemma 4's argument dict, with bare keys and values and ``<|"|>`` strings;
    ``json_scan.dict_flavor(syntax)`` names another syntax of that family; these have no grammar writer).
    ``canonical`` as for :func:`json`."""
    return Json("object", _flavor(flavor), canonical=canonical)


def json_array(flavor: str = "json") -> Parser:
    """A JSON array."""
    return Json("array", _flavor(flavor))


def json_string(flavor: str = "json") -> Parser:
    """A quoted JSON string."""
    return Json("string", _flavor(flavor))


def json_not_known_invalid(kind: str = "object", flavor: str = "json") -> Parser:
    """Fail only where the parse already knows the JSON ``kind`` at this position is malformed (see
    :class:`~.nodes.JsonNotKnownInvalid`); consumes nothing."""
    return JsonNotKnownInvalid(kind, _flavor(flavor))  # type: ignore[arg-type]


def until_viable_json(opener: str = "{", flavor: str = "json", stops: Iterable[str] = ()) -> Parser:
    """Text up to the next ``opener`` that may start a JSON object (``{``) or array (``[``), skipping openers known
    to start a malformed one (see :class:`~.nodes.UntilViableJson`), or up to the first of ``stops``."""
    kinds = {"{": "object", "[": "array"}
    if opener not in kinds:
        raise GrammarError(f"until_viable_json(): opener must be '{{' or '[', got {opener!r}")
    if isinstance(stops, str) or not all(isinstance(d, str) and d for d in stops):
        raise GrammarError(f"until_viable_json() needs non-empty string stops, got {stops!r}")
    return UntilViableJson(opener, kinds[opener], _flavor(flavor), tuple(stops))  # type: ignore[arg-type]


def json_number() -> Parser:
    """A JSON number (at the end of partial input it never commits)."""
    return Json("number", "json")


def json_bool(flavor: str = "json") -> Parser:
    """``true``/``false`` (Python flavor: ``True``/``False``)."""
    return Json("bool", _flavor(flavor))


def json_null(flavor: str = "json") -> Parser:
    """``null`` (Python flavor: ``None``)."""
    return Json("null", _flavor(flavor))


def json_string_content(quote: str = '"', flavor: str = "json") -> Parser:
    """The body of a string up to the unescaped closing ``quote`` (not consumed)."""
    if quote not in ('"', "'"):
        raise GrammarError(f"json_string_content(): quote must be ' or \", got {quote!r}")
    return StringContent(quote, _flavor(flavor))


def json_member(key: str, p: Parser | str) -> Parser:
    """An object member ``"key": p`` with optional whitespace around the colon."""
    return Sequence.of(Literal(_json_module.dumps(key, ensure_ascii=False)), Space(), ":", Space(), p)


def _rule_name(name: str) -> str:
    if not isinstance(name, str) or not name:
        raise GrammarError(f"rule names must be non-empty strings, got {name!r}")
    return name
