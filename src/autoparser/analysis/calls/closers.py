"""Closing markers a template implies by its own convention (no render; the template source).

Some templates open a call section with a marker they never close — Mistral writes ``[TOOL_CALLS]`` and nothing after
the calls — while they write every other pair of theirs as ``[X]…[/X]`` (``[INST]…[/INST]``,
``[AVAILABLE_TOOLS]…[/AVAILABLE_TOOLS]``). A model trained on such a template may close the calls the same way,
``[TOOL_CALLS]…[/TOOL_CALLS]``; likewise ``<x>`` with ``</x>`` and ``<|x|>`` with ``<|/x|>``. The closer is implied
only where the opener has no end marker of its own and the template's source holds another pair of the opener's
bracket style (two distinct names: ``[Y]`` and ``[/Y]``). Parsers consume it after the calls; it is never required.
"""

from __future__ import annotations

import dataclasses
import re

from ..model import ToolFormat, ToolFormatMode

__all__ = ["implied_end", "with_implied_end"]

# (opener form, closer of a name, closer pattern, opener of a name): one per bracket style.
_NAME = r"(?P<name>[A-Za-z][\w.:-]*)"
_STYLES: tuple[tuple[re.Pattern[str], str, re.Pattern[str], str], ...] = (
    (re.compile(rf"\[{_NAME}\]"), "[/{}]", re.compile(rf"\[/{_NAME}\]"), "[{}]"),
    (re.compile(rf"<\|{_NAME}\|>"), "<|/{}|>", re.compile(rf"<\|/{_NAME}\|>"), "<|{}|>"),
    (re.compile(rf"<{_NAME}>"), "</{}>", re.compile(rf"</{_NAME}>"), "<{}>"),
)


def implied_end(opener: str, source: str) -> str:
    """The closer ``opener`` takes by the convention of the template ``source`` ("" if it implies none)."""
    core = opener.strip()
    for form, closer, closers, opening in _STYLES:
        match = form.fullmatch(core)
        if match is None:
            continue
        name = match["name"]
        for other in closers.finditer(source):
            if other["name"] != name and opening.format(other["name"]) in source:
                return closer.format(name)
        return ""
    return ""


def with_implied_end(fmt: ToolFormat, source: str) -> ToolFormat:
    """``fmt`` with ``implied_end`` set when the marker opening its calls has no end marker."""
    if fmt.mode is ToolFormatMode.NONE or fmt.implied_end:
        return fmt  # (a closer the template writes after several calls: analysis/calls/tool_format.py)
    if fmt.section_start.strip():
        opener, end = fmt.section_start, fmt.section_end
    else:
        opener, end = fmt.per_call_start, fmt.per_call_end
    if not opener.strip() or end.strip():
        return fmt
    implied = implied_end(opener, source)
    return dataclasses.replace(fmt, implied_end=implied) if implied else fmt
