"""Reading a tagged argument's value (``<parameter=x>VALUE</parameter>``) as its parameter's schema types it.

Templates print values in one of two spellings: ``tojson`` (``true``, ``null``, ``{"k": 1}``) or Python's ``str()``
(``True``, ``None``, ``{'k': 1}``) — Qwen3-Coder, Qwen3.5, Nemotron-3 and StepFun print booleans and null the Python
way and containers as JSON, Seed-OSS prints everything the Python way. Models copy their template, and sometimes
the other spelling, so both are read. Which reading wins is the schema's call:

* a parameter only a string satisfies keeps the raw text (tagged :data:`~..tags.TOOL_ARG_STRING`, streamed as it
  arrives);
* any other parameter with known JSON types gets a value tag naming them (``tool-arg-value:boolean|null``): a JSON
  or Python literal of one of those types is that value (``True``/``true`` -> ``true``, ``None``/``null`` ->
  ``null`` where null is allowed, a Python dict -> a JSON object); otherwise the raw text is a string if strings are
  allowed, and else the literal as written (JSON, or the Python literal converted), or the raw text as a string;
* a parameter without a usable schema, an argument name the tool does not declare and every argument of an
  undeclared tool are untyped (plain :data:`~..tags.TOOL_ARG_VALUE`): JSON when the text is JSON, else a string.

The types travel in the tag so the mapper needs no access to the request. Values are shown once complete (a
string-or-null value could still turn out to be ``None``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ...peg.json_scan import OK, scan_json
from .. import tags
from ..schema_types import only_string
from .python_literals import python_literal_to_json

__all__ = [
    "decode_cut_value",
    "decode_value",
    "is_value_tag",
    "json_types",
    "json_value_tag",
    "misfit",
    "value_tag",
]

_WHITESPACE = " \t\r\n"
_TYPES = frozenset({"string", "number", "integer", "boolean", "null", "object", "array"})
_SEPARATOR = ":"
_INTEGER = re.compile(r"-?\d+")


def value_tag(schema: Any) -> str:
    """The tag for values of a parameter with ``schema`` (None: no schema at all)."""
    if isinstance(schema, dict) and only_string(schema):
        return tags.TOOL_ARG_STRING
    types = json_types(schema)
    if types is None:
        return tags.TOOL_ARG_VALUE
    return tags.TOOL_ARG_VALUE + _SEPARATOR + "|".join(sorted(types))


def json_value_tag(schema: Any) -> str:
    """The tag for a value the markup says is JSON, not raw text (DSML's ``string="false"``): typed by the
    schema's non-string types, untyped when there are none (a quoted JSON string is then read as JSON)."""
    types = json_types(schema)
    if types is None or not types - {"string"}:
        return tags.TOOL_ARG_VALUE
    return tags.TOOL_ARG_VALUE + _SEPARATOR + "|".join(sorted(types - {"string"}))


def is_value_tag(tag: str | None) -> bool:
    """Whether ``tag`` marks a tagged value read as JSON (typed or untyped)."""
    return tag is not None and (tag == tags.TOOL_ARG_VALUE or tag.startswith(tags.TOOL_ARG_VALUE + _SEPARATOR))


def json_types(schema: Any) -> frozenset[str] | None:
    """The JSON types a value of ``schema`` may have, or None when the schema does not say (no ``type``, an
    unresolved ``$ref``, a branch that says nothing)."""
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if isinstance(kind, str):
        return frozenset({kind}) & _TYPES or None
    if isinstance(kind, list):
        return frozenset(k for k in kind if isinstance(k, str)) & _TYPES or None
    if "const" in schema:
        return frozenset({_type_of_value(schema["const"])})
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return frozenset(_type_of_value(v) for v in enum)
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            found = [json_types(b) for b in branches]
            if any(f is None for f in found):
                return None
            return frozenset().union(*(f for f in found if f is not None))
    parts = schema.get("allOf")
    if isinstance(parts, list):
        known = [t for t in (json_types(p) for p in parts) if t is not None]
        if known:
            return frozenset.intersection(*known) or None
    if "properties" in schema or "additionalProperties" in schema:
        return frozenset({"object"})
    if "items" in schema or "prefixItems" in schema:
        return frozenset({"array"})
    return None


def _type_of_value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def decode_value(tag: str, text: str) -> str:
    """JSON text for the complete value ``text`` of a value tag (see the module docstring)."""
    stripped = text.strip(_WHITESPACE)
    if tag == tags.TOOL_ARG_VALUE:  # untyped
        return stripped if _is_json(stripped) else json.dumps(text, ensure_ascii=False)
    types = frozenset(tag[len(tags.TOOL_ARG_VALUE) + 1 :].split("|"))
    literal = _literal(stripped)
    if literal is not None and _fits(literal, types):
        return literal
    if "string" in types:
        return json.dumps(text, ensure_ascii=False)
    return literal if literal is not None else json.dumps(text, ensure_ascii=False)


def misfit(tag: str, text: str) -> frozenset[str] | None:
    """The types of a typed value tag when the complete value ``text`` is none of them (:func:`decode_value` then
    keeps it as written: ``three`` of an integer parameter is the string ``"three"``); None when it fits or the tag
    is untyped. A value its schema does not admit is a repair the mapper warns about, not a complete call."""
    if tag == tags.TOOL_ARG_VALUE:
        return None
    types = frozenset(tag[len(tags.TOOL_ARG_VALUE) + 1 :].split("|"))
    if "string" in types:
        return None
    literal = _literal(text.strip(_WHITESPACE))
    return None if literal is not None and _fits(literal, types) else types


def decode_cut_value(tag: str, text: str) -> str | None:
    """JSON text for a value cut off by the end of the output (or a call that broke there): read as its schema types
    a complete one (``3`` of an integer parameter is ``3``) when it is a literal of one of its types, or kept as a
    string where strings are allowed (untyped values too); None (left out) when it is neither — ``{'a`` of an
    object parameter is no value of it."""
    stripped = text.strip(_WHITESPACE)
    if not stripped:
        return None
    if tag == tags.TOOL_ARG_VALUE:
        return decode_value(tag, text)
    types = frozenset(tag[len(tags.TOOL_ARG_VALUE) + 1 :].split("|"))
    literal = _literal(stripped)
    if literal is not None and _fits(literal, types):
        return literal
    return json.dumps(text, ensure_ascii=False) if "string" in types else None


def _is_json(text: str) -> bool:
    """Checked by the iterative scanner: any nesting depth, and no NaN or Infinity (not JSON)."""
    return bool(text) and scan_json(text, 0, "value", "json", False) == (OK, len(text))


def _literal(text: str) -> str | None:
    """``text`` as JSON text if it is a JSON literal or a Python one, JSON's keywords mixed in (converted), else
    None."""
    if _is_json(text):
        return text
    if text and scan_json(text, 0, "value", "pythonic", False) == (OK, len(text)):
        return python_literal_to_json(text)  # (either keyword spelling, mixed: ``{'a': true, 'b': None}``)
    return None


def _fits(literal: str, types: frozenset[str]) -> bool:
    """Whether the JSON ``literal`` has one of ``types`` (an integer is a number too, and an integral number may
    stand for an integer: ``3.0``). A quoted string never fits: where strings are allowed the raw text is the
    string, quotes and all, as for a string-only parameter."""
    first = literal[0]
    if first == "{":
        kind = "object"
    elif first == "[":
        kind = "array"
    elif first == '"':
        return False
    elif first in "tf":
        kind = "boolean"
    elif first == "n":
        kind = "null"
    else:
        return bool(types & {"number", "integer"}) and (
            "number" in types or _INTEGER.fullmatch(literal) is not None or _integral(literal)
        )
    return kind in types


def _integral(number: str) -> bool:
    try:
        return float(number).is_integer()
    except (ValueError, OverflowError):
        return False
