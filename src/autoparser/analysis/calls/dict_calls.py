"""Calls whose arguments are a dict in the template's own syntax (phase T1, dict branch; TAG_WITH_DICT).

Gemma 4 renders a call as ``<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:2}<tool_call|>``: keys are bare,
a string is raw text between two delimiter *tokens* (``<|"|>``), numbers and booleans are bare. T1's rendered call
shows the family: the function-name needle directly followed by ``{``, the first argument-name needle written bare, a
separator (``:`` or ``=``), the value needle between two delimiter tokens that are not quotes, a member separator
(``,`` or ``;``) and the second argument written alike. What precedes the name is the call's opening marker (the
last ``<…>``/``[…]`` marker: ``<|tool_call>``; two markers: a section and a per-call marker) and the name prefix
(the text after it: ``call:``); the first marker after the dict closes the call. Nothing here names Gemma: another
model with another token (``call:f{k:<str>v</str>}``), another prefix or other separators is read the same way.

How booleans and null are spelled takes one more render (a call with ``True`` and ``None`` values): ``true``/``True``,
``null``/``None`` (Gemma prints Python's None), or ``""`` where the template refuses non-string values.
"""

from __future__ import annotations

import re

from .. import needles
from ..model import DictValues, ToolFormat, ToolFormatMode
from ..patterns import MARKER
from ..variants import VariantRenderer

__all__ = ["analyze_dict_format", "analyze_dict_values"]

_FUN = re.escape(needles.FUN_FIRST)
_ARG1, _ARG2 = re.escape(needles.ARG_FIRST), re.escape(needles.ARG_SECOND)
# A delimiter token starts with a character that is not a word character, space, quote, bracket or separator.
_TOKEN_START = r"""[^\w\s"'{}\[\]:=,;]"""
_CALL = re.compile(
    rf"{_FUN}\s*\{{\s*{_ARG1}\s*(?P<colon>[:=])\s*(?P<open>{_TOKEN_START}\S*?)XXXX(?P<close>\S+?)\s*"
    rf"(?P<comma>[,;])\s*{_ARG2}\s*(?P=colon)\s*(?P=open)YYYY(?P=close)\s*\}}",
    re.DOTALL,
)
_MARKER = re.compile(MARKER)
_LEADING_MARKER = re.compile(rf"\s*(?P<marker>{MARKER})")


def analyze_dict_format(clean: str) -> tuple[ToolFormat, str, DictValues] | None:
    """The TAG_WITH_DICT format of the rendered call ``clean`` (reasoning markers removed): the format (its opening
    marker as the section start; T2 decides whether it is per call), the name prefix and the dict's tokens. None if
    the call is not written so."""
    match = _CALL.search(clean)
    if match is None or match["close"][-1] in "{}[],;:=":
        return None
    pre, post = clean[: match.start()], clean[match.end() :]
    markers = list(_MARKER.finditer(pre))
    section_start = per_call_start = ""
    if markers:
        name_prefix = pre[markers[-1].end() :].lstrip()
        if len(markers) >= 2:
            section_start, per_call_start = markers[0].group(), markers[-1].group()
        else:
            section_start = markers[-1].group()
    else:
        # No marker: a word opens the call (``call:NAME{``); it is the call's marker.
        section_start, name_prefix = pre.strip(), ""
        if not section_start:
            return None  # a bare NAME{...} could be anything
    closers = []
    rest = post
    while len(closers) < (2 if per_call_start else 1):
        closer = _LEADING_MARKER.match(rest)
        if closer is None:
            break
        closers.append(closer["marker"])
        rest = rest[closer.end() :]
    section_end = per_call_end = ""
    if per_call_start:
        per_call_end = closers[0] if closers else ""
        section_end = closers[1] if len(closers) > 1 else ""
    elif closers:
        section_end = closers[0]
    fmt = ToolFormat(
        ToolFormatMode.TAG_WITH_DICT,
        section_start=section_start,
        section_end=section_end,
        per_call_start=per_call_start,
        per_call_end=per_call_end,
    )
    values = DictValues(match["open"], match["close"], match["colon"], match["comma"])
    return fmt, name_prefix, values


def analyze_dict_values(renderer: VariantRenderer, values: DictValues) -> DictValues:
    """``values`` with the template's spellings of a boolean and of null (a call with ``True`` and ``None``)."""
    typed = needles.tool_call(needles.FUN_FIRST, {needles.ARG_FIRST: True, needles.ARG_SECOND: None})
    rendered = renderer.render(needles.with_calls(typed), tools=True) or ""
    colon = re.escape(values.colon)
    true = re.search(rf"{_ARG1}\s*{colon}\s*(?P<word>True|true)\b", rendered)
    null = re.search(rf"{_ARG2}\s*{colon}\s*(?P<word>None|null|nil|none|NULL)\b", rendered)
    return DictValues(
        values.quote_open,
        values.quote_close,
        values.colon,
        values.comma,
        true["word"] if true else "",
        null["word"] if null else "",
    )
