"""JSON-native tool calls (phase T1, JSON branch): which fields hold the name, arguments and call id.

The rendered call (``{"name": "FFF_FIRST_FUN_F", "arguments": {...}}`` or a variant) is parsed and each field is
recognised by the needle it carries. Also found: the function name used as a key (``{"FFF_FIRST_FUN_F":
{...}}``), a nested ``function`` object, an array around the calls, the field order, and the text around the
JSON (section markers).
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from .. import needles
from ..model import ToolFormat, ToolFormatMode

__all__ = ["analyze_json_calls"]


def _load(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:  # some templates print Python reprs of the call dict
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def analyze_json_calls(clean: str) -> ToolFormat:
    """The JSON call layout in ``clean`` (the rendered call with reasoning markers removed)."""
    start, end = clean.find("{"), clean.rfind("}")
    if start < 0 or end < start:
        return ToolFormat(ToolFormatMode.JSON_NATIVE)
    call = _load(clean[start : end + 1])
    fields: dict[str, Any] = {
        "function_field": "function",
        "name_field": "name",
        "args_field": "arguments",
        "id_field": "",
        "gen_id_field": "",
        "fun_name_is_key": False,
    }
    if isinstance(call, dict):
        _register_fields(call, fields)
    wrapped = re.search(r"\[\s*" + re.escape(clean[start : end + 1]) + r"\s*\]", clean)
    if wrapped:
        start, end = wrapped.start(), wrapped.end() - 1
    section_start = clean[:start].lstrip()
    section_end = clean[end + 1 :].strip()
    if wrapped and section_end == "]":
        section_end = ""
    order = [fields[k] for k in ("name_field", "args_field", "id_field", "gen_id_field") if fields[k]]
    order.sort(key=lambda name: _first_occurrence(clean, name))
    return ToolFormat(
        ToolFormatMode.JSON_NATIVE,
        section_start=section_start,
        section_end=section_end,
        tools_array_wrapped=wrapped is not None,
        parameter_order=tuple(order),
        **fields,
    )


def _first_occurrence(text: str, field: str) -> int:
    name = field.rsplit(".", 1)[-1]
    pos = text.find(f'"{name}"')
    if pos < 0:
        pos = text.find(f"'{name}'")
    return pos if pos >= 0 else len(text)


def _register_fields(call: dict[str, Any], fields: dict[str, Any]) -> None:
    seen = {"name": False, "args": False}
    for key, value in call.items():
        if key == needles.FUN_FIRST:
            fields.update(fun_name_is_key=True, name_field="", args_field="")
            return
        nested = isinstance(value, dict) and (
            needles.ARG_FIRST not in json.dumps(value) or needles.FUN_FIRST in value.values()
        )
        if nested:
            # {"function": {"name": ..., "arguments": ...}}: the call's fields sit one level down.
            fields["function_field"] = key
            for sub_key, sub_value in value.items():
                _register(f"{key}.{sub_key}", sub_value, fields, seen)
            if needles.FUN_FIRST in value.values():
                continue
        _register(key, value, fields, seen)
    if not seen["name"]:
        fields["name_field"] = "name"
    if not seen["args"]:
        fields["args_field"] = "arguments"


def _register(key: str, value: Any, fields: dict[str, Any], seen: dict[str, bool]) -> None:
    if isinstance(value, str) and "call0000" in value:
        fields["id_field"] = key
    elif value == needles.FUN_FIRST:
        fields["name_field"], seen["name"] = key, True
    elif needles.ARG_FIRST in json.dumps(value):
        fields["args_field"], seen["args"] = key, True
    elif "id" in key.rsplit(".", 1)[-1]:
        fields["gen_id_field"] = key
