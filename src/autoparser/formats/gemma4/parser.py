"""Gemma 4: ``<|channel>thought\\n…<channel|>`` reasoning and ``<|tool_call>call:NAME{…}<tool_call|>`` calls.

The arguments are neither JSON nor tags but the template's own dict syntax: ``{key:<|"|>text<|"|>,n:1,on:true,
xs:[<|"|>a<|"|>],cfg:{k:<|"|>v<|"|>}}``. The generic analysis learns that syntax from the rendered calls
(TAG_WITH_DICT), and the calls are read by the generic pieces (:mod:`...parser.calls.tools_dict`: the ``gemma``
flavor of the iterative scanner, :func:`args_to_json`); this module remains for what the generic markers cannot
describe, below.

Reasoning sits in a ``<|channel>thought`` block anywhere in the output (Gemma may think again between calls).
With thinking off, the generation prompt itself ends with an empty, closed block, so the output never starts
inside one and no prefill is needed. Stray markup the model emits around its answer (a lone ``<channel|>``,
``<turn|>``, the ``<|tool_response>`` hand-off after a call) is dropped rather than shown as text.
"""

from __future__ import annotations

from ... import peg as p
from ...analysis.model import TemplateAnalysis
from ...parser import tags
from ...parser.assemble import GeneratedParser
from ...parser.calls.resync import JSON, recover_call
from ...parser.calls.tools_dict import GEMMA, args_converter, dict_call
from ...parser.calls.tools_dict import args_to_json as dict_args_to_json
from ...parser.request import ParseRequest
from .markers import (
    CALL_END,
    CALL_PREFIX,
    CALL_START,
    CHANNEL_END,
    CHANNEL_START,
    RESPONSE_START,
    THOUGHT,
    TURN_END,
)

__all__ = ["args_to_json", "build_parser"]




def build_parser(analysis: TemplateAnalysis, request: ParseRequest) -> GeneratedParser:
    """``item* end``: each item is a call, a reasoning block, dropped markup, a failed call start (UNPARSED) or
    plain content up to the next marker, so every character of the output lands somewhere.

    The markers are fixed by the format; ``analysis`` (whose generic findings do not describe this syntax) is not
    consulted."""
    del analysis
    use_tools = request.tools_enabled
    extract = request.reasoning_format != "none"
    items: list[p.Parser] = []
    stops = [TURN_END, RESPONSE_START]
    if use_tools:
        # Whitespace after a call is formatting between calls, not content.
        # The rest of a broken call, up to its end marker (or the dict's closing brace), is left out with a warning.
        ends = (CALL_END, CALL_START, TURN_END, RESPONSE_START, CHANNEL_START)
        call = recover_call(p.tag(tags.TOOL, _call(request)), ends, balanced=JSON, closers=(CALL_END,))
        items.append(call + p.space())
        items.append(p.tag(tags.UNPARSED, p.literal(CALL_START)))
        stops.append(CALL_START)
    if extract:
        items.append(_reasoning_block(use_tools))
        items.append(p.literal(CHANNEL_END))  # a block closed twice, or closed without being opened
        stops += [CHANNEL_START, CHANNEL_END]
    # End-of-turn and tool hand-off tokens are markup wherever they show up (with reasoning_format "none" too).
    items += [p.literal(TURN_END), p.literal(RESPONSE_START)]
    stops.sort(key=len, reverse=True)
    items.append(p.negate(p.end()) + p.tag(tags.CONTENT, p.until_one_of(stops)))
    parser = (p.zero_or_more(p.choice(*items)) + p.end()).compile()
    return GeneratedParser(
        parser,
        "",
        (CALL_START,) if use_tools else (),
        request,
        "none",  # Gemma's calls carry no ids
        _convert if use_tools else None,
    )


def _reasoning_block(use_tools: bool) -> p.Parser:
    """``<|channel>thought\\n TEXT <channel|>``. A repeated opening token is skipped; an unclosed block runs to the
    end of the output, or to a tool call when tools are on (a call is never swallowed by reasoning)."""
    opening = p.literal(CHANNEL_START) + p.zero_or_more(p.space() + CHANNEL_START)
    channel = p.optional(p.literal(THOUGHT) + p.optional("\n"))
    ends = [CHANNEL_END, CALL_START] if use_tools else [CHANNEL_END]
    # Whitespace after the block separates it from the answer, as the generic flex() markers allow.
    closed = p.literal(CHANNEL_END) + p.space()
    closing = [closed, p.peek(CALL_START)] if use_tools else [closed]
    # The text starts only once something follows the opening: at the end of partial input the repetition and the
    # optional channel name above are undecided, so an (empty) reasoning node there could be taken back.
    text = p.choice(p.negate(p.end()) + p.tag(tags.REASONING, p.until_one_of(ends)), p.eps())
    return opening + channel + text + p.choice(*closing, p.end())


def _call(request: ParseRequest) -> p.Parser:
    """One call (untagged). The name is atomic and must be followed by ``{``, so a prefix of a longer name is not
    reported; the call's end marker (or the end of a complete output) makes the call complete. A tool the request
    does not declare is read too, and marked (see parser/calls/undeclared.py)."""
    call = dict_call(p.literal(CALL_START), request, GEMMA, name_prefix=CALL_PREFIX)
    return call + p.space() + p.choice(p.literal(CALL_END), p.end())


def args_to_json(text: str, tool_name: str = "") -> str:
    """A complete Gemma argument dict as JSON text (key order and number spelling kept). (The mapper also passes the
    call's ``tool_name``; Gemma's values carry their own types, so it is not needed.) See :func:`..tools_dict.
    args_to_json`."""
    del tool_name
    return dict_args_to_json(text, GEMMA)


_convert = args_converter(GEMMA)
