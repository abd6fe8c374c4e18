"""Merge the members of an ``allOf`` into one schema (the intersection, for the cases a grammar needs).

Object schemas merge as a union of ``properties`` and ``required`` (the common "base model + extension"
shape); a property defined by several members becomes ``{"allOf": [...]}`` and is merged lazily when
the converter reaches it. Simple scalar keywords are intersected (types, enums, length and numeric
bounds); ``anyOf``/``oneOf`` members are distributed over the alternatives. Anything else that differs
between members raises :class:`SchemaError`, because silently picking one would change the language.
"""

from __future__ import annotations

import json
from typing import Any

from ...errors import SchemaError

__all__ = ["ANNOTATIONS", "Unsatisfiable", "canonical_json", "merge_schemas"]


class Unsatisfiable(SchemaError):
    """No JSON value satisfies the sub-schema (``false``, disjoint types, empty enum, min > max).

    Where a schema offers a way around it (an ``anyOf`` alternative, an optional property) the part
    is dropped; elsewhere it surfaces as an ordinary :class:`SchemaError`.
    """


#: Keywords with no effect on the accepted language.
ANNOTATIONS = frozenset({
    "title", "description", "default", "examples", "example", "$schema", "$id", "$comment", "$anchor",
    "deprecated", "readOnly", "writeOnly", "$defs", "definitions",
})
#: Lower bounds (the intersection takes the larger one) and upper bounds (the smaller one).
_TAKE_MAX = frozenset({"minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum"})
_TAKE_MIN = frozenset({"maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum"})
_SUBSCHEMA_UNIONS = frozenset({"items", "additionalProperties", "unevaluatedProperties", "propertyNames"})


def canonical_json(value: Any, path: str, *, ensure_ascii: bool = False) -> str:
    """Compact JSON text of a schema value (for ``const``/``enum``); SchemaError when not JSON."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=ensure_ascii, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise SchemaError(path, f"value is not valid JSON: {exc}") from None


def _types(value: Any, path: str) -> set[str]:
    types = [value] if isinstance(value, str) else value
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise SchemaError(f"{path}/type", "type must be a string or a list of strings")
    return set(types)


def _intersect_types(a: set[str], b: set[str]) -> set[str]:
    out = a & b
    if ("integer" in a and "number" in b) or ("number" in a and "integer" in b):
        out.add("integer")
    return out


def _both(a: Any, b: Any) -> Any:
    """Intersection of two sub-schemas (``true`` is neutral, ``false`` absorbs)."""
    if a is True or a == {}:
        return b
    if b is True or b == {}:
        return a
    if a is False or b is False:
        return False
    return {"allOf": [a, b]}


def _merge_key(merged: dict[str, Any], key: str, value: Any, path: str) -> None:
    if key not in merged:
        merged[key] = value
        return
    old = merged[key]
    if key == "type":
        types = _intersect_types(_types(old, path), _types(value, path))
        if not types:
            raise Unsatisfiable(f"{path}/type", "allOf members have no type in common")
        merged[key] = sorted(types)
    elif key == "properties":
        if not isinstance(old, dict) or not isinstance(value, dict):
            raise SchemaError(f"{path}/properties", "properties must be an object")
        props = dict(old)
        for name, sub in value.items():
            props[name] = _both(props[name], sub) if name in props else sub
        merged[key] = props
    elif key == "required":
        if not isinstance(old, list) or not isinstance(value, list):
            raise SchemaError(f"{path}/required", "required must be a list")
        merged[key] = list(dict.fromkeys([*old, *value]))
    elif key == "const":
        if canonical_json(old, f"{path}/const") != canonical_json(value, f"{path}/const"):
            raise Unsatisfiable(f"{path}/const", "allOf members require different constants")
    elif key in _SUBSCHEMA_UNIONS:
        merged[key] = _both(old, value)
    elif key == "enum":
        if not isinstance(old, list) or not isinstance(value, list):
            raise SchemaError(f"{path}/enum", "enum must be a list")
        keep = {canonical_json(v, f"{path}/enum") for v in value}
        merged[key] = [v for v in old if canonical_json(v, f"{path}/enum") in keep]
    elif key in _TAKE_MAX or key in _TAKE_MIN:
        if isinstance(old, bool) or isinstance(value, bool) or not isinstance(old, int | float) \
                or not isinstance(value, int | float):
            if old != value:
                raise SchemaError(f"{path}/{key}", f"cannot combine different {key!r} values in allOf")
        else:
            merged[key] = max(old, value) if key in _TAKE_MAX else min(old, value)
    elif old != value and not (key in ANNOTATIONS or key.startswith("x-")):
        raise SchemaError(f"{path}/{key}", f"cannot combine different {key!r} values in allOf")


def merge_schemas(parts: list[tuple[dict[str, Any], str]], path: str) -> dict[str, Any]:
    """Intersect flattened ``allOf`` members (no ``$ref``/``allOf`` left at their top level).

    ``parts`` pairs each member with its own path (used in error messages); ``path`` is the allOf node.
    """
    merged: dict[str, Any] = {}
    alternatives: list[list[Any]] = []
    for schema, part_path in parts:
        for key, value in schema.items():
            if key in ("anyOf", "oneOf"):
                if not isinstance(value, list) or not value:
                    raise SchemaError(f"{part_path}/{key}", f"{key} must be a non-empty list")
                alternatives.append(value)
            elif key not in ANNOTATIONS:
                _merge_key(merged, key, value, part_path)
    if "const" in merged and "enum" in merged:
        const = canonical_json(merged["const"], f"{path}/const")
        if const not in {canonical_json(v, f"{path}/enum") for v in merged.pop("enum")}:
            raise Unsatisfiable(path, "allOf: const is not among the enum values")
    if "enum" in merged and not merged["enum"]:
        raise Unsatisfiable(path, "allOf: the enums have no value in common")
    if alternatives:
        first, rest = alternatives[0], alternatives[1:]
        extra = [{"anyOf": alts} for alts in rest]
        return {"anyOf": [{"allOf": [merged, alt, *extra]} for alt in first]}
    return merged
