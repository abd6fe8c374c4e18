"""LFM2 / LFM2.5: tool calls as a Python list of keyword-argument calls.

LFM2 (``lfm2``) wraps the list in markers: ``<|tool_call_start|>[get_time(city="Paris"), f(x=[1])]<|tool_call_end|>``.
LFM2.5 (``lfm2.5``) writes the same list bare, so only ``[`` followed by a known tool name and ``(`` starts a call;
any other ``[`` is text. Neither template shows reasoning markers, but the models (thinking variants, and the
reference's tests) open the answer with ``<think>...</think>``, so that block is read as reasoning.

Arguments are Python literals (``'...'``/``"..."`` strings with Python escapes, ``True``/``False``/``None``,
numbers, lists, dicts). The parser validates them with :func:`~autoparser.peg.python_value` and tags the whole
argument text; :func:`python_kwargs_to_json` turns a complete argument text into a JSON object, which is why the
arguments of a call appear in one piece once its ``)`` is seen.

The grammar (:func:`grammar`) is strict where the parser is lenient: one call list, calls of the request's tools
only, keyword arguments in schema order typed by :class:`.python_literal_grammar.PythonLiteralGrammar`.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata

from ... import peg as p
from ...analysis.model import ReasoningAnalysis, ReasoningMode, TemplateAnalysis
from .. import tags
from ..assemble import GeneratedParser, response_format
from ..grammar import FormatGrammar, Trigger, json_answer
from ..markers import core, flex
from ..reasoning import extracts_reasoning, prefill, reasoning_block
from ..request import ParseRequest, ToolSpec
from .python_literal_grammar import PythonLiteralGrammar

__all__ = ["build", "decode_python_escapes", "grammar", "python_kwargs_to_json", "python_literal_to_json"]

CALL_START = "<|tool_call_start|>"
CALL_END = "<|tool_call_end|>"
# The templates show no reasoning markers; the models use these.
_THINK = ReasoningAnalysis(ReasoningMode.TAG_BASED, "<think>", "</think>")
_IDENTIFIER = p.chars("[a-zA-Z_]", 1, 1) + p.chars("[a-zA-Z0-9_]", 0)
_CALL_OPENERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_ \t\r\n"  # what may follow a call's `[`


def build(analysis: TemplateAnalysis, request: ParseRequest) -> GeneratedParser:
    """The parser for ``lfm2`` (calls between markers) or ``lfm2.5`` (bare call lists)."""
    bare = analysis.format == "lfm2.5"
    reasoning = analysis.reasoning if core(analysis.reasoning.end) else _THINK
    items: list[p.Parser] = []
    triggers: tuple[str, ...] = ()
    if request.tools_enabled:
        calls = _call_list(request.tools)
        if bare:
            triggers = tuple(f"[{tool.name}(" for tool in request.tools)
            # A bracket and identifier followed by "(" looks like a call even when it is not a valid one.
            looks_like_call = p.literal("[") + p.space() + _IDENTIFIER + "("
            # Text runs up to a bracket that may open a call (followed by a name or whitespace); any other
            # bracket is text with what follows it, so `[[[[` is one item, not one per bracket.
            stops = ["[" + ch for ch in _CALL_OPENERS]
            items += [calls, p.tag(tags.UNPARSED, looks_like_call), p.tag(tags.CONTENT, "[" + p.until_one_of(stops))]
            text = p.tag(tags.CONTENT, p.until_one_of(stops))
        else:
            triggers = (CALL_START,)
            # A missing end marker (output cut off, or the model went on) does not undo complete calls.
            section = flex(CALL_START) + calls + p.optional(flex(CALL_END))
            items += [section, p.tag(tags.UNPARSED, p.literal(CALL_START))]
            text = p.tag(tags.CONTENT, p.until(CALL_START))
    else:
        text = p.tag(tags.CONTENT, p.rest())
    # The empty-text alternative comes last: at a bracket it would match nothing and stop the loop.
    items.append(p.negate(p.end()) + text)
    head = p.eps()
    if extracts_reasoning(reasoning, request):
        head = p.optional(reasoning_block(reasoning))
    if request.json_schema is not None:
        head = head + p.space() + p.optional(response_format())
    parser = (head + p.zero_or_more(p.choice(*items)) + p.end()).compile()
    return GeneratedParser(
        parser,
        prefill(request.generation_prompt, reasoning),
        triggers,
        request,
        convert_args=_convert,
    )


def grammar(analysis: TemplateAnalysis, request: ParseRequest) -> FormatGrammar:
    """The grammar parts for ``lfm2`` / ``lfm2.5`` (see :class:`~autoparser.generate.grammar.FormatGrammar`).

    * LFM2: ``<|tool_call_start|>[call, ...]<|tool_call_end|>``, switched on by the start marker.
    * LFM2.5: a bare ``[call, ...]``. Lists in prose are common, so the triggers are the words ``[NAME(`` for each
      tool (as in the reference): only the opening of a real call switches the grammar on.

    A call is ``NAME(kw=value, ...)`` with the tool's arguments as Python literals constrained by its schema; the
    list holds several calls only when the request allows parallel calls. tool_choice required and json_schema
    requests may open with a ``<think>...</think>`` block, which the models write although the templates never show
    it; the thinking tags are reported so that a sampler ignores triggers inside it.
    """
    bare = analysis.format == "lfm2.5"
    reasoning = analysis.reasoning if core(analysis.reasoning.end) else _THINK
    start, end = core(reasoning.start), core(reasoning.end)
    think = p.literal(start) + p.until(end) + p.literal(end) if start else p.until(end) + p.literal(end)
    thinking = p.optional(p.space() + think + p.space())
    preserved = tuple(t for t in (start, end) if t) + (() if bare else (CALL_START, CALL_END))
    response = None
    if request.json_schema is not None:
        response = thinking + json_answer(request) + p.space()
    if not request.tools_enabled:
        return FormatGrammar(response=response, preserved_tokens=preserved, thinking_tags=(start, end))
    taken: set[str] = set()
    arguments = {tool.name: _grammar_arguments(tool, taken) for tool in request.tools}

    def calls(opener: str) -> p.Parser:
        return p.choice(*(p.literal(f"{opener}{tool.name}(") + arguments[tool.name] for tool in request.tools))

    sep = p.space() + "," + p.space()
    more = p.zero_or_more(sep + calls("")) if request.parallel_tool_calls else p.eps()
    if bare:
        # The list's "[" belongs to the first call's opener: that is the trigger word, and text before the calls
        # stops at the trigger word that follows it (an until directly followed by its delimiter).
        section = calls("[") + more + p.space() + "]"
        triggers = tuple(Trigger("word", f"[{tool.name}(") for tool in request.tools)
    else:
        section = CALL_START + "[" + p.space() + calls("") + more + p.space() + "]" + CALL_END
        triggers = (Trigger("word", CALL_START),)
    # Text before the calls (may be empty) never holds the reasoning start tag: reasoning is the optional block
    # before it. Otherwise a reasoning block could also be read as text, and a greedy lexer (llguidance) takes the
    # longer text reading, which breaks off at a trigger word mentioned inside the reasoning.
    content = p.until_one_of([t.value for t in triggers] + ([start] if start else []))
    return FormatGrammar(
        section=section + p.space(),
        triggers=triggers,
        required=thinking + content + section + p.space(),
        response=response,
        preserved_tokens=preserved,
        thinking_tags=(start, end),
    )


def _grammar_arguments(tool: ToolSpec, taken: set[str]) -> p.Parser:
    """What follows ``NAME(`` in a call: the tool's own keyword arguments, typed by its schema, and ``)``.

    ``taken``: the rule names used so far in the grammar (see :class:`PythonLiteralGrammar`)."""
    builder = PythonLiteralGrammar(tool.parameters or {"type": "object"}, f"tool-{tool.name}", taken)
    kwargs = builder.keyword_arguments()
    inside = p.space() if kwargs is None else p.space() + kwargs + p.space()
    return p.rule(builder.name, inside + ")")  # the builder's own rules are named after it: tool-NAME-...


def _kwargs(tagged: bool) -> p.Parser:
    """``name=value, ...`` (possibly empty, a trailing comma allowed), values being Python literals.

    ``tagged`` marks each name and value, for :func:`python_kwargs_to_json`; inside a call the whole text is one
    TOOL_ARGS node and needs no inner tags."""
    name, value = _IDENTIFIER, p.python_value()
    if tagged:
        name, value = p.tag(tags.TOOL_ARG_NAME, name), p.tag(tags.TOOL_ARG_VALUE, value)
    kwarg = name + p.space() + "=" + p.space() + value
    if tagged:
        kwarg = p.tag(tags.TOOL_ARG, kwarg)
    comma = p.space() + "," + p.space()
    return p.optional(kwarg + p.zero_or_more(comma + kwarg) + p.optional(p.space() + ","))


def _call(tool: ToolSpec) -> p.Parser:
    """``name(kwargs)``, complete only at its ``)``.

    The name is reported once the first ``keyword=`` (or the ``)`` of an empty call) shows this is a call in our
    syntax: ``get`` is then never reported for ``get_time``, nor a call whose arguments are positional (invalid),
    which a stream could not take back."""
    first = p.choice(")", _IDENTIFIER + p.space() + "=")
    name = p.atomic(p.tag(tags.TOOL_NAME, p.literal(tool.name)) + "(" + p.peek(p.space() + first))
    body = name + p.commit() + p.space() + p.tag(tags.TOOL_ARGS, _kwargs(tagged=False)) + p.space() + ")"
    return p.recover(p.tag(tags.TOOL, body))  # committed at the name: kept as it stood if the rest breaks


def _call_list(tools: tuple[ToolSpec, ...]) -> p.Parser:
    """``[call, call, ...]``; a list cut off at the end of the output keeps its complete calls."""
    call = p.choice(*(_call(tool) for tool in tools))
    comma = p.space() + "," + p.space()
    calls = call + p.zero_or_more(comma + call) + p.optional(p.space() + ",")
    return p.literal("[") + p.space() + calls + p.space() + p.choice("]", p.end())


@functools.cache
def _kwargs_parser() -> p.CompiledParser:
    return (p.space() + _kwargs(tagged=True) + p.space() + p.end()).compile()


def _convert(name: str, text: str) -> str:
    """The mapper's converter: every tool's keyword arguments read the same way."""
    del name
    return python_kwargs_to_json(text)


def python_kwargs_to_json(text: str) -> str:
    """The JSON object for the keyword arguments ``text`` of a complete call (``a="v", b=[1, True]``).

    The text was validated by the same grammar, so the parse succeeds; a repeated name keeps its last value (the
    first position), as a dict would."""
    result = _kwargs_parser().parse(text)
    members: dict[str, str] = {}
    for node in result.nodes:
        if node.tag != tags.TOOL_ARG:
            continue
        name, value = node.children  # the tagged name and value (sequences make no nodes)
        members[name.text] = python_literal_to_json(value.text)
    body = ", ".join(f"{json.dumps(name)}: {value}" for name, value in members.items())
    return "{" + body + "}"


# Outside strings, a validated Python literal differs from JSON only in its keywords; numbers are JSON numbers.
_PY_TOKEN = re.compile(r"""'([^'\\]*(?:\\[\s\S][^'\\]*)*)'|"([^"\\]*(?:\\[\s\S][^"\\]*)*)"|True|False|None""")
_KEYWORDS = {"True": "true", "False": "false", "None": "null"}
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|N\{[^}]*\}|[0-7]{1,3}|\r\n|[\s\S])")
_SIMPLE_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "v": "\v",
    "\n": "",  # a backslash before a line break continues the string
    "\r\n": "",
    "\r": "",
}
_SURROGATE = re.compile("[\ud800-\udfff]")


def python_literal_to_json(text: str) -> str:
    """JSON text for a (validated) Python literal: strings re-quoted with their escapes decoded the Python way,
    ``True``/``False``/``None`` as ``true``/``false``/``null``; everything else is already JSON."""

    def token(match: re.Match[str]) -> str:
        word = match.group()
        if word in _KEYWORDS:
            return _KEYWORDS[word]
        body = match.group(1) if match.group(1) is not None else match.group(2)
        return json.dumps(decode_python_escapes(body), ensure_ascii=False)

    return _PY_TOKEN.sub(token, text)


def decode_python_escapes(body: str) -> str:
    """The value of a Python string literal's body. Unknown escapes keep their backslash (as Python does); escapes
    Python rejects (``\\N{bad name}``) are kept as written, since model output must never make parsing fail. A
    surrogate pair written as two ``\\u`` escapes (JSON habit) becomes the one character it encodes."""
    if "\\" not in body:
        return body

    def escape(match: re.Match[str]) -> str:
        seq = match.group(1)
        simple = _SIMPLE_ESCAPES.get(seq)
        if simple is not None:
            return simple
        kind = seq[0]
        if kind in "xuU" and len(seq) > 1:
            code = int(seq[1:], 16)
            return chr(code) if code <= 0x10FFFF else match.group()
        if kind == "N" and len(seq) > 1:
            try:
                return unicodedata.lookup(seq[2:-1])
            except KeyError:
                return match.group()
        if kind in "01234567":
            return chr(int(seq, 8))
        return match.group()

    value = _ESCAPE.sub(escape, body)
    if _SURROGATE.search(value):
        value = value.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")
    return value
