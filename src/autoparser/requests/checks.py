"""What a request must be before anything is built from it: JSON data of bounded depth without lone surrogates, and
JSON schemas that are JSON Schema.

A request comes from a client, and a server in front of the library must answer a malformed one with an error naming
the field, never with a crash in a later step: a string holding a lone surrogate (``"a\\ud800b"``, which JSON
allows and UTF-8 cannot encode) fails only when the prompt is sent; data nested a thousand levels deep exhausts the
interpreter's stack in whatever walks it first (copying, rendering, serialising); a schema with ``"type": "x"``, a
``pattern`` that is not a regular expression or a ``$ref`` to another document fails only when its grammar is
written, long after the request was accepted. Each check here raises :class:`~autoparser.errors.RequestError` with
the field's path (``tools[0].function.parameters.properties.city.pattern``).

The schema check is the part of JSON Schema's meta-schema that decides whether a schema means anything (keyword
value types, type names, regular expressions, local references), written here rather than taken from
``jsonschema``: the library's runtime needs only Jinja, and the meta-schema alone would let a remote ``$ref`` by.
Whether a valid schema can become a grammar is the grammar writer's question (``SchemaError``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import RequestError
from ..peg.lowering.json_schema import resolve_local_ref

__all__ = ["MAX_DEPTH", "check_json_data", "check_schema", "field_path", "json_depth"]

#: How deep request data may nest (objects and arrays; the top level is 1). Far deeper than any real request (a
#: message part is 4 levels down, a tool schema rarely past 10) and far below what exhausts the interpreter's stack.
MAX_DEPTH = 64

_SURROGATE = re.compile("[\ud800-\udfff]")
_TYPES = frozenset({"string", "number", "integer", "boolean", "null", "object", "array"})
_SCHEMA = ("additionalProperties", "additionalItems", "not", "if", "then", "else", "contains", "propertyNames",
           "unevaluatedProperties", "unevaluatedItems", "contentSchema")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")
_COUNTS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains",
           "maxContains")
_NUMBERS = ("minimum", "maximum", "multipleOf")
_STRINGS = ("title", "description", "format", "$id", "$schema", "$comment", "$anchor", "contentEncoding",
            "contentMediaType")


def field_path(field: str, *keys: str | int) -> str:
    """``field`` followed by ``keys``: ``.name`` for an object's key, ``[i]`` for an array's index."""
    for key in keys:
        field = f"{field}[{key}]" if isinstance(key, int) else f"{field}.{key}" if field else str(key)
    return field


def _where(field: str, link: tuple[Any, str | int] | None, most: int | None = None) -> str:
    """The path of ``link`` below ``field`` (its first ``most`` keys: a path that nests too deeply is named by
    where it starts)."""
    keys: list[str | int] = []
    while link is not None:
        link, key = link
        keys.append(key)
    return field_path(field, *reversed(keys[-most:] if most is not None else keys))


_CONTAINERS = (Mapping, list, tuple)


def _children(value: Any) -> Iterator[tuple[str | int, Any]]:
    return iter(value.items()) if isinstance(value, Mapping) else enumerate(value)


def json_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deep ``value`` nests (a scalar: 0), counted up to ``limit + 1`` and no further."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, _CONTAINERS):
            continue
        deepest = max(deepest, depth)
        if depth > limit:
            return depth
        stack.extend((child, depth + 1) for _, child in _children(item))
    return deepest


def check_json_data(value: Any, field: str = "", max_depth: int = MAX_DEPTH) -> None:
    """Raise :class:`RequestError` naming the place where ``value`` nests deeper than ``max_depth`` or holds a
    string (or object key) with a lone surrogate. Iterative, so any depth is safe to look at."""
    if isinstance(value, str):
        _check_text(value, field, None)
    if not isinstance(value, _CONTAINERS):
        return
    stack: list[tuple[Any, tuple[Any, str | int] | None, int]] = [(value, None, 1)]
    while stack:
        item, link, depth = stack.pop()
        if depth > max_depth:
            raise RequestError(_where(field, link, 8) or "body", f"nests deeper than {max_depth} levels")
        for key, child in _children(item):
            if isinstance(key, str):
                _check_text(key, field, link)
            if isinstance(child, str):
                _check_text(child, field, (link, key))
            elif isinstance(child, _CONTAINERS):
                stack.append((child, (link, key), depth + 1))


def _check_text(text: str, field: str, link: tuple[Any, str | int] | None) -> None:
    if not text.isascii() and _SURROGATE.search(text):
        raise RequestError(_where(field, link) or "body", "holds a lone surrogate (not valid Unicode text)")


def check_schema(schema: Any, field: str, max_depth: int = MAX_DEPTH) -> None:
    """Raise :class:`RequestError` naming the keyword (``field`` then the schema path) where ``schema`` is not a JSON
    Schema: a sub-schema that is neither an object nor a boolean, a keyword whose value has the wrong type, an
    unknown type name, a ``pattern`` that is not a regular expression, a ``$ref`` that is not a local reference to
    a part of the schema, nesting deeper than ``max_depth``."""
    _Schema(schema, max_depth).check(schema, field, 1)


class _Schema:
    def __init__(self, root: Any, max_depth: int) -> None:
        self.root = root
        self.max_depth = max_depth

    def check(self, schema: Any, field: str, depth: int) -> None:
        if isinstance(schema, bool):
            return
        if not isinstance(schema, dict):
            raise RequestError(field, f"a schema must be an object or a boolean, got {_kind(schema)}")
        if depth > self.max_depth:
            raise RequestError(field, f"the schema nests deeper than {self.max_depth} levels")
        self._type(schema, field)
        for key in _SCHEMA:
            if key in schema:
                self.check(schema[key], field_path(field, key), depth + 1)
        for key in _SCHEMA_MAPS:
            if key in schema:
                value = schema[key]
                if not isinstance(value, dict):
                    raise RequestError(field_path(field, key), f"must be an object of schemas, got {_kind(value)}")
                for name, sub in value.items():
                    if key == "patternProperties":
                        _regex(name, field_path(field, key, name))
                    self.check(sub, field_path(field, key, name), depth + 1)
        for key in _SCHEMA_LISTS:
            if key in schema:
                self._list(schema[key], field_path(field, key), depth, empty=key == "prefixItems")
        if "items" in schema:
            items = schema["items"]
            if isinstance(items, list):  # draft 4-7 tuple form
                self._list(items, field_path(field, "items"), depth, empty=True)
            else:
                self.check(items, field_path(field, "items"), depth + 1)
        self._keywords(schema, field)

    def _type(self, schema: dict[str, Any], field: str) -> None:
        if "type" not in schema:
            return
        kind = schema["type"]
        names = kind if isinstance(kind, list) else [kind]
        where = field_path(field, "type")
        if not names or not all(isinstance(n, str) for n in names):
            raise RequestError(where, "must be a type name or a non-empty array of type names")
        unknown = [n for n in names if n not in _TYPES]
        if unknown:
            raise RequestError(where, f"{unknown[0]!r} is not a JSON Schema type ({', '.join(sorted(_TYPES))})")
        if len(set(names)) != len(names):
            raise RequestError(where, "names a type twice")

    def _list(self, value: Any, field: str, depth: int, *, empty: bool) -> None:
        if not isinstance(value, list) or (not value and not empty):
            raise RequestError(field, f"must be {'an' if empty else 'a non-empty'} array of schemas")
        for i, sub in enumerate(value):
            self.check(sub, field_path(field, i), depth + 1)

    def _keywords(self, schema: dict[str, Any], field: str) -> None:
        for key in _COUNTS:
            value = schema.get(key)
            if key in schema and not (_is_number(value) and value >= 0 and value == int(value)):
                raise RequestError(field_path(field, key), f"must be a non-negative integer, got {value!r}")
        for key in (*_NUMBERS, "exclusiveMinimum", "exclusiveMaximum"):
            value = schema.get(key)
            if key in schema and not (_is_number(value) or (key.startswith("exclusive") and isinstance(value, bool))):
                raise RequestError(field_path(field, key), f"must be a number, got {_kind(value)}")
        if "multipleOf" in schema and schema["multipleOf"] <= 0:
            raise RequestError(field_path(field, "multipleOf"), "must be greater than 0")
        for key in _STRINGS:
            if key in schema and not isinstance(schema[key], str):
                raise RequestError(field_path(field, key), f"must be a string, got {_kind(schema[key])}")
        if "pattern" in schema:
            _regex(schema["pattern"], field_path(field, "pattern"))
        if "required" in schema:
            required = schema["required"]
            if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
                raise RequestError(field_path(field, "required"), "must be an array of property names")
        if "enum" in schema and not isinstance(schema["enum"], list):
            raise RequestError(field_path(field, "enum"), f"must be an array, got {_kind(schema['enum'])}")
        if "$ref" in schema:
            self._ref(schema["$ref"], field_path(field, "$ref"))

    def _ref(self, ref: Any, field: str) -> None:
        if not isinstance(ref, str):
            raise RequestError(field, f"must be a string, got {_kind(ref)}")
        if not (ref == "#" or ref.startswith("#/")):
            raise RequestError(field, f"only references inside the schema ('#/$defs/...') are supported, got {ref!r}")
        if resolve_local_ref(self.root, ref) is None:
            raise RequestError(field, f"{ref!r} names no part of the schema")


def _regex(pattern: Any, field: str) -> None:
    if not isinstance(pattern, str):
        raise RequestError(field, f"must be a regular expression (a string), got {_kind(pattern)}")
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as err:
        raise RequestError(field, f"{pattern!r} is not a regular expression: {err}") from None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _kind(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number" if isinstance(value, int | float) else type(value).__name__
    )
