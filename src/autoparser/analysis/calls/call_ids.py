"""Call-id markers (phase T7): where a template writes the tool call's id, e.g. Mistral's
``[TOOL_CALLS]name[CALL_ID]id[ARGS]{...}`` (BETWEEN_FUNC_AND_ARGS) or Kimi-K2's ``functions.name:0``.
"""

from __future__ import annotations

import re

from .. import needles
from ..model import ArgumentMarkers, CallIdMarkers, CallIdPosition
from ..patterns import MARKER, first_marker, last_marker
from ..variants import VariantRenderer

__all__ = ["ID_FORMATS", "NAMED_ID_PREFIX", "analyze_call_ids", "analyze_id_format"]


def analyze_call_ids(renderer: VariantRenderer, arguments: ArgumentMarkers) -> CallIdMarkers:
    comparison = renderer.compare(
        needles.with_calls(needles.FIRST_CALL), needles.with_calls(needles.FIRST_CALL_ALT_ID), tools=True
    )
    if comparison is None or (not comparison.diff.left and not comparison.diff.right):
        return CallIdMarkers()
    prefix, suffix = comparison.diff.prefix, comparison.diff.suffix
    name = needles.FUN_FIRST
    # Only the assistant's turn counts: a system prompt listing the tools names the function too (Solar Open).
    turn = prefix[prefix.rfind(needles.USER_MSG) + 1 :] if needles.USER_MSG in prefix else prefix
    in_prefix, in_suffix = name in turn, name in suffix
    result = CallIdMarkers()
    if in_prefix and not in_suffix:
        after_name = prefix[prefix.rindex(name) + len(name) :]
        if "{" in suffix and "{" not in after_name:
            direct = re.search(rf"({MARKER})call$", prefix)
            before_args = suffix[: suffix.index("{")]
            result = CallIdMarkers(
                CallIdPosition.BETWEEN_FUNC_AND_ARGS,
                direct.group(1) if direct else last_marker(after_name),
                first_marker(before_args),
            )
        elif "{" in prefix:
            result = CallIdMarkers(
                CallIdPosition.POST_ARGS, last_marker(prefix[prefix.rindex("}") :]), first_marker(suffix)
            )
    elif in_suffix and not in_prefix:
        result = CallIdMarkers(
            CallIdPosition.PRE_FUNC_NAME, last_marker(prefix), first_marker(suffix[: suffix.index(name)])
        )
    if result.prefix and result.prefix == arguments.end:
        result = CallIdMarkers(result.position, "", result.suffix)
    if result.suffix and result.suffix == arguments.start:
        result = CallIdMarkers(result.position, result.prefix, "")
    return result


ID_FORMATS = ("openai", "alnum9", "named")
"""How call ids look: ``openai`` is ``call_`` + 24 alphanumerics; ``alnum9`` is 9 alphanumerics, the only form
Mistral's templates accept (they raise on any other id, so a reply's ids would break the next turn's render);
``named`` is ``functions.NAME:INDEX``, for a template that renders a call's id where its name would be and never the
name itself (Kimi-K2's first Thinking revision): the id is the only way the model sees which function was called."""

NAMED_ID_PREFIX = "functions."  # Kimi-K2's id: functions.NAME:INDEX (the model writes it; clients send it back)

_OPENAI_STYLE_ID = "call_" + "a1B2c3D4e5F6g7H8i9J0k1L2"


def analyze_id_format(renderer: VariantRenderer) -> str:
    """The id format the template accepts: ``openai`` unless a call history with an OpenAI-style id fails to render
    where the probe's 9-alphanumeric id renders; ``named`` when the assistant turn shows the call's id but never its
    name."""
    call = needles.tool_call(needles.FUN_FIRST, needles.BOTH_ARGS, _OPENAI_STYLE_ID)
    rendered = renderer.render(needles.with_calls(call), tools=True)
    if rendered is not None:
        turn = rendered[rendered.rfind(needles.USER_MSG) + len(needles.USER_MSG) :]
        return "named" if _OPENAI_STYLE_ID in turn and needles.FUN_FIRST not in turn else "openai"
    if renderer.render(needles.with_calls(needles.FIRST_CALL), tools=True) is not None:
        return "alnum9"
    return "openai"
