"""Pythonic tool calls (phase T1, pythonic branch): ``name(key=value, ...)`` and what wraps the calls.

Some templates render a call as Python: MiniCPM3 writes ``<|tool_call_start|>\\n```python\\nget_weather(city="Paris")
\\n```\\n<|tool_call_end|>``, Gemma 3n ```` ```tool_code\\nget_weather(city=Paris)\\n``` ````. T1's rendered call then
holds the function-name needle directly followed by ``(`` and an argument-name needle followed by ``=``; that is
what tells this format from tagged markup (where the name sits in a marker). The text before the call is the
section start, the text after it the section end, and a ``[`` ... ``]`` pair right around the call makes the calls
a list (otherwise they come one per line).

How values are spelled takes a few more renders: the quote around the value needle (none: the template writes strings
bare), a call with a boolean argument (``True``: Python keywords, ``true``: the template used ``tojson``; a
template that refuses non-string values renders nothing, and the spelling stays unknown), a string holding both
quote characters (written as it is: the template escapes nothing, and a quote inside a string is the string's own)
and a call with two arguments (what separates them: ``", "``, or only a space).
"""

from __future__ import annotations

import re

from .. import needles
from ..model import PythonicValues, ToolFormat, ToolFormatMode
from ..variants import VariantRenderer

__all__ = ["analyze_pythonic_format", "analyze_pythonic_values"]

_ARG = rf"(?:{re.escape(needles.ARG_FIRST)}|{re.escape(needles.ARG_SECOND)})"
# FFF_FIRST_FUN_F(AA_ARG_FST_AA="XXXX", ...): the name, "(", a keyword argument whose value is a value needle.
_CALL = re.compile(
    rf"(?P<open>\[\s*)?{re.escape(needles.FUN_FIRST)}\s*\(\s*{_ARG}\s*=\s*(?P<quote>[\"']?)(?:XXXX|YYYY)(?P=quote)"
    rf"[^)]*\)(?P<close>\s*\])?",
    re.DOTALL,
)
_KEYWORD = re.compile(rf"{re.escape(needles.ARG_FIRST)}\s*=\s*(?P<word>True|true)\b")
_NESTED_KEYWORD = re.compile(rf"{re.escape(needles.ARG_FIRST)}\s*=\s*\{{[^{{}}]*?(?P<word>True|true)\b")
# A string value holding both quote characters: a template that escapes nothing writes it as it is.
_QUOTED = "XXXX\"'YYYY"
# The text between two keyword arguments: after the first value (and its quote), before the second name's "=".
_SEPARATOR = re.compile(rf"XXXX[\"']?(?P<sep>[^=\w\n]*?){re.escape(needles.ARG_SECOND)}\s*=")


def analyze_pythonic_format(clean: str) -> ToolFormat | None:
    """The PYTHONIC format of the rendered call ``clean`` (reasoning markers removed), or None if it is not one."""
    match = _CALL.search(clean)
    if match is None:
        return None
    listed = bool(match["open"]) and bool(match["close"])
    # Without both brackets, a lone bracket belongs to the wrapper text.
    start = match.start() if listed else match.start() + len(match["open"] or "")
    end = match.end() if listed else match.end() - len(match["close"] or "")
    return ToolFormat(
        ToolFormatMode.PYTHONIC,
        section_start=clean[:start].lstrip(),
        section_end=clean[end:].strip(),
        tools_array_wrapped=listed,
    )


def analyze_pythonic_values(renderer: VariantRenderer) -> PythonicValues:
    """The quote around string values and the spelling of ``True`` in the template's rendered calls."""
    rendered = renderer.render(needles.with_calls(needles.ONE_ARG_CALL), tools=True) or ""
    match = _CALL.search(rendered)
    quote = match["quote"] if match else '"'
    typed = needles.tool_call(needles.FUN_FIRST, {needles.ARG_FIRST: True})
    keyword = _KEYWORD.search(renderer.render(needles.with_calls(typed), tools=True) or "")
    keywords = "" if keyword is None else "python" if keyword["word"] == "True" else "json"
    if keywords:
        # A template that prints arguments with str() may print dicts with tojson (LFM2.5-VL: `metric=True,
        # options={"on": true}`): it writes both spellings.
        nested = needles.tool_call(needles.FUN_FIRST, {needles.ARG_FIRST: {"k": True}})
        inside = _NESTED_KEYWORD.search(renderer.render(needles.with_calls(nested), tools=True) or "")
        if inside is not None and (inside["word"] == "True") != (keywords == "python"):
            keywords = "both"
    quoted = needles.tool_call(needles.FUN_FIRST, {needles.ARG_FIRST: _QUOTED})
    raw = bool(quote) and _QUOTED in (renderer.render(needles.with_calls(quoted), tools=True) or "")
    both = needles.tool_call(needles.FUN_FIRST, needles.BOTH_ARGS)
    separator = _SEPARATOR.search(renderer.render(needles.with_calls(both), tools=True) or "")
    found = separator["sep"] if separator is not None and separator["sep"].strip() in ("", ",", ";") else ", "
    return PythonicValues(quote=quote, keywords=keywords, raw_strings=raw, separator=found or ", ")
