"""The reasoning block and the part of the generation prompt the parser must see.

When the generation prompt already opened the reasoning block (``...<think>\\n``), the model's output starts
inside it. The parser therefore reads ``prefill + output`` where ``prefill`` is the generation prompt from its
last reasoning start marker on (Apriel's ``<|begin_assistant|>\\nHere are my reasoning steps:\\n`` included).
"""

from __future__ import annotations

from .. import peg as p
from ..analysis.model import ReasoningAnalysis, ReasoningMode
from . import tags
from .markers import core, flex
from .request import ParseRequest

__all__ = ["extracts_reasoning", "prefill", "reasoning_block"]


def prefill(generation_prompt: str, reasoning: ReasoningAnalysis) -> str:
    """The tail of the generation prompt that belongs to the model's output (from the last reasoning start)."""
    start = core(reasoning.start)
    if not start or not generation_prompt:
        return ""
    pos = generation_prompt.rfind(start)
    if pos < 0:
        return ""
    tail = generation_prompt[pos:]
    end = core(reasoning.end)
    if end and end in tail and not tail.rstrip().endswith(end):
        return ""  # the prompt opened and closed a block and went on: nothing of it is ours
    return tail


def extracts_reasoning(reasoning: ReasoningAnalysis, request: ParseRequest) -> bool:
    """Reasoning goes to ``reasoning_content`` unless the client asked for it inline (reasoning_format none)."""
    return (
        request.reasoning_format != "none"
        and reasoning.mode is not ReasoningMode.NONE
        and bool(core(reasoning.end))
        and (request.enable_thinking or bool(core(reasoning.start)))
    )


def reasoning_block(reasoning: ReasoningAnalysis) -> p.Parser:
    """``start reasoning end``; an unclosed block runs to the end of the output. A start marker the model repeats
    right after the prompt's own is skipped, so it does not end up in the reasoning text."""
    start, end = core(reasoning.start), core(reasoning.end)
    text = p.tag(tags.REASONING, p.until(end))
    if not start:
        # Only an end delimiter: the text is reasoning only once the delimiter shows up, so nothing is reported
        # while it may still turn out to be the answer.
        return p.atomic(text + flex(reasoning.end))
    opening = flex(reasoning.start) + p.zero_or_more(p.literal(start) + p.space())
    return opening + text + p.choice(flex(reasoning.end), p.end())
