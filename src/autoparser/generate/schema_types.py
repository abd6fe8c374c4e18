"""Whether a tool parameter's JSON schema admits a string (tagged formats then take the value's raw text)."""

from __future__ import annotations

from typing import Any

__all__ = ["accepts_string"]

_STRING_FORMATS = {"date", "time", "date-time", "uri", "email", "hostname", "ipv4", "ipv6", "uuid"}


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
