"""Whether a tool parameter's JSON schema admits a string (tagged formats then take the value's raw text), and the
schema split into its string and non-string parts (a raw value is checked against the first, JSON against the other)."""

from __future__ import annotations

from typing import Any

__all__ = ["accepts_string", "constrains_text", "non_string_part", "only_string", "string_part"]

_STRING_FORMATS = {"date", "time", "date-time", "uri", "email", "hostname", "ipv4", "ipv6", "uuid"}


_TEXT_CONSTRAINTS = frozenset(
    {"enum", "const", "pattern", "format", "minLength", "maxLength", "anyOf", "oneOf", "allOf", "$ref", "not"}
)


def constrains_text(schema: dict[str, Any]) -> bool:
    """Whether a string-accepting schema may limit the raw text of a value (then the converter decides how); one
    that does not leaves any text up to the value's end tag."""
    return not _TEXT_CONSTRAINTS.isdisjoint(schema)


def accepts_string(schema: Any) -> bool:
    """True if a JSON string can satisfy ``schema`` (string types, string enums/consts, string formats, any branch
    of anyOf/oneOf). An absent or empty schema accepts anything, but values are then read as JSON when they are."""
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    if kind == "string" or (isinstance(kind, list) and "string" in kind):
        return True
    if isinstance(schema.get("const"), str):
        return True
    enum = schema.get("enum")
    if isinstance(enum, list) and any(isinstance(v, str) for v in enum):
        return True
    if kind is None and ("pattern" in schema or "minLength" in schema or "maxLength" in schema):
        return True
    if kind is None and schema.get("format") in _STRING_FORMATS:
        return True
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and any(accepts_string(b) for b in branches):
            return True
    parts = schema.get("allOf")
    return isinstance(parts, list) and bool(parts) and all(accepts_string(p) for p in parts)


def only_string(schema: dict[str, Any]) -> bool:
    """True if only a string satisfies ``schema`` (then ``string="false"`` is never right): the converse of
    :func:`accepts_string`, with the same reading of untyped ``pattern``/length/format schemas as strings."""
    kind = schema.get("type")
    if kind == "string" or kind == ["string"] or isinstance(schema.get("const"), str):
        return True
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
        return True
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            return all(isinstance(b, dict) and only_string(b) for b in branches)
    parts = schema.get("allOf")
    if isinstance(parts, list) and any(isinstance(b, dict) and only_string(b) for b in parts):
        return True
    return kind is None and accepts_string(schema)


def string_part(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` narrowed to strings, for the raw-text converter (which rejects non-string branches)."""
    narrowed = dict(schema)
    kind = schema.get("type")
    if isinstance(kind, list) and "string" in kind:
        narrowed["type"] = "string"
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            _narrow(narrowed, key, [string_part(b) for b in branches if isinstance(b, dict) and accepts_string(b)])
    return narrowed


def non_string_part(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without its string alternatives: a string is written with ``string="true"``."""
    narrowed = dict(schema)
    kind = schema.get("type")
    if isinstance(kind, list) and "string" in kind:
        narrowed["type"] = [k for k in kind if k != "string"]
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            _narrow(narrowed, key, [b for b in branches if not (isinstance(b, dict) and only_string(b))])
    return narrowed


def _narrow(schema: dict[str, Any], key: str, branches: list[Any]) -> None:
    """Keep the ``key`` (anyOf/oneOf) branches that fit; none fitting leaves the rest of the schema to decide."""
    if branches:
        schema[key] = branches
    else:
        del schema[key]
