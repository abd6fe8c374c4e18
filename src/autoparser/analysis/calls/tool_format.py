"""Tool-call format (phases T1-T2): JSON or tagged calls, and the section / per-call markers around them.

T1 renders a plain answer against a tool call; the added text is the call. Where the function name and the
first argument sit in it (inside JSON strings or in markup) decides the format. T2 renders one call against
two: if the second call repeats the opening marker, the markers wrap each call rather than the whole section.
"""

from __future__ import annotations

import dataclasses
import re

from .. import needles
from ..diff import calculate_diff_split, common_prefix_len
from ..model import DictValues, ReasoningAnalysis, ToolFormat, ToolFormatMode
from ..patterns import MARKER, marker_positions
from ..variants import Comparison, VariantRenderer
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
    """The call without the reasoning markers (and the reasoning probes write where calls need it)."""
    text = text.replace(needles.THINKING, "", 1)
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
        elif parallel and result.section_start:
            result = _split_json_section(renderer, result)
        return _closed_after_several(renderer, result) if parallel else result, FunctionNameMatch()
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
    return _closed_after_several(renderer, result) if parallel else result, name


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


def _one_and_two_calls(renderer: VariantRenderer) -> Comparison | None:
    """T2's renders: one call against the same call followed by a second one."""
    return renderer.compare(
        needles.with_calls(needles.FIRST_CALL),
        needles.with_calls(needles.FIRST_CALL, needles.SECOND_CALL),
        tools=True,
    )


def _repeats_per_call(renderer: VariantRenderer, section_start: str, *, json_mode: bool) -> bool:
    """T2: does a second call repeat the opening marker?"""
    comparison = _one_and_two_calls(renderer)
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


def _split_json_section(renderer: VariantRenderer, fmt: ToolFormat) -> ToolFormat:
    """T2 for JSON calls in a section that holds per-call markers (``<tool_calls><tool_call>{…}</tool_call>
    </tool_calls>``): the last marker before the object, when a second call repeats it, opens each call, and the
    first marker after it, when a second call repeats it too, closes each call; the rest is the section's."""
    starts = marker_positions(fmt.section_start)
    comparison = _one_and_two_calls(renderer)
    if len(starts) < 2 or comparison is None or starts[-1].group() not in comparison.diff.right:
        return fmt
    at = starts[-1].start()
    section_end, per_call_end = fmt.section_end, ""
    ends = marker_positions(section_end)
    if ends and ends[0].start() == 0 and ends[0].group() in comparison.diff.right:
        per_call_end, section_end = ends[0].group(), section_end[ends[0].end() :].strip()
    return dataclasses.replace(
        fmt,
        section_start=fmt.section_start[:at],
        per_call_start=fmt.section_start[at:],
        section_end=section_end,
        per_call_end=per_call_end,
    )


def _closed_after_several(renderer: VariantRenderer, fmt: ToolFormat) -> ToolFormat:
    """A section the template closes only after several calls (``<calls>…</call>`` for one call, ``<calls>…</call>
    <call>…</call></calls>`` for two): what follows the second of two calls but not a lone one, when it is markers
    only, is a closer a model may write or leave out (``implied_end``: consumed after the calls, never required)."""
    if not fmt.section_start.strip() or fmt.section_end.strip() or fmt.implied_end:
        return fmt
    comparison = _one_and_two_calls(renderer)
    if comparison is None or needles.FUN_FIRST not in comparison.a or needles.FUN_SECOND not in comparison.b:
        return fmt
    # The two calls carry the same arguments: after the last call's name, both renders go on alike but for it.
    lone = comparison.a[comparison.a.rindex(needles.FUN_FIRST) + len(needles.FUN_FIRST) :]
    last = comparison.b[comparison.b.rindex(needles.FUN_SECOND) + len(needles.FUN_SECOND) :]
    shared = common_prefix_len(lone, last)
    opened = max(lone.rfind("<", 0, shared), lone.rfind("[", 0, shared))
    if opened >= 0 and not re.search(r"[>\]]", lone[opened:shared]):
        shared = opened  # (never inside a marker both go on with: `</call><|im_end|>`, `</call><done>`)
    if len(last) <= len(lone) or not last.endswith(lone[shared:]):
        return fmt
    extra = last[shared : len(last) - len(lone) + shared].strip()
    if not extra or "".join(m.group() for m in marker_positions(extra)) != extra:
        return fmt
    return dataclasses.replace(fmt, implied_end=extra, implied_end_written=True)
