"""Assemble the whole-output parser from the analysis and the request (generic formats).

Shape: ``[reasoning block] item* end`` where an item is a tool-call section, a wrapped content block, plain
content up to the next marker, or a marker that failed to parse (kept as content and reported). Because every
item either parses as structure or falls back to content, a complete parse never fails on model output.

End-of-turn markers (``<|im_end|>``, ``</s>``: what the template writes after an answer, the marker its next turn
opens with, the common stop tokens: :func:`end_of_turn_markers`) that end the output, possibly followed by
whitespace or more of them, are markup: a model (or a server that does not strip them) wrote them to end its turn.
Anywhere else they are text, kept as content without a warning: ``</s>`` is also HTML, and a model that went on
after its end of turn wrote something the client may want to see.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .. import peg as p
from ..analysis.model import CallIdPosition, ContentMode, TemplateAnalysis, ToolFormat, ToolFormatMode
from . import tags
from .calls.dropped_markers import dropped_marker_calls, name_json_call, reads_name_then_json
from .calls.resync import JSON, call_stops, recover_call
from .calls.tools_dict import args_converter, dict_calls, syntax_of
from .calls.tools_json import ARGUMENT_KEYS, SPECIAL_TOKEN, field_key, json_calls
from .calls.tools_pythonic import PythonicParser, pythonic_parser
from .calls.tools_tagged import tagged_calls
from .calls.undeclared import marker
from .leftovers import WELL_KNOWN_ONLY, LeftoverMarkers
from .markers import FENCE, core, flex, is_fence, is_word_marker, language_tag, opener, opener_rest, opener_trigger
from .reasoning import prefill, reasoning_head
from .regular import RegularReply
from .request import ParseRequest

__all__ = [
    "GeneratedParser",
    "build_generic_parser",
    "end_of_turn",
    "end_of_turn_markers",
    "response_format",
]

# Where a bare JSON call may start in a format without markers: an object, an array of calls (its bracket followed by
# an object, not every `[` of the text), or a special token the model writes before them (Llama 3's `<|python_tag|>`).
_BARE_STARTS = ("{", "[{", "[ ", "[\n", "<|")
_TOKEN_PAIR = re.compile(r"(<\|([a-z_]+)_start\|>)(<\|\2_end\|>)")  # `<|x_start|><|x_end|>`: a pair of tokens


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
    id_format: str = "openai"  # how ids are generated for calls written without one (analysis.id_format)
    # The markup a reply's content must not hold unread (a warning for each find; reading/leftovers.py): set by
    # build.py for every parser, generic or dedicated, from the analysis, the request and the triggers.
    leftovers: LeftoverMarkers = WELL_KNOWN_ONLY
    # Every literal that can start structure in this parser (None: not known, as for the dedicated formats), and the
    # short path for the replies that hold none of them (parser/regular.py; set by build.py with the leftovers).
    markup: tuple[str, ...] | None = None
    regular: RegularReply | None = None
    # The analysis the generic parser was built from (a dedicated format may preset parts of the template's: LFM2's
    # pythonic calls); the short path reads the same layout. None: the template's own.
    layout: TemplateAnalysis | None = None


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
    dropped_stops: list[str] = []
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
        # Calls whose special-token markers a detokenizer dropped (read with a warning where unambiguous).
        dropped = dropped_marker_calls(analysis, request)
        items.extend(dropped.items)
        dropped_stops = [s for s in dropped.stops if s not in stops]
        stops.extend(dropped_stops)
    content = analysis.content
    if content.mode in (ContentMode.ALWAYS_WRAPPED, ContentMode.WRAPPED_WITH_REASONING) and core(content.start):
        # A wrapped answer runs to its end marker, or to a call marker: a model that opened the answer and called a
        # tool inside it (`<answer>Let me check.<tool_call>...</tool_call></answer>`) wrote calls, not text; the
        # closer after them is then a stray end-of-answer marker (markup, below).
        # It also runs only to an end-of-turn marker: the answer's closer may be one the analysis did not tell apart
        # from the end of turn (`<|START_RESPONSE|>…<|END_RESPONSE|><|END_OF_TURN_TOKEN|>`, learned as the end of
        # turn where no call render shows the closer alone), or the model dropped the closer; the marker is then
        # read as the end of turn it is (markup at the end of the output, text elsewhere: below).
        end = core(content.end)
        call_starts = _call_markers(triggers, pythonic)
        ends = [m for m in end_of_turn_markers(analysis) if m != end]
        # (an answer wrapper without an end marker runs to a call marker, an end of turn or the end of the output)
        stops_at = [m for m in (end, *call_starts, *ends) if m]
        body = p.tag(tags.CONTENT, p.until_one_of(stops_at) if stops_at else p.rest())
        closing = [flex(content.end)] if end else []
        if call_starts or ends:
            closing.append(p.peek(p.choice(*map(p.literal, [*call_starts, *ends]))))
        items.append(flex(content.start) + body + (p.choice(*closing, p.end()) if closing else p.eps()))
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
        unparsed = [t for t in triggers if t not in ("{", "[", FENCE, *_BARE_STARTS)]  # bare starts: see below
        if fmt.mode is ToolFormatMode.TAG_WITH_TAGGED and name_prefix.startswith("<") and name_prefix not in wrappers:
            unparsed.append(name_prefix)
            stops.append(name_prefix)
    stops = sorted({s for s in stops if s}, key=len, reverse=True)
    if use_tools and pythonic is None and ("{" in stops or "[" in stops):
        # JSON calls without markers: every bracket may start one, except where the parse already found the value
        # malformed (a long broken object stays one stretch of text).
        bracket = "{" if "{" in stops else "["
        text_run = p.until_viable_json(bracket, stops=[s for s in stops if s != bracket])
    else:
        text_run = p.until_one_of(stops) if stops else p.rest()
    text = p.tag(tags.CONTENT, text_run)
    if pythonic is not None:
        items[1:1] = pythonic.fallbacks(text_run)  # right after the section
    if use_tools and unparsed:
        # The marker and the text after it are one item, so the calls are not re-tried at every such stretch.
        ordered = sorted(set(unparsed), key=len, reverse=True)
        marks = [s for s in ordered if not is_word_marker(s)]
        if marks:
            choices = (p.literal(s) for s in marks)
            items.append(p.tag(tags.UNPARSED, p.choice(*choices)) + p.optional(p.negate(p.end()) + text))
        for word in (s for s in ordered if s not in marks):
            # A word a prompt names as the call marker (`toolcall[...]`) is also a word of the language (`import
            # functools`, `functoolsy`): unless a bracket follows it or the output ends with it, it is text, as the
            # grammars read it (their trigger is the word with its bracket); there it failed to start calls.
            # (the first word of a section start of several words, Command R+'s `Action:`: the rest of it too)
            rest = opener_rest(fmt.section_start) if opener_trigger(fmt.section_start) == word else None
            as_word = p.peek(p.space() + p.negate(p.choice("[", "{", p.end(), *([rest] if rest else []))))
            items.append(p.tag(tags.CONTENT, p.literal(word) + as_word + text_run))
            items.append(p.tag(tags.UNPARSED, p.literal(word)) + p.optional(p.negate(p.end()) + text))
    items += eot
    items.append(p.negate(p.end()) + text)
    for bare in dict.fromkeys(("{", "[", FENCE, *_BARE_STARTS, *dropped_stops)):
        if not use_tools or (bare not in triggers and bare not in dropped_stops):
            continue
        if bare in triggers and bare[0] in "{[`":
            # Bare-JSON formats (no markers) and code fences: a bracket or fence that starts something call-like
            # but did not parse is reported; any other bracket or fence (a code block in the answer) is just text.
            # Call-like: the name key, its string and then the arguments key (or the arguments key first); an object
            # that merely has a "name" member (`{"name": "Alice", "age": 3}`) is JSON an answer quotes.
            looks_like_call = p.space() + p.optional(p.literal("{") + p.space()) + _call_like(fmt)
            if bare == FENCE:
                looks_like_call = language_tag() + p.space() + p.choice("[", "{") + looks_like_call
            items.insert(-1, p.tag(tags.UNPARSED, p.literal(bare) + p.peek(looks_like_call)))
        # Where no call starts, the text is content, together with the text after it (one item, not one per start).
        # A run of brackets goes with it, all but the last (which may still open a call list: `[[{"name": ...`), so
        # `[[[[` is not one item per bracket.
        run = p.zero_or_more(p.literal(bare) + p.peek(bare)) if bare in ("{", "[") else p.eps()
        items.insert(-1, p.tag(tags.CONTENT, p.literal(bare) + run + text_run))
    body = p.zero_or_more(p.choice(*items))
    # Markers, not bare brackets: a `{` in the reasoning neither ends the block nor decides it.
    marked = [s for s in stops if s not in ("{", "[", *_BARE_STARTS, *dropped_stops)]
    starts = [t for t in triggers if t in marked]
    if pythonic is not None:  # (its other stops are brackets, fences and words)
        marked = starts = [s for s in stops if s in pythonic.markers]
    head = reasoning_head(analysis, request, section, starts, marked)
    if request.json_schema is not None:
        head = head + p.space() + p.optional(response_format(marked))
    parser = (head + body + p.end()).compile()
    markup = {*stops, *triggers, *unparsed, *dropped_stops, *_structural_markers(analysis)}
    if pythonic is not None:
        markup.update((*pythonic.stops, *pythonic.markers, *pythonic.triggers))
    return GeneratedParser(
        parser,
        prefill(request.generation_prompt, analysis.reasoning),
        tuple(triggers),
        request,
        _id_position(analysis) if use_tools else "none",
        _converter(analysis, pythonic) if use_tools else None,
        markup=tuple(sorted(m for m in markup if m)),
        layout=analysis,
    )


def _converter(analysis: TemplateAnalysis, pythonic: PythonicParser | None) -> Callable[[str, str], str] | None:
    """How complete TOOL_ARGS text becomes JSON, for formats whose arguments are not JSON."""
    if pythonic is not None:
        return pythonic.convert
    if analysis.tools.format.mode is ToolFormatMode.TAG_WITH_DICT:
        return args_converter(syntax_of(analysis.tools.dict_values))
    return None


#: End-of-sequence and end-of-turn tokens of the common model families (Qwen/GPT, Llama 3, ChatML, Phi-3, DeepSeek,
#: Gemma). An output that ends with one was stopped there by a server that did not strip it, or comes from a model
#: whose template was loaded without its tokenizer config: markup at the end of the output, text anywhere else.
#: (``</s>`` is not among them: it is also HTML. It counts where the template writes an unknown ``eos_token``:
#: ``TemplateAnalysis.stop_markers``.)
COMMON_STOPS = (
    "<|endoftext|>",
    "<|end_of_text|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|im_end|>",
    "<|end|>",
    "<｜end▁of▁sentence｜>",
    "<end_of_turn>",
)


def _call_like(fmt: ToolFormat) -> p.Parser:
    """The start of a JSON object that reads as a call of this format: its name key with a string, then its arguments
    key (either order); any key where the format has no name field (the name is the key)."""
    if not fmt.name_field:
        return p.literal('"')
    colon = p.space() + ":" + p.space()
    name = p.literal(f'"{field_key(fmt.name_field)}"') + colon
    keys = dict.fromkeys((field_key(fmt.args_field), *ARGUMENT_KEYS))
    args = p.choice(*(p.literal(f'"{key}"') for key in keys if key))
    return p.choice(name + p.json_string() + p.space() + "," + p.space() + args, args + colon)


def _call_markers(triggers: list[str], pythonic: PythonicParser | None) -> list[str]:
    """The markers that start tool calls (not the bare brackets or fences JSON calls may start with)."""
    if pythonic is not None:
        return [t for t in triggers if t in pythonic.markers]
    return [t for t in dict.fromkeys(triggers) if t and t not in ("{", "[", FENCE, *_BARE_STARTS)]


def end_of_turn_markers(analysis: TemplateAnalysis) -> list[str]:
    """The markers that end a turn, trimmed, longest first (text runs stop at them): the template's end-of-turn
    markers, the marker its next turn opens with, and the common stop tokens — except those that are the
    template's own markup for something else (a reasoning, content or tool-call marker decides what it is)."""
    own = {m.strip() for m in analysis.end_of_turn if m.strip()}
    structural = _structural_markers(analysis)
    others = {m.strip() for m in (*analysis.stop_markers, *COMMON_STOPS) if m.strip()} - structural
    return sorted(own | others, key=lambda m: (-len(m), m))


def _structural_markers(analysis: TemplateAnalysis) -> set[str]:
    tools = analysis.tools
    fmt = tools.format
    markers = (
        analysis.reasoning.start,
        analysis.reasoning.end,
        analysis.content.start,
        analysis.content.end,
        fmt.section_start,
        fmt.section_end,
        fmt.per_call_start,
        fmt.per_call_end,
        tools.function.name_prefix,
        tools.function.close,
    )
    return {core(m) for m in markers if core(m)}


def end_of_turn(analysis: TemplateAnalysis) -> list[p.Parser]:
    """Items for the template's end-of-turn markers (see the module docstring): at the end of the output
    (whitespace and more such markers may follow) a marker is markup; elsewhere it is text."""
    markers = end_of_turn_markers(analysis)
    if not markers:
        return []
    marker = p.choice(*(p.literal(m) for m in markers))
    # A run of markers is one item either way, so a run followed by text is scanned twice, not once per marker
    # (`<|im_end|> ` repeated was quadratic).
    run = marker + p.zero_or_more(p.space() + marker)
    return [run + p.space() + p.end(), p.tag(tags.CONTENT, run)]


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


def response_format(markers: Sequence[str] = ()) -> p.Parser:
    """A JSON answer, optionally in a ```json fence (the schema is enforced by the grammar, not here).

    What a stream shows of it must hold whatever follows (docs/architecture.md, "How the stream stays linear"):

    * In a fence, the answer is committed once the fence's ```` ```json ```` is complete (and no other letter
      follows it): it streams as it arrives, and if it breaks or is cut off it is kept as far as it was valid JSON,
      the rest following as content up to the closing fence (consumed) or up to the first of ``markers`` (where
      the text goes on as usual: the markers that start calls, blocks, the end of the turn). Otherwise the fence,
      hidden so far, would come back as text in front of what was shown (```` ```json{ ```` cut off streamed ``{``
      and then parsed to ```` ```json{ ````).
    * A bare value is shown once complete. Until then it may still turn out to be something else that starts with
      the same character — ``[TOOL_CALLS]``, a pythonic ``[get_weather(...)]``, a word marker (``functools[`` vs
      ``false``), a bare-JSON call list cut off — which the parse then reads as such (a complete one is the
      answer)."""
    # (The answer's JSON is scanned privately: that the answer broke off at a call inside it must not make the
    # calls' own guards take the call objects for known-malformed JSON, which a call read alone would not.)
    answer = p.json(private=True)
    fence = p.literal("```json") + p.negate(p.chars("[A-Za-z0-9_+.-]", 1, 1))  # not ```jsonl, ```json5
    fenced = p.recover(
        fence + p.space() + p.commit() + p.tag(tags.CONTENT, answer) + p.space() + FENCE,
        rest=tuple(dict.fromkeys((FENCE, *(m for m in markers if m)))),
        rest_tag=tags.CONTENT,
        closers=(FENCE,),
    )
    value = p.atomic(p.tag(tags.CONTENT, answer))
    # The space after the answer is the content's own (text may follow it; at the end the message trims it).
    return p.choice(fenced, value) + p.tag(tags.CONTENT, p.space())


def _tool_section(analysis: TemplateAnalysis, request: ParseRequest) -> tuple[p.Parser, list[str]]:
    """The tool-call section parser and the markers that can start it."""
    tools = analysis.tools
    fmt = tools.format
    per_start, per_end = core(fmt.per_call_start), core(fmt.per_call_end)
    sec_start, sec_end = core(fmt.section_start), core(fmt.section_end)
    json_native = fmt.mode is ToolFormatMode.JSON_NATIVE
    dict_args = fmt.mode is ToolFormatMode.TAG_WITH_DICT  # `call:NAME{key:<|"|>v<|"|>}`: see tools_dict.py
    undeclared = marker(request)  # calls of tools the request does not declare: see undeclared.py
    stops = call_stops(analysis)  # where the rest of a broken call ends (resync.py)
    brackets = JSON if fmt.mode in (ToolFormatMode.TAG_WITH_JSON, ToolFormatMode.TAG_WITH_DICT) else ""
    # A closer the template's own pairs imply (`[/TOOL_CALLS]`; analysis/calls/closers.py) is consumed after the calls.
    implied = p.optional(flex(fmt.implied_end)) if core(fmt.implied_end) else p.eps()
    # Calls and sections are recover()-ed: once a call committed (a stream announced it), a malformed or cut-off
    # rest keeps it as it stood where the output stopped being a valid call, instead of turning it into content.
    if per_start and json_native:
        # JSON calls in per-call wrappers: one object per wrapper as the template writes it, or several objects or
        # an array of them in one wrapper. The wrapper is markup around the calls, as a section is.
        closing = p.choice(flex(fmt.per_call_end), p.end()) if per_end else p.space() + implied
        inner = json_calls(fmt, request.tools, undeclared=undeclared, rest=stops)
        wrapped = p.recover(flex(fmt.per_call_start) + inner + closing)
        calls = wrapped + p.zero_or_more(p.space() + wrapped)
        lone = wrapped + p.optional(p.space() + p.peek(p.literal(per_start)))
    elif per_start:
        single = dict_calls(tools, request) if dict_args else tagged_calls(tools, request)
        if reads_name_then_json(tools):
            # `[TOOL_CALLS]get_weather{...}`: the marker before the arguments was dropped (recorded: a warning)
            single = p.choice(single, *(name_json_call(tools, tool) for tool in request.tools))
        # The call's node spans its end marker, so a call counts as complete only once that marker is seen; the
        # marker commits it (a call without arguments has no earlier commit point).
        cut = p.tag(tags.CUT, p.end())  # the output ended before the marker: the call may be cut off
        closing = p.choice(p.space() + p.literal(per_end) + p.commit() + p.space(), cut) if per_end else implied
        whole = p.tag(tags.TOOL, flex(fmt.per_call_start) + single + closing)
        wrapped = recover_call(whole, stops, balanced=brackets, closers=(tools.function.close, fmt.per_call_end))
        # The JSON envelope in the wrapper instead of the template's syntax (`<tool_call>\n{"name": ...}` from a
        # Qwen3-Coder model, `[TOOL_CALLS][{"name": ...}]` from Mistral's earlier models): the call is complete as
        # written, so it is read without a warning.
        envelope = json_calls(ToolFormat(ToolFormatMode.JSON_NATIVE), request.tools, rest=stops)
        after = p.choice(flex(fmt.per_call_end), p.end()) if per_end else p.space() + implied
        wrapped = p.choice(wrapped, p.recover(flex(fmt.per_call_start) + envelope + after))
        calls = wrapped + p.zero_or_more(p.space() + wrapped)
        # Outside a section every call is an item of its own, so a stream resumes after the last settled call
        # rather than re-reading all calls of a long run; whitespace up to the next call is still part of it.
        lone = wrapped + p.optional(p.space() + p.peek(p.literal(per_start)))
    elif json_native:
        # (a code fence is no marker: JSON in it is a call of an undeclared tool only in the call's exact shape)
        bare = not sec_start or is_fence(sec_start)
        calls = json_calls(fmt, request.tools, undeclared=undeclared, bare=bare, rest=stops)
    else:
        single = dict_calls(tools, request) if dict_args else tagged_calls(tools, request)
        call = recover_call(p.tag(tags.TOOL, single), stops, balanced=brackets, closers=(tools.function.close,))
        between = p.space() + p.optional(p.choice(",", ";")) + p.space() if dict_args else p.space()
        calls = call + p.zero_or_more(between + call)
    if sec_start:
        closing = p.choice(flex(fmt.section_end), p.end()) if sec_end else p.space() + implied
        section = p.recover(opener(fmt.section_start) + calls + closing)
        if per_start:  # models sometimes drop the section markers around per-call markers
            return p.choice(section, lone), [sec_start, per_start]
        if is_fence(sec_start) and json_native:
            # A code fence a prompt showed around the JSON calls: models also write the calls without it.
            return p.choice(section, calls), [FENCE, "[" if fmt.tools_array_wrapped else "{"]
        pair = _TOKEN_PAIR.fullmatch(sec_start)
        if pair and json_native and not sec_end:
            # `<|python_start|><|python_end|>` before the calls is the template wrapping (empty) content in a pair of
            # tokens (Llama 4): the template writes the answer's text inside the pair, models also write the calls.
            opening, ending = flex(pair[1]), p.choice(flex(pair[3]), p.end())
            inside = p.recover(opening + calls + ending)
            # (the text is shown once the first call after the pair has parsed: before, it may still be an answer)
            text = opening + p.tag(tags.CONTENT, p.until(pair[3])) + flex(pair[3])
            text_first = p.atomic(text + p.peek(calls)) + calls
            return p.choice(section, inside, p.recover(text_first)), [sec_start, pair[1]]
        # (a section start of several words, `Action:` then a fence, starts at its first word: see opener())
        return section, [opener_trigger(fmt.section_start)]
    if per_start:
        return lone, [per_start]
    # No markers at all (Llama 3.x): a call is a bare JSON object (or an array of them), maybe after a special
    # token such as `<|python_tag|>`; what separates the calls is consumed with them.
    calls = json_calls(fmt, request.tools, opener=SPECIAL_TOKEN, undeclared=undeclared, bare=True, rest=stops)
    word = core(fmt.stated_word)
    if word:
        # The instructions prescribe a word before the calls that the renders leave out (`callfn[{...}]`): read with
        # the calls, as markup, and — a plain word — text where no call follows it (the word items of the parser).
        return p.choice(p.recover(opener(word) + calls), calls), [*_BARE_STARTS, word]
    return calls, list(_BARE_STARTS)
