"""Kimi K2 (``kimi-k2``): calls named by an id that embeds the function name and a running index.

Output shape::

    <think>reasoning</think>content
    <|tool_calls_section_begin|>
      <|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{json}<|tool_call_end|>
      ...
    <|tool_calls_section_end|>

The markers are fixed by the model family, so they are written here rather than read from the analysis (two of
the three templates cannot even render a tool call in the sandbox: they call ``list.append``). What the generic
parser cannot express:

* the call id is ``functions.NAME:IDX`` — it *contains* the name, so the id and name spans overlap;
* models drop the section markers and even the per-call end marker (``...{json}<|tool_call_begin|>...``), so a
  call ends at its end marker, at whatever follows its arguments, or at the end of the output;
* the thinking model starts calling tools without closing ``<think>``: reasoning stops at a tool-call marker.
"""

from __future__ import annotations

from ... import peg as p
from ...analysis.model import ReasoningAnalysis, ReasoningMode, TemplateAnalysis
from .. import tags
from ..assemble import GeneratedParser, response_format
from ..markers import flex
from ..reasoning import prefill
from ..request import ParseRequest, ToolSpec

__all__ = ["build"]

SECTION_BEGIN = "<|tool_calls_section_begin|>"
SECTION_END = "<|tool_calls_section_end|>"
CALL_BEGIN = "<|tool_call_begin|>"
ARGS_BEGIN = "<|tool_call_argument_begin|>"
CALL_END = "<|tool_call_end|>"
THINK_START = "<think>"
THINK_END = "</think>"
NAME_PREFIX = "functions."

_REASONING = ReasoningAnalysis(ReasoningMode.TAG_BASED, THINK_START, THINK_END)


def build(analysis: TemplateAnalysis, request: ParseRequest) -> GeneratedParser:
    """``[reasoning] item* end``, where an item is a call section, bare calls, stray markup, or content.

    ``analysis`` is not read: the markers are fixed by the format."""
    use_tools = request.tools_enabled
    reasoning = request.reasoning_format != "none"
    triggers = [SECTION_BEGIN, CALL_BEGIN] if use_tools else []
    items: list[p.Parser] = []
    stops = list(triggers)
    if use_tools:
        section, calls = _sections(request.tools)
        items += [section, calls]
    if reasoning:
        items.append(flex(THINK_END))  # a close after calls made inside the thinking block is markup, not text
        stops.append(THINK_END)
    if use_tools:
        # A marker that did not start a valid call (unknown tool, malformed arguments): content, with a warning.
        items.append(p.tag(tags.UNPARSED, p.choice(*(p.literal(t) for t in triggers))))
    text = p.tag(tags.CONTENT, p.until_one_of(stops)) if stops else p.tag(tags.CONTENT, p.rest())
    items.append(p.negate(p.end()) + text)
    head = p.optional(_reasoning_block(triggers)) if reasoning else p.eps()
    if request.json_schema is not None:
        head = head + p.space() + p.optional(response_format())
    root = head + p.zero_or_more(p.choice(*items)) + p.end()
    return GeneratedParser(
        root.compile(),
        prefill(request.generation_prompt, _REASONING) if reasoning else "",
        tuple(triggers),
        request,
        "before_args" if use_tools else "none",
    )


def _reasoning_block(triggers: list[str]) -> p.Parser:
    """``<think>...`` up to ``</think>``, a tool-call marker (the model calls tools mid-thought) or the end."""
    text = p.tag(tags.REASONING, p.until_one_of([THINK_END, *triggers]))
    return flex(THINK_START) + text + p.choice(flex(THINK_END), p.eps())


def _sections(tools: tuple[ToolSpec, ...]) -> tuple[p.Parser, p.Parser]:
    """A section (begin marker, calls, optional end marker) and bare calls (the section markers left out)."""
    call = _call(tools)
    calls = call + p.zero_or_more(p.space() + call) + p.choice(flex(SECTION_END), p.eps())
    section = flex(SECTION_BEGIN) + p.choice(calls, flex(SECTION_END))
    return section, calls


def _call(tools: tuple[ToolSpec, ...]) -> p.Parser:
    """One call. Its node spans the end marker when there is one, so while the marker may still arrive the call
    stays incomplete; anything else after the arguments also ends it (models drop the marker)."""
    heads = p.choice(*(_head(tool) for tool in sorted(tools, key=lambda t: -len(t.name))))
    args = p.choice(p.tag(tags.TOOL_ARGS, p.json()), p.peek(p.space() + CALL_END))  # `{}` may be left out
    return p.tag(tags.TOOL, flex(CALL_BEGIN) + heads + p.space() + args + p.choice(flex(CALL_END), p.eps()))


def _head(tool: ToolSpec) -> p.Parser:
    """``functions.NAME:IDX<|tool_call_argument_begin|>`` as one atomic unit: name and id are reported together,
    once the argument marker shows the name is not a prefix of a longer one. The id is the text as written."""
    call_id = p.optional(NAME_PREFIX) + p.tag(tags.TOOL_NAME, p.literal(tool.name)) + p.optional(":" + p.chars("[0-9]"))
    return p.atomic(p.tag(tags.TOOL_ID, call_id) + p.space() + ARGS_BEGIN)
