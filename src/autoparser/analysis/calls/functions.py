"""Function-name markers (phase T3): the text around a call's function name and what closes the call.

Rendering the same call under two names isolates the name: the text before it (after the call's opening
marker) is ``name_prefix``, the text after it up to the next marker (or up to the JSON arguments) is
``name_suffix``. What follows the last argument value, before the call's end marker, is ``close``.
"""

from __future__ import annotations

import re

from .. import needles
from ..model import FunctionMarkers, ToolFormat, ToolFormatMode
from ..patterns import MARKER
from ..variants import VariantRenderer
from .tool_format import FunctionNameMatch

__all__ = ["analyze_function_markers"]

_NOT_MARKER = rf"(?:(?!{MARKER}).)*"
_FUN_FIRST = re.escape(needles.FUN_FIRST)
_NAME = re.compile(rf"(?P<pre>.*?){_FUN_FIRST}(?P<post>{_NOT_MARKER})", re.DOTALL)
_JSON_TAIL = re.compile(rf"(?P<ext>(?:{MARKER}|[^{{\[])*){_NOT_MARKER}(?:{MARKER}|\Z)", re.DOTALL)
_TAGGED_CLOSE = re.compile(rf".*?YYYY\s*{MARKER}\s*(?P<close>.*)", re.DOTALL)


def analyze_function_markers(renderer: VariantRenderer, fmt: ToolFormat, name: FunctionNameMatch) -> FunctionMarkers:
    comparison = renderer.compare(
        needles.with_calls(needles.FIRST_CALL), needles.with_calls(needles.SECOND_CALL), tools=True
    )
    if comparison is None:
        return FunctionMarkers(name.name_prefix)
    diff = comparison.diff
    if needles.FUN_FIRST not in diff.left or needles.FUN_SECOND not in diff.right:
        return FunctionMarkers(name.name_prefix)
    name_prefix = name.name_prefix
    opener = fmt.per_call_start or fmt.section_start
    if opener and opener in diff.prefix:
        name_prefix = diff.prefix[diff.prefix.rindex(opener) + len(opener) :]
    name_suffix = ""
    match = _NAME.match(diff.left)
    if match:
        name_prefix += match["pre"]
        name_suffix = match["post"]
    if fmt.mode is ToolFormatMode.TAG_WITH_JSON:
        tail = _JSON_TAIL.match(diff.suffix)
        if tail:
            name_suffix += tail["ext"]
    else:
        name_suffix += re.match(_NOT_MARKER, diff.suffix, re.DOTALL).group()  # type: ignore[union-attr]
    return FunctionMarkers(name_prefix, name_suffix, _close(renderer, fmt, diff.suffix))


def _close(renderer: VariantRenderer, fmt: ToolFormat, suffix: str) -> str:
    """The text between the end of the arguments and the call's end marker (``</function>``)."""
    end = fmt.per_call_end or fmt.section_end
    if end and end in suffix:
        after_args = suffix[: suffix.index(end)]
    else:
        comparison = renderer.compare(
            needles.with_calls(needles.FIRST_CALL), [needles.USER, needles.assistant()], tools=True
        )
        if comparison is None or "YYYY" not in comparison.diff.left:
            return ""
        after_args = comparison.diff.left[comparison.diff.left.index("YYYY") :]
    if fmt.mode is ToolFormatMode.TAG_WITH_TAGGED:
        match = _TAGGED_CLOSE.match(after_args)
        return match["close"].lstrip() if match else ""
    if "YYYY" not in after_args:
        return ""
    tail = after_args[after_args.index("YYYY") :]
    last = max(tail.rfind("}"), tail.rfind("]"))
    return tail[last + 1 :].lstrip() if last >= 0 else ""
