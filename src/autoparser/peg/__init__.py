"""PEG parsing engine: streaming-aware combinators, JSON parsers, GBNF generation.

Build parsers with the functions here (``from autoparser import peg as p``), run them with
``parser.parse(text, partial=...)`` and write grammars with ``parser.to_gbnf(lazy=...)``. The short names
``any``, ``object``, ``array``, ``string``, ``string_content``, ``number``, ``bool``, ``null`` and ``member``
are aliases of the ``any_char`` / ``json_*`` functions (they shadow builtins only inside this namespace).
"""

from __future__ import annotations

from .ast import AstNode, ParseResult, Status, TextBuffer, Visitor
from .builders import (
    any_char,
    atomic,
    chars,
    choice,
    commit,
    end,
    eps,
    json,
    json_array,
    json_bool,
    json_member,
    json_not_known_invalid,
    json_null,
    json_number,
    json_object,
    json_string,
    json_string_content,
    literal,
    negate,
    one_or_more,
    optional,
    peek,
    python_value,
    recover,
    ref,
    repeat,
    rest,
    rule,
    schema,
    sequence,
    space,
    start,
    tag,
    trigger_rule,
    until,
    until_one_of,
    until_viable_json,
    with_gbnf,
    zero_or_more,
)
from .engine import CompiledParser, ParseSession
from .lowering.gbnf import to_gbnf
from .lowering.lark import to_lark
from .nodes import Parser, install_backends

install_backends(compile=CompiledParser, gbnf=to_gbnf, lark=to_lark)

any = any_char
object = json_object
array = json_array
string = json_string
string_content = json_string_content
number = json_number
bool = json_bool
null = json_null
member = json_member

__all__ = [
    "AstNode",
    "CompiledParser",
    "ParseResult",
    "ParseSession",
    "Parser",
    "Status",
    "TextBuffer",
    "Visitor",
    "any",
    "any_char",
    "array",
    "atomic",
    "bool",
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
    "member",
    "negate",
    "null",
    "number",
    "object",
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
    "string",
    "string_content",
    "tag",
    "to_gbnf",
    "to_lark",
    "trigger_rule",
    "until",
    "until_one_of",
    "until_viable_json",
    "with_gbnf",
    "zero_or_more",
]
