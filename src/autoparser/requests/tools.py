"""The request's ``tools``: checked for shape, and completed with OpenAI's defaults only where a template needs them.

OpenAI makes a function's ``description`` and ``parameters`` optional (defaults: none, and a function without
parameters). Many templates read both unconditionally — Hermes concatenates the description, Seed-OSS walks the
parameters — and raise without them. Supplying ``""`` and an empty object schema up front would change the prompt of
templates that render tools as given (``tools | tojson`` would print the added keys), and the prompt must stay the one
transformers renders whenever transformers can render the request as sent. So :func:`with_defaults` is the fallback
a render tries after the tools as sent failed (see ``ChatTemplate.apply``); explicit ``null`` fields count as
missing, since a template would print them as ``None``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import RequestError
from .checks import check_json_data, check_schema
from .json_data import as_json_data

__all__ = ["EMPTY_PARAMETERS", "check_tools", "missing_defaults", "with_defaults"]

EMPTY_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}
_OPTIONAL = ("description", "parameters")


def check_tools(tools: Any) -> list[dict[str, Any]] | None:
    """``tools`` as a list of tool dicts (None stays None), with explicit ``null`` optional fields removed.

    Raises :class:`RequestError` naming ``tools`` (or the entry) for anything but a list of
    ``{"type": "function", "function": {"name": ...}}`` objects (bare function objects are accepted too), and naming
    the tool's parameter for ``parameters`` that are not a JSON schema (or JSON text of one): see :mod:`.checks`."""
    if tools is None:
        return None
    if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Sequence):
        raise RequestError(
            "tools",
            f'must be a list of tools ([{{"type": "function", "function": {{...}}}}, ...]), got {type(tools).__name__}',
        )
    checked: list[dict[str, Any]] = []
    names: set[str] = set()
    for i, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            raise RequestError(f"tools[{i}]", f"a tool must be an object, got {type(tool).__name__}")
        function = tool.get("function", tool)
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str) or not function["name"]:
            raise RequestError(f"tools[{i}].function.name", "every tool needs a function name")
        where = f"tools[{i}].function" if "function" in tool else f"tools[{i}]"
        if function["name"] in names:  # two tools of one name: no call could say which it meant
            raise RequestError(f"{where}.name", f"{function['name']!r} names an earlier tool too")
        names.add(function["name"])
        check_json_data(tool, f"tools[{i}]")
        parameters = function.get("parameters")
        if parameters is not None and not isinstance(parameters, Mapping | str):
            raise RequestError(f"{where}.parameters", f"must be a JSON schema object, got {type(parameters).__name__}")
        if parameters is not None:
            check_schema(_schema_of(parameters, f"{where}.parameters"), f"{where}.parameters")
        if any(k in function and function[k] is None for k in _OPTIONAL):
            function = {k: v for k, v in function.items() if not (k in _OPTIONAL and v is None)}
            tool = {**tool, "function": function} if "function" in tool else function
        checked.append(dict(tool))
    return as_json_data(checked)  # (printed as JSON where a template prints a tool: json_data.py)


def _schema_of(parameters: Any, field: str) -> Any:
    """``parameters`` as a schema: as sent, or read from the JSON text some clients send."""
    if not isinstance(parameters, str):
        return parameters
    try:
        schema = json.loads(parameters)
    except (ValueError, RecursionError) as err:
        raise RequestError(field, f"is a string that is not a JSON schema: {err}") from None
    check_json_data(schema, field)
    if not isinstance(schema, dict):
        raise RequestError(field, f"must be a JSON schema object, got JSON text of a {type(schema).__name__}")
    return schema


def missing_defaults(tools: Sequence[Mapping[str, Any]] | None) -> bool:
    """Whether some tool lacks a field :func:`with_defaults` would add."""
    for tool in tools or ():
        function = tool.get("function", tool)
        if any(k not in function for k in _OPTIONAL) or any(
            "description" not in spec for spec in _properties(function).values()
        ):
            return True
    return False


def with_defaults(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Copies of the tools with ``description: ""`` and an empty object schema where they have none, and
    ``description: ""`` for each parameter without one (Command R+ prints every parameter's description)."""
    completed: list[dict[str, Any]] = []
    for tool in tools:
        function = dict(tool.get("function", tool))
        function.setdefault("description", "")
        function.setdefault("parameters", dict(EMPTY_PARAMETERS, properties={}))
        properties = _properties(function)
        if any("description" not in spec for spec in properties.values()):
            filled = {name: {**spec, "description": spec.get("description", "")} for name, spec in properties.items()}
            function["parameters"] = {**function["parameters"], "properties": filled}
        completed.append({**tool, "function": function} if "function" in tool else function)
    return as_json_data(completed)


def _properties(function: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The parameters' property schemas that are objects (a schema sent as JSON text is left as it is)."""
    parameters = function.get("parameters")
    properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
    if not isinstance(properties, Mapping):
        return {}
    return {name: spec for name, spec in properties.items() if isinstance(spec, Mapping)}
