"""Tool-call analysis: runs T1-T3, A1-A2 and T7 in order, each phase refining the previous ones (pythonic calls and
calls with dict arguments need only T1 and the spelling of their values)."""

from __future__ import annotations

import dataclasses

from ...template.capabilities import TemplateCapabilities
from ..model import (
    ArgumentMarkers,
    CallIdMarkers,
    CallIdPosition,
    FunctionMarkers,
    ReasoningAnalysis,
    ToolFormatMode,
    ToolsAnalysis,
)
from ..variants import VariantRenderer
from .arguments import analyze_argument_markers
from .call_ids import analyze_call_ids
from .dict_calls import analyze_dict_values
from .functions import analyze_function_markers
from .pythonic import analyze_pythonic_values
from .tool_format import analyze_tool_format

__all__ = ["analyze_tools"]


def analyze_tools(renderer: VariantRenderer, reasoning: ReasoningAnalysis, caps: TemplateCapabilities) -> ToolsAnalysis:
    if not caps.supports_tool_calls:
        return ToolsAnalysis()
    fmt, name = analyze_tool_format(renderer, reasoning, caps.supports_parallel_tool_calls)
    if fmt.mode in (ToolFormatMode.NONE, ToolFormatMode.JSON_NATIVE):
        return ToolsAnalysis(fmt)
    if fmt.mode is ToolFormatMode.PYTHONIC:
        return ToolsAnalysis(fmt, pythonic=analyze_pythonic_values(renderer))
    if fmt.mode is ToolFormatMode.TAG_WITH_DICT and name.values is not None:
        # Name and dict: what T1 read is all there is (no tagged arguments, no call ids).
        values = analyze_dict_values(renderer, name.values)
        return ToolsAnalysis(fmt, FunctionMarkers(name.name_prefix), dict_values=values)
    function = analyze_function_markers(renderer, fmt, name)
    arguments = ArgumentMarkers()
    if fmt.mode is ToolFormatMode.TAG_WITH_TAGGED:
        arguments = analyze_argument_markers(renderer, fmt, function)
    call_id = analyze_call_ids(renderer, arguments)
    if call_id.position is CallIdPosition.BETWEEN_FUNC_AND_ARGS:
        function = dataclasses.replace(function, name_suffix=_before_call_id(function.name_suffix, call_id))
    if call_id.position is CallIdPosition.PRE_FUNC_NAME and call_id.suffix in function.name_prefix:
        # The id sits before the name (``<|tool_call:begin|>call_1<|tool_call:name|>get_weather``): the name's
        # prefix starts after it, not with the probe's id.
        at = function.name_prefix.index(call_id.suffix)
        function = dataclasses.replace(function, name_prefix=function.name_prefix[at:])
    if call_id.position is not CallIdPosition.NONE and call_id.suffix and fmt.per_call_end.startswith(call_id.suffix):
        fmt = dataclasses.replace(fmt, per_call_end="")
    return ToolsAnalysis(fmt, function, arguments, call_id)


def _before_call_id(name_suffix: str, call_id: CallIdMarkers) -> str:
    """The name suffix without the id section that follows it (``[CALL_ID]call00001[ARGS]``)."""
    if call_id.prefix and call_id.prefix in name_suffix:
        return name_suffix[: name_suffix.index(call_id.prefix)]
    if call_id.suffix and name_suffix.endswith(call_id.suffix):
        return name_suffix[: -len(call_id.suffix)]
    return name_suffix
