"""Assemble the whole-output parser from the analysis and the request (generic formats).

Shape: ``[reasoning block] item* end`` where an item is a tool-call section, a wrapped content block, plain
content up to the next marker, or a marker that failed to parse (kept as content and reported). Because every
item either parses as structure or falls back to content, a complete parse never fails on model output.

End-of-turn markers (``<|im_end|>``, ``</s>``: what the template writes after an answer) that end the output,
possibly followed by whitespace or more of them, are markup: a model (or a server that does not strip them) wrote
them to end its turn. Anywhere else they are text, kept as content without a warning: ``</s>`` is also HTML, and a
model that went on after its end of turn wrote something the client may want to see.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from .. import peg as p
from ..analysis.model import CallIdPosition, ContentMode, TemplateAnalysis, ToolFormatMode
from . import tags
from .markers import FENCE, core, flex, is_fence, language_tag, opener
from .reasoning import prefill, reasoning_head
from .request import ParseRequest
from .tools_json import field_key, json_call, json_calls
from .tools_pythonic import PythonicParser, pythonic_parser
from .tools_tagged import tagged_calls
from .undeclared import marker

__all__ = [
    "GeneratedParser",
    "build_generic_parser",
    "build_parser",
    "end_of_turn",
    "end_of_turn_markers",
    "response_format",
]


@dataclass(frozen=True, slots=True)
class GeneratedParser:
    """A compiled parser for one (analysis, request) pair, plus what the mapper needs to know."""

    parser: p.CompiledParser
    prefill: str
    tool_triggers: tuple[str, ...]  # markers that start a tool call in this format (not read yet: grammar triggers)
    request: ParseRequest
    id_position: str = "none"  # where a call's id comes: "none", "before_args" or "after_args"
    # Formats whose arguments are not JSON (pythonic calls, Gemma's dicts, MiniMax-M3's XML elements) convert the
    # complete TOOL_ARGS text to JSON text: ``convert_args(tool_name, text)`` (the tool's schema may type the
    # values); while a call is incomplete its arguments are then held back.
    convert_args: Callable[[str, str], str] | None = None


@functools.lru_cache(maxsize=256)
def build_parser(analysis: TemplateAnalysis, request: ParseRequest) -> GeneratedParser:
    """The parser for ``analysis`` under ``request`` (cached: building costs more than parsing)."""
    from .formats import dedicated_builder  # formats build on this module

    builder = dedicated_builder(analysis.format)
    if builder is not None:
        return builder(analysis, request)
    return build_generic_parser(analysis, request)


def build_generic_parser(analysis: TemplateAnalysis, request: ParseRequest) -> GeneratedParser:
    """The parser built from the analysed markers alone."""
    tools = analysis.tools
    fmt = tools.format
    use_tools = request.tools_enabled and fmt.mode is not ToolFormatMode.NONE
    items: list[p.Parser] = []
    stops: list[str] = []
    triggers: list[str] = []
    section: p.Parser | None = None
    pythonic: PythonicParser | None = None
    if use_tools and fmt.mode is ToolFormatMode.PYTHONIC:
        pythonic = pythonic_parser(tools, request)
        section = pythonic.section
        items.append(section)
        triggers.extend(pythonic.triggers)
        stops.extend(pythonic.stops)
    elif use_tools:
        section, starts = _tool_section(analysis, request)
        items.append(section)
        triggers.extend(starts)
        stops.extend(starts)
    content = analysis.content
    if content.mode in (ContentMode.ALWAYS_WRAPPED, ContentMode.WRAPPED_WITH_REASONING) and core(content.start):
        end = core(content.end)
        body = p.tag(tags.CONTENT, p.until(end)) if end else p.tag(tags.CONTENT, p.rest())
        items.append(flex(content.start) + body + (p.choice(flex(content.end), p.end()) if end else p.eps()))
        stops.append(core(content.start))
    if core(content.end) and content.mode is not ContentMode.PLAIN:
        items.append(flex(content.end))  # a stray end-of-answer marker is markup, not text
        stops.append(core(content.end))
    eot = end_of_turn(analysis)  # (after the other markers, some of which start with one: GigaChat's section)
    stops += end_of_turn_markers(analysis)
    unparsed: list[str] = []
    if use_tools and pythonic is None:
        # A function marker outside the call wrapper the template writes (the model dropped `<tool_call>`): not
        # read as a call, but reported, like any marker that does not start a valid call.
        name_prefix = core(analysis.tools.function.name_prefix)
        wrappers = (core(fmt.per_call_start), core(fmt.section_start))
        unparsed = [t for t in triggers if t not in ("{", "[", FENCE)]  # bare brackets and fences: see below
        if fmt.mode is ToolFormatMode.TAG_WITH_TAGGED and name_prefix.startswith("<") and name_prefix not in wrappers:
            unparsed.append(name_prefix)
            stops.append(name_prefix)
    stops = sorted({s for s in stops if s}, key=len, reverse=True)
    brackets = [s for s in stops if s in ("{", "[")]
    others = [s for s in stops if s not in ("{", "[")]
    if len(brackets) == 1 and use_tools and set(others) <= set(end_of_turn_markers(analysis)):
        # Bare JSON calls: every bracket may start one, except where the parse already found the value malformed
        # (a long broken object stays one stretch of text).
        text_run = p.until_viable_json(brackets[0], stops=others)
    else:
        text_run = p.until_one_of(stops) if stops else p.rest()
    text = p.tag(tags.CONTENT, text_run)
    if pythonic is not None:
        items[1:1] = pythonic.fallbacks(text_run)  # right after the section
    if use_tools and unparsed:
        # The marker and the text after it are one item, so the calls are not re-tried at every such stretch.
        choices = (p.literal(s) for s in sorted(set(unparsed), key=len, reverse=True))
        items.append(p.tag(tags.UNPARSED, p.choice(*choices)) + p.optional(p.negate(p.end()) + text))
    items += eot
    items.append(p.negate(p.end()) + text)
    for bare in ("{", "[", FENCE):
        if use_tools and bare in triggers:
            # Bare-JSON formats (no markers) and code fences: a bracket or fence that starts something call-like
            # but did not parse is reported; any other bracket or fence (a code block in the answer) is just text.
            name_key = f'"{field_key(fmt.name_field)}"' if fmt.name_field else '"'
            looks_like_call = p.space() + p.optional(p.literal("{") + p.space()) + name_key
            if bare == FENCE:
                looks_like_call = language_tag() + p.space() + p.choice("[", "{") + looks_like_call
            items.insert(-1, p.tag(tags.UNPARSED, p.literal(bare) + p.peek(looks_like_call)))
            # Any other bracket is text, together with the text after it (one item, not two per bracket).
            items.insert(-1, p.tag(tags.CONTENT, p.literal(bare) + text_run))
    body = p.zero_or_more(p.choice(*items))
    # Markers, not bare brackets: a `{` in the reasoning neither ends the block nor decides it.
    marked = [s for s in stops if s not in ("{", "[")]
    starts = [t for t in triggers if t in marked]
    if pythonic is not None:  # (its other stops are brackets, fences and words)
        marked = starts = [s for s in stops if s in pythonic.markers]
    head = reasoning_head(analysis, request, section, starts, marked)
    if request.json_schema is not None:
        head = head + p.space() + p.optional(response_format())
    parser = (head + body + p.end()).compile()
    return GeneratedParser(
        parser,
        prefill(request.generation_prompt, analysis.reasoning),
        tuple(triggers),
        request,
        _id_position(analysis) if use_tools else "none",
        pythonic.convert if pythonic is not None else None,
    )


def end_of_turn_markers(analysis: TemplateAnalysis) -> list[str]:
    """The template's end-of-turn markers, trimmed, longest first (text runs stop at them)."""
    return sorted({m.strip() for m in analysis.end_of_turn if m.strip()}, key=len, reverse=True)


def end_of_turn(analysis: TemplateAnalysis) -> list[p.Parser]:
    """Items for the template's end-of-turn markers (see the module docstring): at the end of the output
    (whitespace and more such markers may follow) a marker is markup; elsewhere it is text."""
    markers = end_of_turn_markers(analysis)
    if not markers:
        return []
    marker = p.choice(*(p.literal(m) for m in markers))
    final = marker + p.peek(p.zero_or_more(p.space() + marker) + p.space() + p.end())
    return [final, p.tag(tags.CONTENT, marker)]


def _id_position(analysis: TemplateAnalysis) -> str:
    """Whether calls carry ids, and whether they come before the arguments (a call is reported only once its id
    is known: a stream sends each call's id once)."""
    tools = analysis.tools
    fmt = tools.format
    if fmt.mode is ToolFormatMode.JSON_NATIVE:
        id_field = fmt.id_field or fmt.gen_id_field
        if not id_field:
            return "none"
        order = list(fmt.parameter_order)
        if id_field in order and fmt.args_field in order and order.index(id_field) < order.index(fmt.args_field):
            return "before_args"
        return "after_args"
    if tools.call_id.position is CallIdPosition.BETWEEN_FUNC_AND_ARGS and core(tools.call_id.prefix):
        return "before_args"
    if tools.call_id.position is CallIdPosition.PRE_FUNC_NAME and core(tools.function.name_prefix):
        return "before_args"
    return "none"


def response_format() -> p.Parser:
    """A JSON answer, optionally in a ```json fence (the schema is enforced by the grammar, not here)."""
    value = p.tag(tags.CONTENT, p.json())
    fenced = p.literal("```json") + p.space() + value + p.space() + "```"
    return p.choice(fenced, value) + p.space()


def _tool_section(analysis: TemplateAnalysis, request: ParseRequest) -> tuple[p.Parser, list[str]]:
    """The tool-call section parser and the markers that can start it."""
    tools = analysis.tools
    fmt = tools.format
    per_start, per_end = core(fmt.per_call_start), core(fmt.per_call_end)
    sec_start, sec_end = core(fmt.section_start), core(fmt.section_end)
    undeclared = marker(request)  # calls of tools the request does not declare: see undeclared.py
    if fmt.mode is ToolFormatMode.JSON_NATIVE:
        single = json_call(fmt, request.tools, undeclared)
    else:
        single = tagged_calls(tools, request)
    # Calls and sections are recover()-ed: once a call committed (a stream announced it), a malformed or cut-off
    # rest keeps it as it stood where the output stopped being a valid call, instead of turning it into content.
    if per_start:
        # The call's node spans its end marker, so a call counts as complete only once that marker is seen; the
        # marker commits it (a call without arguments has no earlier commit point).
        cut = p.tag(tags.CUT, p.end())  # the output ended before the marker: the call may be cut off
        closing = p.choice(p.space() + p.literal(per_end) + p.commit() + p.space(), cut) if per_end else p.eps()
        wrapped = p.recover(p.tag(tags.TOOL, flex(fmt.per_call_start) + single + closing))
        calls = wrapped + p.zero_or_more(p.space() + wrapped)
        # Outside a section every call is an item of its own, so a stream resumes after the last settled call
        # rather than re-reading all calls of a long run; whitespace up to the next call is still part of it.
        lone = wrapped + p.optional(p.space() + p.peek(p.literal(per_start)))
    elif fmt.mode is ToolFormatMode.JSON_NATIVE:
        calls = json_calls(fmt, request.tools, undeclared, bare=not sec_start)
    else:
        call = p.recover(p.tag(tags.TOOL, single))
        calls = call + p.zero_or_more(p.space() + call)
    if sec_start:
        closing = p.choice(flex(fmt.section_end), p.end()) if sec_end else p.space()
        section = p.recover(opener(fmt.section_start) + calls + closing)
        if per_start:  # models sometimes drop the section markers around per-call markers
            return p.choice(section, lone), [sec_start, per_start]
        if is_fence(sec_start) and fmt.mode is ToolFormatMode.JSON_NATIVE:
            # A code fence a prompt showed around the JSON calls: models also write the calls without it.
            return p.choice(section, calls), [FENCE, "[" if fmt.tools_array_wrapped else "{"]
        return section, [sec_start]
    if per_start:
        return lone, [per_start]
    # No markers at all (Llama 3.x): a call is a bare JSON object.
    start = "[" if fmt.tools_array_wrapped else "{"
    return calls, [start]
