"""Grammar for Gemma 4 output: ``<|tool_call>call:NAME{…}<tool_call|>`` calls whose arguments follow the tool's schema.

The arguments are written in the template's own dict syntax (see :mod:`.parser`), not JSON: their grammar is the
generic one of that family (:mod:`...grammar.dicts`, under Gemma's tokens: ``<|"|>`` strings, ``true``, ``None``);
this module adds Gemma's call markers, thoughts between parallel calls, the ``<|tool_response>`` hand-off and the
thinking tags.
"""

from __future__ import annotations

from ... import peg as p
from ...analysis.model import TemplateAnalysis
from ...grammar.common import Names, json_answer, markup, text_stops
from ...grammar.dicts import dict_grammar
from ...grammar.spec import FormatGrammar, Trigger
from ...parser.calls.tools_dict import GEMMA
from ...parser.request import ParseRequest, ToolSpec
from .markers import CALL_END, CALL_PREFIX, CALL_START, CHANNEL_END, CHANNEL_START, QUOTE, RESPONSE_START, TURN_END

__all__ = ["build_grammar"]

# Every marker the model writes; each is one token in Gemma's vocabulary and must stay whole.
PRESERVED_TOKENS = (CHANNEL_START, CHANNEL_END, CALL_START, CALL_END, QUOTE, RESPONSE_START, TURN_END)

# Gemma's values: ``<|"|>`` strings, JSON booleans, null also as ``None`` (the template renders Python's None).
_VALUES = dict_grammar(GEMMA, "true", "None", "gemma4")


def build_grammar(analysis: TemplateAnalysis, request: ParseRequest) -> FormatGrammar:
    """The lazy tool-call section (trigger ``<|tool_call>``), a json_schema answer after optional thinking, and the
    thinking tags ``<|channel>``/``<channel|>``. The analysis reports only the end tag (start ``""``), with which an
    engine cannot tell that a call written inside a thought is not meant to be one.

    tool_choice required starts with text and whole thought blocks, then the section: the text never opens a thought
    it does not close (the parser ends such a thought at the call, while an engine ignores a trigger inside it), and
    a thought holds no call marker. The whole-output grammar of tool_choice auto keeps the shape structural tags are
    built from (text up to the first ``<|tool_call>``, then optionally the section)."""
    section = _section(request) if request.tools_enabled else None
    required = auto = None
    if section is not None:
        words = [CALL_START]
        auto = p.until_one_of(text_stops(words, markup(analysis, request))) + p.optional(section + p.space())
        text = p.until_one_of(text_stops([*words, CHANNEL_START, CHANNEL_END], markup(analysis, request)))
        thought = p.literal(CHANNEL_START) + p.until_one_of([CHANNEL_END, CALL_START]) + p.literal(CHANNEL_END)
        required = text + p.zero_or_more(thought + text) + section + p.space()
    return FormatGrammar(
        section=section,
        triggers=(Trigger("word", CALL_START),) if section is not None else (),
        required=required,
        auto=auto,
        response=_response(request) if request.json_schema is not None else None,
        preserved_tokens=PRESERVED_TOKENS,
        thinking_tags=(CHANNEL_START, CHANNEL_END),
    )


def _thought() -> p.Parser:
    """A whole ``<|channel>thought\\n…<channel|>`` block (the channel name is part of the text)."""
    return p.literal(CHANNEL_START) + p.until(CHANNEL_END) + p.literal(CHANNEL_END)


def _section(request: ParseRequest) -> p.Parser:
    """One call, or several when parallel calls are on (Gemma may think again between them when thinking is on),
    then the ``<|tool_response>`` hand-off the model may write after its calls."""
    names = Names()
    tools = {t.name: t for t in reversed(request.tools)}  # one rule per name: the first definition wins
    calls = [_call(tools[name], names) for name in dict.fromkeys(t.name for t in request.tools)]
    call = p.choice(*calls)
    if request.parallel_tool_calls:
        between = p.space() + p.optional(_thought() + p.space()) if request.enable_thinking else p.space()
        call = call + p.zero_or_more(between + call)
    return call + p.optional(RESPONSE_START)


def _call(tool: ToolSpec, names: Names) -> p.Parser:
    arguments = _VALUES.arguments(tool, names)
    return p.rule(f"tool-{tool.name}", p.literal(CALL_START + CALL_PREFIX + tool.name) + arguments + CALL_END)


def _response(request: ParseRequest) -> p.Parser:
    """The JSON answer (bare or in a ```json fence), after a thought block when thinking is on."""
    thought = p.optional(_thought() + p.space()) if request.enable_thinking else p.eps()
    return p.space() + thought + json_answer(request) + p.space()
