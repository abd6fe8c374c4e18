"""LFM2 / LFM2.5: tool calls as a Python list of keyword-argument calls (pythonic calls, a preset layout).

LFM2 (``lfm2``) wraps the list in markers: ``<|tool_call_start|>[get_time(city="Paris"), f(x=[1])]<|tool_call_end|>``.
LFM2.5 (``lfm2.5``) writes the same list bare — and real LFM2.5 output often wraps it in LFM2's markers after all.
Neither template renders a call, so the analysis cannot learn the layout: this module states it as a PYTHONIC tool
format and builds the shared pythonic parser (:mod:`..parser.calls.tools_pythonic`) and grammar
(:mod:`..grammar.pythonic`) from it. The parser accepts every common wrapper for either format (so LFM2.5's wrapped
lists lose their markers); the grammar keeps each format's own layout. Neither template shows reasoning markers,
but the models (thinking variants, and the reference's tests) open the answer with ``<think>...</think>``, so that
block is read as reasoning.

Arguments are Python literals (``'...'``/``"..."`` strings with Python escapes, ``True``/``False``/``None`` — JSON's
spellings are read too — numbers, lists, dicts); a call's arguments appear in one piece once its ``)`` is seen. The
grammar is strict where the parser is lenient: one call list, calls of the request's tools only, keyword arguments
in schema order typed by :class:`..grammar.python_literals.PythonLiteralGrammar`, Python spellings only.
"""

from __future__ import annotations

import dataclasses

from .. import peg as p
from ..analysis.model import (
    PythonicValues,
    ReasoningAnalysis,
    ReasoningMode,
    TemplateAnalysis,
    ToolFormat,
    ToolFormatMode,
    ToolsAnalysis,
)
from ..grammar.common import json_answer
from ..grammar.pythonic import pythonic_grammar_section
from ..grammar.spec import FormatGrammar
from ..parser.assemble import GeneratedParser, build_generic_parser
from ..parser.calls.python_literals import decode_python_escapes, kwargs_to_json, python_literal_to_json
from ..parser.markers import core
from ..parser.request import ParseRequest

__all__ = ["build_grammar", "build_parser", "decode_python_escapes", "python_kwargs_to_json", "python_literal_to_json"]

CALL_START = "<|tool_call_start|>"
CALL_END = "<|tool_call_end|>"
# The templates show no reasoning markers; the models use these.
_THINK = ReasoningAnalysis(ReasoningMode.TAG_BASED, "<think>", "</think>")


def _preset(analysis: TemplateAnalysis) -> TemplateAnalysis:
    """The analysis with the layout the LFM templates never render: a Python call list, bare or in markers."""
    bare = analysis.format == "lfm2.5"
    reasoning = analysis.reasoning if core(analysis.reasoning.end) else _THINK
    fmt = ToolFormat(
        ToolFormatMode.PYTHONIC,
        section_start="" if bare else CALL_START,
        section_end="" if bare else CALL_END,
        tools_array_wrapped=True,
    )
    tools = ToolsAnalysis(fmt, pythonic=PythonicValues(quote='"', keywords="python"))
    return dataclasses.replace(analysis, reasoning=reasoning, tools=tools)


def build_parser(analysis: TemplateAnalysis, request: ParseRequest) -> GeneratedParser:
    """The parser for ``lfm2`` (calls between markers) or ``lfm2.5`` (bare call lists): the generic parser of the
    preset pythonic layout."""
    return build_generic_parser(_preset(analysis), request)


def build_grammar(analysis: TemplateAnalysis, request: ParseRequest) -> FormatGrammar:
    """The grammar parts for ``lfm2`` / ``lfm2.5`` (see :class:`~autoparser.grammar.spec.FormatGrammar`).

    * LFM2: ``<|tool_call_start|>[call, ...]<|tool_call_end|>``, switched on by the start marker.
    * LFM2.5: a bare ``[call, ...]``. Lists in prose are common, so the triggers are the words ``[NAME(`` for each
      tool (as in the reference): only the opening of a real call switches the grammar on.

    A call is ``NAME(kw=value, ...)`` with the tool's arguments as Python literals constrained by its schema; the
    list holds several calls only when the request allows parallel calls. tool_choice required and json_schema
    requests may open with a ``<think>...</think>`` block, which the models write although the templates never show
    it; the thinking tags are reported so that a sampler ignores triggers inside it.
    """
    preset = _preset(analysis)
    bare = analysis.format == "lfm2.5"
    start, end = core(preset.reasoning.start), core(preset.reasoning.end)
    think = p.literal(start) + p.until(end) + p.literal(end) if start else p.until(end) + p.literal(end)
    thinking = p.optional(p.space() + think + p.space())
    preserved = tuple(t for t in (start, end) if t) + (() if bare else (CALL_START, CALL_END))
    response = None
    if request.json_schema is not None:
        response = thinking + json_answer(request) + p.space()
    if not request.tools_enabled:
        return FormatGrammar(response=response, preserved_tokens=preserved, thinking_tags=(start, end))
    section, triggers = pythonic_grammar_section(preset.tools, request)
    # Text before the calls (may be empty) never holds the reasoning start tag: reasoning is the optional block
    # before it. Otherwise a reasoning block could also be read as text, and a greedy lexer (llguidance) takes the
    # longer text reading, which breaks off at a trigger word mentioned inside the reasoning.
    content = p.until_one_of([t.value for t in triggers] + ([start] if start else []))
    return FormatGrammar(
        section=section + p.space(),
        triggers=triggers,
        required=thinking + content + section + p.space(),
        auto=thinking + content + p.optional(section + p.space()),
        response=response,
        preserved_tokens=preserved,
        thinking_tags=(start, end),
    )


def python_kwargs_to_json(text: str) -> str:
    """The JSON object for the keyword arguments ``text`` of a complete call (``a="v", b=[1, True]``)."""
    return kwargs_to_json(text)
