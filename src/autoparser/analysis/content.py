"""Content analysis (phase C1): is the answer text bare, or wrapped in markers such as ``<|START_RESPONSE|>``?

Two comparisons isolate the rendered answer: answer vs tool call (C1a) and answer vs reasoning-only turn
(C1b). If the answer appears bare in both, content is PLAIN; otherwise the markers hugging the answer needle
are the content markers (whitespace kept).
"""

from __future__ import annotations

import re

from . import needles
from .model import ContentAnalysis, ContentMode, ReasoningAnalysis
from .patterns import MARKER
from .variants import VariantRenderer

__all__ = ["analyze_content"]

_RESPONSE = re.escape(needles.ASSISTANT_MSG)
_WRAPPED = re.compile(rf"(?P<pre>{MARKER}\s*)?{_RESPONSE}\s*(?P<post>{MARKER}\s*)?", re.DOTALL)
_BARE = re.compile(rf"\s*{_RESPONSE}\s*(?:{MARKER})?\s*", re.DOTALL)


def analyze_content(renderer: VariantRenderer, reasoning: ReasoningAnalysis) -> ContentAnalysis:
    base = [needles.USER, needles.assistant()]
    call = needles.tool_call("test_func", {"arg1": "value1"})
    vs_call = renderer.compare(base, [needles.USER, needles.assistant("", tool_calls=[call])], tools=True)
    vs_reasoning = renderer.compare(
        base, [needles.USER, needles.assistant("", reasoning_content=needles.THINKING)], tools=True
    )
    # (a turn header the template writes otherwise for an answer than for calls is the prompt's, not the answer's)
    call_left = renderer.after_prompt(vs_call.diff.left) if vs_call else ""
    reasoning_left = renderer.after_prompt(vs_reasoning.diff.left) if vs_reasoning else ""
    if call_left.strip() == needles.ASSISTANT_MSG and _is_bare(reasoning_left, reasoning):
        return ContentAnalysis()
    if reasoning.end and reasoning.end in reasoning_left:
        reasoning_left = reasoning_left[reasoning_left.index(reasoning.end) + len(reasoning.end) :]
    pure = max(reasoning_left, call_left, key=len)
    match = _WRAPPED.search(pure)
    if match is None or not (match["pre"] or match["post"]):
        return ContentAnalysis()
    return ContentAnalysis(ContentMode.ALWAYS_WRAPPED, match["pre"] or "", match["post"] or "")


def _is_bare(text: str, reasoning: ReasoningAnalysis) -> bool:
    """The answer stands alone (an end-of-turn marker may follow), or directly follows the reasoning end."""
    if not text or _BARE.fullmatch(text):
        return True
    end = reasoning.end.strip()
    return bool(reasoning.enabled and end and re.search(rf"{re.escape(end)}\s*{_RESPONSE}", text))
