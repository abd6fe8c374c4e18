"""Tagged-argument markers (phases A1-A2): how ``<parameter=NAME>\\nVALUE\\n</parameter>`` is spelled.

A1 renders a call with one argument against the same call with a different argument name; the text around
the names is ``name_prefix`` / ``name_suffix``. A2 changes only the value; the text between the name suffix and
the value is ``value_prefix``, the text after the value up to the function's close marker is ``value_suffix``.
Only for TAG_WITH_TAGGED formats.
"""

from __future__ import annotations

import re

from .. import needles
from ..model import ArgumentMarkers, FunctionMarkers, ToolFormat
from ..patterns import MARKER, last_marker
from ..variants import VariantRenderer

__all__ = ["analyze_argument_markers"]

_NOT_MARKER = rf"(?:(?!{MARKER}).)*"


def _around_name(text: str, name: str) -> tuple[str, str] | None:
    """Text before the argument name and after it up to the value (``XXXX``/``YYYY``)."""
    match = re.match(rf"(?P<pre>.*?){re.escape(name)}(?P<suffix>.*?)(?=XXXX|YYYY)", text, re.DOTALL)
    return (match["pre"], match["suffix"]) if match else None


def analyze_argument_markers(renderer: VariantRenderer, fmt: ToolFormat, function: FunctionMarkers) -> ArgumentMarkers:
    name_prefix, name_suffix = _name_markers(renderer)
    value_prefix, value_suffix, lead, trail = _value_markers(renderer, fmt, function, name_suffix)
    return ArgumentMarkers(
        name_prefix=name_prefix,
        name_suffix=name_suffix,
        value_prefix=value_prefix,
        value_suffix=value_suffix,
        value_lead=lead,
        value_trail=trail,
    )


def _name_markers(renderer: VariantRenderer) -> tuple[str, str]:
    """A1: one argument name against another."""
    comparison = renderer.compare(
        needles.with_calls(needles.ONE_ARG_CALL), needles.with_calls(needles.OTHER_ARG_CALL), tools=True
    )
    if comparison is None:
        return "", ""
    diff = comparison.diff
    left, right = _around_name(diff.left, needles.ARG_FIRST), _around_name(diff.right, needles.ARG_SECOND)
    if left and right and left[0] and left == right:
        return left[0].strip(), left[1].lstrip()
    if diff.left.startswith(needles.ARG_FIRST) and diff.right.startswith(needles.ARG_SECOND):
        markers = list(re.finditer(MARKER, diff.prefix))
        name_prefix = diff.prefix[markers[-1].start() :] if markers else diff.prefix
        after = diff.left[len(needles.ARG_FIRST) :] + diff.suffix
        match = re.match(rf"{_NOT_MARKER}{MARKER}\s*", after, re.DOTALL)
        return name_prefix, match.group() if match else ""
    return "", ""


def _value_markers(
    renderer: VariantRenderer, fmt: ToolFormat, function: FunctionMarkers, name_suffix: str
) -> tuple[str, str, str, str]:
    """A2: one argument value against another: value prefix and suffix, and the whitespace right around the
    value (layout the template adds, which is not part of the value)."""
    comparison = renderer.compare(
        needles.with_calls(needles.ONE_ARG_CALL), needles.with_calls(needles.ONE_ARG_OTHER_VALUE_CALL), tools=True
    )
    if comparison is None or (comparison.diff.left, comparison.diff.right) != ("XXXX", "YYYY"):
        return "", "", "", ""
    diff = comparison.diff
    value_prefix = ""
    anchor = needles.ARG_FIRST + name_suffix
    if anchor in diff.prefix:
        remainder = diff.prefix[diff.prefix.rindex(anchor) + len(anchor) :]
        marker = last_marker(remainder)
        if marker:
            value_prefix = remainder[remainder.rindex(marker) :]
    end = function.close or fmt.per_call_end or fmt.section_end
    value_suffix = ""
    if end and end in diff.suffix:
        value_suffix = diff.suffix[: diff.suffix.index(end)].lstrip()
    lead = diff.prefix[len(diff.prefix.rstrip()) :]
    trail = diff.suffix[: len(diff.suffix) - len(diff.suffix.lstrip())]
    return value_prefix, value_suffix, lead, trail
