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

The grammar (:func:`grammar`) is strict where the parser is lenient, but keeps the two liberties the models really
take: the section markers may be left out (and then the per-call end markers too), and a call may start inside an
unclosed ``<think>`` block.
"""

from __future__ import annotations

from .. import peg as p
from ..analysis.calls.call_ids import NAMED_ID_PREFIX
from ..analysis.model import ReasoningAnalysis, ReasoningMode, TemplateAnalysis
from ..grammar.common import json_answer, rule_safe
from ..grammar.spec import FormatGrammar, Trigger
from ..parser import tags
from ..parser.assemble import GeneratedParser, end_of_turn, end_of_turn_markers, response_format
from ..parser.calls import undeclared
from ..parser.calls.resync import JSON, recover_call
from ..parser.markers import flex
from ..parser.reasoning import prefill
from ..parser.request import ParseRequest, ToolSpec

__all__ = ["build_grammar", "build_parser"]

SECTION_BEGIN = "<|tool_calls_section_begin|>"
SECTION_END = "<|tool_calls_section_end|>"
CALL_BEGIN = "<|tool_call_begin|>"
ARGS_BEGIN = "<|tool_call_argument_begin|>"
CALL_END = "<|tool_call_end|>"
THINK_START = "<think>"
THINK_END = "</think>"
NAME_PREFIX = NAMED_ID_PREFIX  # the call id is functions.NAME:IDX

_REASONING = ReasoningAnalysis(ReasoningMode.TAG_BASED, THINK_START, THINK_END)


def build_parser(analysis: TemplateAnalysis, request: ParseRequest) -> GeneratedParser:
    """``[reasoning] item* end``, where an item is a call section, bare calls, stray markup, or content.

    The markers are fixed by the format; only the end-of-turn marker (``<|im_end|>``) comes from ``analysis``."""
    use_tools = request.tools_enabled
    reasoning = request.reasoning_format != "none"
    triggers = [SECTION_BEGIN, CALL_BEGIN] if use_tools else []
    items: list[p.Parser] = []
    stops = list(triggers)
    if use_tools:
        section, calls = _sections(request, end_of_turn_markers(analysis))
        items += [section, calls]
    if reasoning:
        items.append(flex(THINK_END))  # a close after calls made inside the thinking block is markup, not text
        stops.append(THINK_END)
    if use_tools:
        # A marker that did not start a valid call (unknown tool, malformed arguments): content, with a warning.
        items.append(p.tag(tags.UNPARSED, p.choice(*(p.literal(t) for t in triggers))))
    stops += end_of_turn_markers(analysis)
    items += end_of_turn(analysis)  # markup at the end of the output, text elsewhere
    text = p.tag(tags.CONTENT, p.until_one_of(stops)) if stops else p.tag(tags.CONTENT, p.rest())
    items.append(p.negate(p.end()) + text)
    head = p.optional(_reasoning_block(triggers)) if reasoning else p.eps()
    if request.json_schema is not None:
        head = head + p.space() + p.optional(response_format(stops))  # (where a broken fenced answer ends)
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


def _sections(request: ParseRequest, ends: list[str]) -> tuple[p.Parser, p.Parser]:
    """A section (begin marker, calls, optional end marker) and bare calls (the section markers left out); ``ends``:
    the end-of-turn markers (the rest of a broken call stops there too)."""
    call = _call(request, ends)
    calls = call + p.zero_or_more(p.space() + call) + p.choice(flex(SECTION_END), p.eps())
    section = flex(SECTION_BEGIN) + p.choice(calls, flex(SECTION_END))
    return section, calls


def _call(request: ParseRequest, ends: list[str]) -> p.Parser:
    """One call. Its node spans the end marker when there is one, so while the marker may still arrive the call
    stays incomplete; anything else after the arguments also ends it (models drop the marker). A tool the request
    does not declare is read too, and marked (see parser/calls/undeclared.py)."""
    declared = [_head(tool) for tool in sorted(request.tools, key=lambda t: -len(t.name))]
    heads = p.choice(*declared, *undeclared.alternative(request, _undeclared_head(request.tools)))
    args = p.choice(p.tag(tags.TOOL_ARGS, p.json(canonical=True)), p.peek(p.space() + CALL_END))  # `{}` may be left out
    body = flex(CALL_BEGIN) + heads + p.commit() + p.space() + args + p.choice(flex(CALL_END), p.eps())
    # Committed at the head: kept as it stood if the rest breaks; the rest, up to the call's end, is left out.
    stops = (CALL_END, CALL_BEGIN, SECTION_END, SECTION_BEGIN, THINK_END, *ends)
    return recover_call(p.tag(tags.TOOL, body), stops, balanced=JSON, closers=(CALL_END,))


_INDEX = p.optional(":" + p.chars("[0-9]"))


def _head(tool: ToolSpec) -> p.Parser:
    """``functions.NAME:IDX<|tool_call_argument_begin|>`` as one atomic unit: name and id are reported together,
    once the argument marker shows the name is not a prefix of a longer one. The id is the text as written."""
    call_id = p.optional(NAME_PREFIX) + p.tag(tags.TOOL_NAME, p.literal(tool.name)) + _INDEX
    return p.atomic(p.tag(tags.TOOL_ID, call_id) + p.space() + ARGS_BEGIN)


def _undeclared_head(tools: tuple[ToolSpec, ...]) -> p.Parser:
    """As :func:`_head` for any other name."""
    end = _INDEX + p.space() + ARGS_BEGIN
    name = p.tag(tags.TOOL_NAME, p.chars(undeclared.IDENTIFIER_CHARS))
    call_id = p.optional(NAME_PREFIX) + undeclared.not_declared(tools, end) + name + _INDEX
    return p.atomic(p.tag(tags.TOOL_ID, call_id) + p.space() + ARGS_BEGIN)


# --- grammar -------------------------------------------------------------------------------------------------------

# Every marker of the format is one special token in the Kimi tokenizer; the analysis of moonshotai-Kimi-K2 reports
# fragments of the call id instead (``functions.``, ``:0<|tool_call_argument_begin|>``), so the list is fixed here.
PRESERVED_TOKENS = (SECTION_BEGIN, SECTION_END, CALL_BEGIN, ARGS_BEGIN, CALL_END, THINK_START, THINK_END)


def build_grammar(analysis: TemplateAnalysis, request: ParseRequest) -> FormatGrammar:
    """The grammar parts for ``request``: a lazy section triggered by either call-opening marker, the default
    whole-output shape for ``tool_choice="required"`` (any text, then the calls) and an optional reasoning block
    before a ``json_schema`` answer.

    No thinking tags are reported, on purpose: a tool-call marker *ends* Kimi's reasoning (the thinking model calls
    tools from inside an unclosed ``<think>``, corpus cases ``Kimi-K2-Thinking_011``/``_012``), so a sampler must
    not ignore the triggers between ``<think>`` and ``</think>``; tags would tell it to. ``analysis`` is not read:
    the markers are fixed by the format, and the analysis cannot tell the thinking template from the others."""
    response = _response(request) if request.json_schema is not None else None
    if not request.tools_enabled:
        return FormatGrammar(response=response, preserved_tokens=PRESERVED_TOKENS, thinking_tags=("", ""))
    return FormatGrammar(
        section=_grammar_section(request),
        # The section markers are optional, so a call may also open with its own marker.
        triggers=(Trigger("word", SECTION_BEGIN), Trigger("word", CALL_BEGIN)),
        response=response,
        preserved_tokens=PRESERVED_TOKENS,
        thinking_tags=("", ""),
    )


def _grammar_section(request: ParseRequest) -> p.Parser:
    """``<|tool_calls_section_begin|>`` calls ``<|tool_calls_section_end|>``, or the calls alone.

    Inside a section every call is closed by its end marker; without one, models drop the end markers too
    (``{json}<|tool_call_begin|>...`` and a last call ending at the end of the output), so they are optional there.
    Several calls only when the request allows parallel calls."""
    tools = [p.rule(f"tool-{tool.name}", _grammar_call(tool)) for tool in request.tools]
    # ``functions.`` is shared, not repeated per tool: llguidance turns a tool whose arguments are terminal-only
    # into one greedy lexeme, and ``functions.get_weather...`` would then swallow the start of ``get_weather_now``.
    head = CALL_BEGIN + NAME_PREFIX + (tools[0] if len(tools) == 1 else p.choice(*tools))

    def calls(end: p.Parser) -> p.Parser:
        call = head + end
        return call + p.zero_or_more(p.space() + call) if request.parallel_tool_calls else call

    sectioned = SECTION_BEGIN + p.space() + calls(p.space() + CALL_END) + p.space() + SECTION_END
    return p.choice(sectioned, calls(p.optional(p.space() + CALL_END)))


def _grammar_call(tool: ToolSpec) -> p.Parser:
    """``NAME:IDX<|tool_call_argument_begin|>{json}``: the id as the template writes it (the index counts the calls
    of the whole conversation, so any number), then the arguments under the tool's schema. Every alternative ends
    its name at ``:``, so no tool's lexeme can end inside another tool's name."""
    arguments = p.schema(p.json(), f"{rule_safe(tool.name)}-args", tool.parameters or {"type": "object"})
    return p.literal(tool.name) + ":" + p.chars("[0-9]", 1) + ARGS_BEGIN + p.space() + arguments


def _response(request: ParseRequest) -> p.Parser:
    """The answer to a ``json_schema`` request: an optional ``<think>`` block (the thinking model reasons first),
    then the JSON value, bare or in a ```json fence."""
    reasoning = p.optional(THINK_START + p.until(THINK_END) + p.literal(THINK_END) + p.space())
    return p.space() + reasoning + json_answer(request) + p.space()

