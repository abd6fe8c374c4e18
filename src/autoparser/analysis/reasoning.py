"""Reasoning analysis (phases R1-R3): does the model think, and between which markers?

R1 renders an assistant turn with and without ``reasoning_content`` and reads the markers around the needle.
R2 renders the generation prompt with thinking disabled and enabled: templates that open ``<think>`` for the
model (or close it when thinking is off) reveal their markers there. R3 checks whether reasoning is rendered
only next to tool calls. The result uses TAG_BASED / TOOLS_ONLY / NONE; :func:`classify_reasoning` later refines
it with the generation prompts (DELIMITER, FORCED_OPEN, FORCED_CLOSED).
"""

from __future__ import annotations

import dataclasses
import re

from ..template.markup import names_reasoning, paired_closer
from . import needles
from .diff import SegmentKind, prune_whitespace_segments, segmentize_markers
from .model import GenerationPrompts, ReasoningAnalysis, ReasoningMode
from .patterns import MARKER, last_marker
from .variants import VariantRenderer

__all__ = ["analyze_reasoning", "classify_reasoning"]

_THINKING = re.escape(needles.THINKING)
_WRAPPED = re.compile(rf"(?P<pre>{MARKER}\s*){_THINKING}(?P<post>\s*{MARKER}\s*)", re.DOTALL)
_TRAILING = re.compile(rf"{_THINKING}\s*(?P<post>{MARKER}\s*)?", re.DOTALL)
_WRAPPED_TIGHT = re.compile(rf"(?P<pre>{MARKER}\s*){_THINKING}\s*(?P<post>{MARKER}\s*)", re.DOTALL)


def analyze_reasoning(
    renderer: VariantRenderer, supports_tool_calls: bool, supports_typed_content: bool = False
) -> ReasoningAnalysis:
    result = _from_assistant_turn(renderer, ReasoningAnalysis())
    if not result.enabled and supports_typed_content:
        result = _from_content_blocks(renderer, result)
    result = _from_generation_prompt(renderer, result)
    if supports_tool_calls:
        result = _tools_only_scope(renderer, result)
    return result


def _from_assistant_turn(renderer: VariantRenderer, result: ReasoningAnalysis) -> ReasoningAnalysis:
    """R1: markers around the reasoning needle in a rendered assistant turn."""
    base = [needles.USER, needles.assistant()]
    with_reasoning = [needles.USER, needles.assistant(reasoning_content=needles.THINKING)]
    comparison = renderer.compare(base, with_reasoning)
    if comparison is None or needles.THINKING not in comparison.diff.right:
        return result
    match = _WRAPPED.search(comparison.b)
    if match:
        return ReasoningAnalysis(ReasoningMode.TAG_BASED, match["pre"], match["post"])
    match = _TRAILING.search(comparison.b)
    if match and match["post"]:
        return ReasoningAnalysis(ReasoningMode.TAG_BASED, "", match["post"])
    return result


def _from_content_blocks(renderer: VariantRenderer, result: ReasoningAnalysis) -> ReasoningAnalysis:
    """R1 for templates that take reasoning only as a typed ``thinking`` content block (Ministral 3)."""
    text = {"type": "text", "text": needles.ASSISTANT_MSG}
    thinking = {"type": "thinking", "thinking": needles.THINKING}
    comparison = renderer.compare(
        [needles.USER, needles.assistant([text])], [needles.USER, needles.assistant([thinking, text])]
    )
    if comparison is None or needles.THINKING not in comparison.diff.right:
        return result
    match = _WRAPPED.search(comparison.b)
    if match is None:
        return result
    return ReasoningAnalysis(ReasoningMode.TAG_BASED, match["pre"], match["post"], in_content_blocks=True)


def _from_generation_prompt(renderer: VariantRenderer, result: ReasoningAnalysis) -> ReasoningAnalysis:
    """R2: what enabling thinking changes in the generation prompt."""
    comparison = renderer.compare([needles.USER], [needles.USER], add_generation_prompt=True, thinking=(False, True))
    if comparison is None:
        return _promote(result)
    diff = comparison.diff
    left, right = diff.left.strip(), diff.right.strip()
    start, end = result.start, result.end
    found = False
    if not left and right and comparison.b.endswith(right):
        # Thinking on appends an opening marker to the prompt.
        if not start:
            start, found = diff.right, True
    elif not right and left and comparison.a.rstrip().endswith(left) and not end:
        # Thinking off appends a closed empty block (whitespace may follow it: EXAONE 4's `</think>\n\n`): its last
        # two markers are start and end.
        segments = prune_whitespace_segments(segmentize_markers(comparison.a))
        if len(segments) >= 2 and segments[-1].value == left and segments[-2].kind is SegmentKind.MARKER:
            start, end, found = segments[-2].value, diff.left, True
    elif left and right and not (start or end) and _swapped_marker(comparison.a, comparison.b):
        # Thinking on ends the prompt with an opener, thinking off with its closer (DeepSeek-V3.1's `<think>` and
        # `</think>`, switched by `thinking`).
        start, end, found = last_marker(comparison.b), last_marker(comparison.a), True
    elif left and right:
        start, end, found = _rewritten_prompt(comparison.a, comparison.b, start, end)
    if found:
        result = dataclasses.replace(result, mode=ReasoningMode.TAG_BASED, start=start, end=end)
    return _promote(result)


def _swapped_marker(off: str, on: str) -> bool:
    """The prompt with thinking on ends with an opener, the one with thinking off with that opener's closer."""
    opener, closer = last_marker(on), last_marker(off)
    return (
        bool(opener)
        and on.rstrip().endswith(opener)
        and off.rstrip().endswith(closer)
        and (paired_closer(opener) == closer)
    )


def _rewritten_prompt(off: str, on: str, start: str, end: str) -> tuple[str, str, bool]:
    """Both prompts differ (e.g. SmolLM3 rewrites its system prompt): look for an added ``<a></a>`` pair."""
    for base, extended in ((on, off), (off, on)):
        anchor = base[-64:]
        pos = extended.rfind(anchor)
        if pos < 0 or pos + len(anchor) >= len(extended):
            continue
        extra = extended[pos + len(anchor) :].strip()
        segments = prune_whitespace_segments(segmentize_markers(extra))
        if len(segments) == 2 and all(s.kind is SegmentKind.MARKER for s in segments):
            return start or segments[0].value, end or segments[1].value, True
    return start, end, False


def _promote(result: ReasoningAnalysis) -> ReasoningAnalysis:
    if result.mode is ReasoningMode.NONE and not result.start and result.end:
        return dataclasses.replace(result, mode=ReasoningMode.TAG_BASED)
    return result


def _tools_only_scope(renderer: VariantRenderer, result: ReasoningAnalysis) -> ReasoningAnalysis:
    """R3: reasoning that is rendered next to tool calls but dropped from plain answers."""
    base = [needles.USER, needles.assistant(reasoning_content=needles.THINKING)]
    call = needles.tool_call(needles.FUN_FIRST, {needles.ARG_FIRST: "VVVV", needles.ARG_SECOND: "XXXX"})
    with_call = [needles.USER, needles.assistant(None, reasoning_content=needles.THINKING, tool_calls=[call])]
    comparison = renderer.compare(base, with_call, tools=True)
    if comparison is None or needles.THINKING in comparison.a or needles.THINKING not in comparison.b:
        return result
    match = _WRAPPED_TIGHT.search(comparison.b)
    if match:
        return ReasoningAnalysis(ReasoningMode.TOOLS_ONLY, match["pre"], match["post"])
    match = _TRAILING.search(comparison.b)
    if match and match["post"]:
        return ReasoningAnalysis(ReasoningMode.TOOLS_ONLY, result.start, match["post"])
    return ReasoningAnalysis()


def classify_reasoning(
    result: ReasoningAnalysis, prompts: GenerationPrompts, source: str = "", content_start: str = ""
) -> ReasoningAnalysis:
    """Refine TAG_BASED with the generation prompts: DELIMITER, FORCED_OPEN or FORCED_CLOSED.

    Without rendered reasoning, a tag the prompt opens may still be a reasoning block (R4), unless the content
    analysis already read it as the answer's own wrapper (Nemotron Nano v2 wraps answers in ``<think>``)."""
    if result.mode is ReasoningMode.NONE and source:
        opened = _opened_by_prompt(prompts.thinking, source)
        if opened is not None and opened.start.strip() != content_start.strip():
            result = opened
    if result.mode is not ReasoningMode.TAG_BASED:
        return result
    if not result.start.strip():
        return dataclasses.replace(result, mode=ReasoningMode.DELIMITER)
    if _opens(prompts.thinking, result):
        closed = prompts.no_thinking.rstrip().endswith(result.end.strip()) if result.end.strip() else False
        mode = ReasoningMode.FORCED_CLOSED if closed else ReasoningMode.FORCED_OPEN
        return dataclasses.replace(result, mode=mode)
    return result


def _opens(prompt: str, result: ReasoningAnalysis) -> bool:
    """Whether ``prompt`` leaves a reasoning block open (its last start marker is not followed by an end)."""
    start, end = result.start.strip(), result.end.strip()
    pos = prompt.rfind(start)
    return pos >= 0 and (not end or end not in prompt[pos:])


_MARKER_AT_END = re.compile(rf"{MARKER}\s*\Z")


def _opened_by_prompt(prompt: str, source: str) -> ReasoningAnalysis | None:
    """R4: the generation prompt ends by opening a block that only the model closes. No rendered turn shows the
    block, but the model's output starts inside it. The closer is the opener's pair by the usual conventions
    (:func:`~.patterns.paired_closer`: ``<x>``/``</x>``, ``[X]``/``[/X]``, ``<|START_X|>``/``<|END_X|>``, ...),
    taken where the template's source writes it (``<thought>`` with ``</thought>``, where history turns strip the
    block: EXAONE Deep, LongCat) or, where no render and no line of the template ever closes it, where the opener's
    name says reasoning (OLMo's thinker opens ``<think>`` and never writes ``</think>``)."""
    match = _MARKER_AT_END.search(prompt)
    if match is None:
        return None
    opener = match.group().strip()
    closer = paired_closer(opener)
    if not closer:
        return None
    written = closer in source and opener.startswith("<") and not opener.startswith("<|")
    if not (written or names_reasoning(opener)):
        return None
    return ReasoningAnalysis(ReasoningMode.TAG_BASED, prompt[match.start() :], closer)
