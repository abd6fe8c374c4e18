"""Tool-call format (phases T1-T2): JSON or tagged calls, and the section / per-call markers around them.

T1 renders a plain answer against a tool call; the added text is the call. Where the function name and the
first argument sit in it (inside JSON strings or in markup) decides the format. T2 renders one call against
two: if the second call repeats the opening marker, the markers wrap each call rather than the whole section.
"""

from __future__ import annotations

import dataclasses
import re

from .. import needles
from ..diff import calculate_diff_split
from ..model import DictValues, ReasoningAnalysis, ToolFormat, ToolFormatMode
from ..patterns import MARKER
from ..variants import VariantRenderer
from .dict_calls import analyze_dict_format
from .json_calls import analyze_json_calls
from .pythonic import analyze_pythonic_format

__all__ = ["FunctionNameMatch", "analyze_tool_format"]

_FUN = re.escape(needles.FUN_FIRST)
# "<function=FFF_FIRST_FUN_F>\n": an opening marker with the name inside it.
_ANGLE_NAME = re.compile(rf"(?P<fun_pre><(?:(?!{_FUN})[^>])*){_FUN}(?P<fun_post>(?!\s*<)[^>]*>)\s*", re.DOTALL)
_SQUARE_NAME = re.compile(rf"(?P<fun_pre>\[(?:(?!{_FUN})[^\]])*){_FUN}(?P<fun_post>(?!\s*<)[^\]]*\]?)\s*", re.DOTALL)


@dataclasses.dataclass(frozen=True, slots=True)
class FunctionNameMatch:
    """The function-name marker found in T1 (``name_prefix`` feeds T3); for TAG_WITH_DICT calls, also the dict's
    tokens (``values``)."""

    name_prefix: str = ""
    values: DictValues | None = None


def _in_json(needle: str, text: str) -> bool:
    return re.search(r'[{:]\s*"' + re.escape(needle) + '"', text) is not None


def _without_reasoning(text: str, reasoning: ReasoningAnalysis) -> str:
    for marker in (reasoning.start, reasoning.end):
        if marker:
            text = text.replace(marker, "", 1)
    return text


def analyze_tool_format(
    renderer: VariantRenderer, reasoning: ReasoningAnalysis, parallel: bool
) -> tuple[ToolFormat, FunctionNameMatch]:
    comparison = renderer.compare(
        [needles.USER, needles.assistant()], needles.with_calls(needles.FIRST_CALL), tools=True
    )
    # (a turn header the template writes otherwise for calls than for answers is the prompt's, not the call's)
    haystack = renderer.after_prompt(comparison.diff.right) if comparison else ""
    if not haystack:
        return ToolFormat(), FunctionNameMatch()
    clean = _without_reasoning(haystack, reasoning)
    if _in_json(needles.FUN_FIRST, haystack):
        result = analyze_json_calls(clean)
        if parallel and result.section_start and _repeats_per_call(renderer, result.section_start, json_mode=True):
            result = _per_call(result)
        return result, FunctionNameMatch()
    pythonic = analyze_pythonic_format(clean)
    if pythonic is not None:
        return pythonic, FunctionNameMatch()
    written = analyze_dict_format(clean)
    if written is not None:
        fmt, name_prefix, values = written
        if parallel and not fmt.per_call_start and _repeats_per_call(renderer, fmt.section_start, json_mode=False):
            fmt = _per_call(fmt)
        return fmt, FunctionNameMatch(name_prefix, values)
    mode = ToolFormatMode.TAG_WITH_JSON if _in_json(needles.ARG_FIRST, haystack) else ToolFormatMode.TAG_WITH_TAGGED
    result, name = _tagged_markers(clean, mode)
    if parallel and result.section_start and _repeats_per_call(renderer, result.section_start, json_mode=False):
        result = _per_call(result)
    return result, name


def _function_marker(clean: str) -> re.Match[str] | None:
    """The marker holding the function name (``<function=FFF_FIRST_FUN_F>``), if the name is inside one."""
    return _ANGLE_NAME.search(clean) or _SQUARE_NAME.search(clean)


def _tagged_markers(clean: str, mode: ToolFormatMode) -> tuple[ToolFormat, FunctionNameMatch]:
    marker = _function_marker(clean)
    fun = re.escape(marker.group()) if marker else _FUN
    two = re.search(rf"(?P<sec>{MARKER}\s*)(?P<call>{MARKER}\s*)(?P<pre>.*?){fun}(?P<rest>.*)", clean, re.DOTALL)
    if two:
        closers = re.search(rf"(?P<call_end>{MARKER}\s*)(?P<sec_end>{MARKER}\s*)\Z", two["rest"], re.DOTALL)
        fmt = ToolFormat(
            mode,
            section_start=two["sec"],
            section_end=closers["sec_end"].strip() if closers else "",
            per_call_start=two["call"],
            per_call_end=closers["call_end"].strip() if closers else "",
        )
        return fmt, FunctionNameMatch(marker["fun_pre"] if marker else two["pre"])
    one = re.search(rf"(?P<sec>{MARKER}\s*){fun}(?P<rest>.*)", clean, re.DOTALL)
    if one is None:
        return ToolFormat(mode), FunctionNameMatch()
    closer = re.search(rf"(?P<sec_end>{MARKER}\s*)\Z", one["rest"], re.DOTALL)
    fmt = ToolFormat(mode, section_start=one["sec"], section_end=closer["sec_end"].strip() if closer else "")
    return fmt, FunctionNameMatch()


def _repeats_per_call(renderer: VariantRenderer, section_start: str, *, json_mode: bool) -> bool:
    """T2: does a second call repeat the opening marker?"""
    comparison = renderer.compare(
        needles.with_calls(needles.FIRST_CALL),
        needles.with_calls(needles.FIRST_CALL, needles.SECOND_CALL),
        tools=True,
    )
    if comparison is None:
        return False
    if json_mode:
        return section_start in comparison.diff.right
    added = calculate_diff_split(comparison.diff.suffix, comparison.diff.right).right
    return added.lstrip().startswith(section_start) or comparison.diff.right.lstrip().startswith(section_start)


def _per_call(fmt: ToolFormat) -> ToolFormat:
    return dataclasses.replace(
        fmt,
        per_call_start=fmt.section_start,
        per_call_end=fmt.section_end,
        section_start="",
        section_end="",
    )
