"""Checking a Responses body's own fields: 400s in OpenAI's format naming the field (``param``), as the chat
endpoint's validation answers (:mod:`..protocol`) — which checks everything the two APIs share, once the body is
translated."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..protocol import APIError

__all__ = ["choice", "invalid", "string", "type_name", "typed"]


def invalid(param: str, message: str, code: str = "invalid_value") -> APIError:
    return APIError(400, f"{param}: {message}", param=param, code=code)


def type_name(value: object) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number" if isinstance(value, int | float) else type(value).__name__
    )


def typed(body: Mapping[str, Any], key: str, kind: type, what: str, where: str | None = None) -> Any:
    """``body[key]`` when it is a ``kind`` (None when absent or null); ``where``: the field's full name."""
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise invalid(where or key, f"must be {what}, got {type_name(value)}", "invalid_type")
    return value


def string(body: Mapping[str, Any], key: str, where: str, *, required: bool = True, empty: bool = True) -> str:
    """``body[key]``, a string (``where``: the object's own field name)."""
    value = body.get(key)
    if value is None and required:
        raise invalid(f"{where}.{key}", "is required (a string)", "missing_required_parameter")
    value = typed(body, key, str, "a string", f"{where}.{key}")
    if not empty and value == "":
        raise invalid(f"{where}.{key}", "must not be empty")
    return value


def choice(body: Mapping[str, Any], key: str, values: tuple[str, ...], where: str | None = None) -> str | None:
    """``body[key]``, one of ``values`` (or None)."""
    value = body.get(key)
    if value is not None and value not in values:
        raise invalid(where or key, f"must be one of {', '.join(values)}, got {value!r}")
    return value
