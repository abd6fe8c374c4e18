"""The reasoning block and the part of the generation prompt the parser must see.

When the generation prompt already opened the reasoning block (``...<think>\\n``), the model's output starts
inside it. The parser therefore reads ``prefill + output`` where ``prefill`` is the generation prompt from its
last reasoning start marker on (Apriel's ``<|begin_assistant|>\\nHere are my reasoning steps:\\n`` included).

Models take liberties with the markers; the block accepts them (docs/parsing.md, "Reasoning liberties"):

* **A tool call ends an unterminated block.** At a call-start marker inside the block the reading depends on what
  comes later: if the end marker follows anywhere, the marker (a call the model only thought about) is reasoning;
  if the output ends without it, the block ended at the first marker that starts calls that parse, with a warning
  when the model wrote reasoning before it. A stream holds the marker and what follows until that is decided.
* **An end marker without its start marker**, where the request has the model think and the template expects
  the model to open the block itself: the text before it is reasoning (with a warning), unless another marker
  (a tool call, a content wrapper, the start marker) comes first. A stream holds such an answer until decided.
* **A redundant opener**: a start marker the model repeats after the prompt's own is skipped; after a prompt that
  opened *and closed* an empty block, a block the model writes anyway is read as reasoning too.
* **The end marker first** (``</think>answer``): an empty block, not a stray marker in the content.
* **A well-known block from a template that renders none**: a reply that *starts* with ``<think>…</think>`` or
  ``<thinking>…</thinking>`` is reasoning (calls inside are not calls) where the template shows no reasoning at all;
  anywhere else such tags are text. A stream holds back only a start of the reply that could still become one.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import peg as p
from ..analysis.model import ReasoningAnalysis, ReasoningMode, TemplateAnalysis, ToolFormatMode
from . import tags
from .markers import core, flex
from .request import ParseRequest

__all__ = [
    "WELL_KNOWN_BLOCKS",
    "expects_opener",
    "extracts_reasoning",
    "leading_block",
    "prefill",
    "reasoning_block",
    "reasoning_head",
    "unopened_block",
    "well_known_blocks",
]

# Reasoning blocks models write whether or not their template shows one (start, end).
WELL_KNOWN_BLOCKS = (("<think>", "</think>"), ("<thinking>", "</thinking>"))


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


def expects_opener(analysis: TemplateAnalysis, request: ParseRequest) -> bool:
    """Whether the reasoning block may be open although the reply does not open it: thinking is on, the template
    has a block with both markers that its model opens itself (its thinking prompt writes no opener: Qwen3, GLM-4.6,
    SmolLM3, Ministral 3, Seed-OSS; where the prompt opens the block, the prompt's opener is prefill), and this
    request's generation prompt wrote neither marker. A model that then writes only the closer
    (``plan</think>answer``, ``plan[/THINK]answer``: the opener dropped, or stripped as a special token) wrote
    reasoning before it.

    Only then is text before an end marker the model wrote without its opener read as reasoning. A stream must hold
    such text until it is decided: that costs nothing when the model opens its block as expected, but holds a plain
    answer (no marker at all) until the output ends."""
    reasoning = analysis.reasoning
    start, end = core(reasoning.start), core(reasoning.end)
    gp = request.generation_prompt
    return (
        request.enable_thinking
        and reasoning.mode is not ReasoningMode.DELIMITER
        and bool(start and end)
        and start not in analysis.generation_prompts.thinking
        and start not in gp
        and end not in gp
    )


def reasoning_head(
    analysis: TemplateAnalysis,
    request: ParseRequest,
    calls: p.Parser | None = None,
    call_starts: Sequence[str] = (),
    structural: Sequence[str] = (),
) -> p.Parser:
    """What comes before the parser's items: the reasoning block, with the liberties of the module docstring.

    ``calls`` parses tool calls at a call-start marker (``call_starts``: marker text, not bare brackets);
    ``structural`` are the markers that start anything but plain text (they decide an undecided unopened block)."""
    reasoning = analysis.reasoning
    if not extracts_reasoning(reasoning, request):
        if request.reasoning_format == "none":
            return p.eps()
        if core(reasoning.end):
            # Thinking off where the template has only an end delimiter (Apriel 1.5): one the reply starts with is
            # still markup.
            return p.optional(flex(reasoning.end))
        known = well_known_blocks(analysis, request, structural)
        if not known:
            return p.eps()
        return p.optional(p.choice(*(leading_block(block, calls, call_starts) for block in known)))
    block = leading_block(reasoning, calls, call_starts)
    if expects_opener(analysis, request) and not _bare_calls(analysis, request):
        block = p.choice(block, unopened_block(reasoning, [*structural, core(reasoning.start)]))
    head = p.optional(block)
    tail = prefill(request.generation_prompt, reasoning)
    if tail and core(reasoning.end) and core(reasoning.end) in tail and core(reasoning.start):
        # The prompt opened and closed an (empty) block; a block the model writes anyway is still reasoning.
        head = head + p.optional(leading_block(reasoning, calls, call_starts))
    return head


def _bare_calls(analysis: TemplateAnalysis, request: ParseRequest) -> bool:
    """Whether the request's calls start with no marker (a bare JSON object or Python list: LFM2.5). There no marker
    decides a reply that may be reasoning before its end, so a stream would hold its calls until the output ends:
    an end marker without its opener is not looked for."""
    tools = analysis.tools
    fmt = tools.format
    markers = (fmt.section_start, fmt.per_call_start, tools.function.name_prefix)
    return request.tools_enabled and fmt.mode is not ToolFormatMode.NONE and not any(core(m) for m in markers)


def leading_block(
    reasoning: ReasoningAnalysis, calls: p.Parser | None = None, call_starts: Sequence[str] = ()
) -> p.Parser:
    """:func:`reasoning_block`, or the end marker alone as the first thing in the reply (``</think>answer``): an
    empty block, not a stray marker in the content."""
    block = reasoning_block(reasoning, calls, call_starts)
    if not core(reasoning.end) or not core(reasoning.start):
        return block  # (a template with only an end delimiter reads a leading one so already)
    return p.choice(block, flex(reasoning.end))


def well_known_blocks(
    analysis: TemplateAnalysis, request: ParseRequest, markers: Sequence[str] = ()
) -> list[ReasoningAnalysis]:
    """The well-known blocks (:data:`WELL_KNOWN_BLOCKS`) a reply may start with, for a template that shows no
    reasoning at all: none with ``reasoning_format="none"``, and none whose tags the template uses for something else
    (Nemotron Nano v2's answers open with ``<think>``: a content wrapper, written into the generation prompt)."""
    reasoning = analysis.reasoning
    if request.reasoning_format == "none" or reasoning.mode is not ReasoningMode.NONE or core(reasoning.end):
        return []
    content = analysis.content
    taken = {core(content.start), core(content.end), *markers}
    found = []
    for start, end in WELL_KNOWN_BLOCKS:
        if start in taken or end in taken or start in request.generation_prompt:
            continue
        found.append(ReasoningAnalysis(ReasoningMode.TAG_BASED, start, end))
    return found


def reasoning_block(
    reasoning: ReasoningAnalysis, calls: p.Parser | None = None, call_starts: Sequence[str] = ()
) -> p.Parser:
    """``start reasoning end``; an unclosed block runs to the end of the output, or (with ``calls``) to the first
    call-start marker where calls parse. A start marker the model repeats right after the prompt's own is skipped,
    so it does not end up in the reasoning text."""
    start, end = core(reasoning.start), core(reasoning.end)
    if not start:
        # Only an end delimiter: the text is reasoning only once the delimiter shows up, so nothing is reported
        # while it may still turn out to be the answer.
        return p.atomic(p.tag(tags.REASONING, p.until(end)) + flex(reasoning.end))
    opening = flex(reasoning.start) + p.zero_or_more(p.literal(start) + p.space())
    starts = sorted({s for s in call_starts if s and s != end}, key=len, reverse=True)
    if calls is None or not starts:
        return opening + p.tag(tags.REASONING, p.until(end)) + p.choice(flex(reasoning.end), p.end())
    marker = p.choice(*(p.literal(s) for s in starts))
    text = p.tag(tags.REASONING, p.until_one_of([end, *starts]))
    # The model wrote nothing but a call (a prompt's block left open, thinking off): no reasoning text was cut off.
    straight = p.space() + p.peek(marker) + _after_marker(reasoning, calls, marker, starts, warn=False)
    written = text + p.choice(flex(reasoning.end), _after_marker(reasoning, calls, marker, starts, warn=True))
    return opening + p.choice(straight, written)


def _after_marker(
    reasoning: ReasoningAnalysis, calls: p.Parser, marker: p.Parser, starts: list[str], *, warn: bool
) -> p.Parser:
    """The block's text stopped at a call-start marker: what follows is decided by the rest of the output.

    * The end marker follows somewhere: all of it up to there is reasoning (a call the model quoted or only thought
      about). On partial input without the end marker this alternative needs more input, so a stream shows nothing
      of the marker and what follows until the end marker arrives or the output is complete.
    * Complete output without the end marker: the block ends at the first marker where calls parse (a marker
      whose calls do not parse is reasoning text); without any, the block runs to the end of the output."""
    end = core(reasoning.end)
    closed_later = p.atomic(p.tag(tags.REASONING, p.until(end))) + flex(reasoning.end)
    note = p.tag(tags.UNCLOSED_REASONING, p.eps())
    here = p.peek(calls)
    not_a_call = p.negate(calls) + p.tag(tags.REASONING, marker + p.until_one_of(starts))
    unterminated = p.choice(
        here + (note if warn else p.eps()),
        p.one_or_more(not_a_call) + p.choice(here + note, p.end()),
        p.end(),
    )
    return p.choice(closed_later, unterminated)


def unopened_block(reasoning: ReasoningAnalysis, stops: Sequence[str]) -> p.Parser:
    """Reasoning the model wrote without the start marker: the text up to the end marker, provided none of
    ``stops`` comes first. It is one atomic unit, so on partial input nothing of it is shown until the end marker
    (reasoning) or a stop or the end of the output (not reasoning: the answer) decides it."""
    end = core(reasoning.end)
    delimiters = sorted({s for s in (end, *stops) if s}, key=len, reverse=True)
    text = p.tag(tags.REASONING, p.until_one_of(delimiters))
    return p.atomic(text + p.space() + p.tag(tags.UNOPENED_REASONING, p.literal(end)) + p.space())
