"""The parts of a chat request that shape the generated parser (and its cache key)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..cache import sized_cache

__all__ = ["ParseRequest", "ToolSpec", "normalize_tools"]

TOOL_CHOICES = ("auto", "required", "none")
REASONING_FORMATS = ("none", "auto", "deepseek", "deepseek-legacy")
UNDECLARED_TOOLS = ("call", "content")  # what to make of a call to a tool the request does not declare


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A function the model may call: its name and JSON-schema parameters (as canonical JSON text)."""

    name: str
    parameters_json: str = "{}"

    @property
    def parameters(self) -> dict[str, Any]:
        """The parameter schema (parsed once per distinct text and shared: treat it as read-only)."""
        return _parsed_schema(self.parameters_json)

    def property_schema(self, name: str) -> dict[str, Any] | None:
        props = self.parameters.get("properties")
        if isinstance(props, dict) and isinstance(props.get(name), dict):
            return props[name]
        return None


@sized_cache(lambda _, text: 256 + 8 * len(text))  # a parsed JSON object: some 8 bytes per byte of its text
def _parsed_schema(text: str) -> dict[str, Any]:
    value = json.loads(text)
    return value if isinstance(value, dict) else {}


def normalize_tools(tools: Sequence[Mapping[str, Any]] | None) -> tuple[ToolSpec, ...]:
    """OpenAI tool dicts (``{"type": "function", "function": {...}}`` or bare functions) to :class:`ToolSpec`."""
    specs: list[ToolSpec] = []
    for tool in tools or ():
        if not isinstance(tool, Mapping):
            raise TypeError(f"a tool must be a mapping, got {type(tool).__name__}")
        function = tool.get("function", tool)
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str) or not function["name"]:
            raise ValueError(f"a tool needs a function name: {tool!r}")
        parameters = function.get("parameters") or {}
        if isinstance(parameters, str):
            parameters = json.loads(parameters)
        specs.append(ToolSpec(function["name"], json.dumps(parameters)))  # key order matters (property order)
    return tuple(specs)


@dataclass(frozen=True, slots=True)
class ParseRequest:
    """Everything besides the analysis that decides the parser's shape; hashable, so parsers are cached by it."""

    generation_prompt: str = ""
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: str = "auto"
    parallel_tool_calls: bool = False
    reasoning_format: str = "none"
    enable_thinking: bool = True
    json_schema: str | None = None  # canonical JSON text
    undeclared_tools: str = "call"

    def __post_init__(self) -> None:
        if self.tool_choice not in TOOL_CHOICES:
            raise ValueError(f"tool_choice must be one of {TOOL_CHOICES}, got {self.tool_choice!r}")
        if self.reasoning_format not in REASONING_FORMATS:
            raise ValueError(f"reasoning_format must be one of {REASONING_FORMATS}, got {self.reasoning_format!r}")
        if self.undeclared_tools not in UNDECLARED_TOOLS:
            raise ValueError(f"undeclared_tools must be one of {UNDECLARED_TOOLS}, got {self.undeclared_tools!r}")

    @property
    def tools_enabled(self) -> bool:
        return bool(self.tools) and self.tool_choice != "none"

    @property
    def text_size(self) -> int:
        """How much request text shapes the parser (the tools' names and schemas, the response schema, the
        generation prompt): what the size of a parser or grammar built for it grows with (:mod:`autoparser.cache`)."""
        tools = sum(len(t.name) + len(t.parameters_json) for t in self.tools)
        return tools + len(self.json_schema or "") + len(self.generation_prompt)

    def tool(self, name: str) -> ToolSpec | None:
        return next((t for t in self.tools if t.name == name), None)
