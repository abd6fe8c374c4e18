"""Gemma 4: ``<|channel>thought\\n…<channel|>`` reasoning and ``<|tool_call>call:NAME{…}<tool_call|>`` calls.

The arguments are neither JSON nor tags but the template's own dict syntax: ``{key:<|"|>text<|"|>,n:1,on:true,
xs:[<|"|>a<|"|>],cfg:{k:<|"|>v<|"|>}}``. Keys are bare words, strings are quoted with the ``<|"|>`` token (their
text is raw: nothing is escaped), everything else is a bare literal. The parser checks that structure with an
iterative scanner (the ``gemma`` flavor of :mod:`autoparser.peg.json_scan`: any depth, resumable while streaming)
and tags the whole dict as TOOL_ARGS; :func:`args_to_json` turns a complete dict into JSON text. While a call is
incomplete its arguments are held back (see the mapper), because a bare literal cannot be converted until it has
ended; a call whose dict breaks keeps it as written, with a warning.

Reasoning sits in a ``<|channel>thought`` block anywhere in the output (Gemma may think again between calls).
With thinking off, the generation prompt itself ends with an empty, closed block, so the output never starts
inside one and no prefill is needed. Stray markup the model emits around its answer (a lone ``<channel|>``,
``<turn|>``, the ``<|tool_response>`` hand-off after a call) is dropped rather than shown as text.
"""

from __future__ import annotations

import json
import re

from ... import peg as p
from ...analysis.model import TemplateAnalysis
from ...peg.json_scan import OK, scan_json
from .. import tags, undeclared
from ..assemble import GeneratedParser
from ..grammar import FormatGrammar
from ..request import ParseRequest
from ..resync import JSON, recover_call

__all__ = ["args_to_json", "build", "grammar"]

CALL_START = "<|tool_call>"
CALL_PREFIX = "call:"
CALL_END = "<tool_call|>"
QUOTE = '<|"|>'
CHANNEL_START = "<|channel>"
CHANNEL_END = "<channel|>"
THOUGHT = "thought"
TURN_END = "<turn|>"
RESPONSE_START = "<|tool_response>"



def build(analysis: TemplateAnalysis, request: ParseRequest) -> GeneratedParser:
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


def grammar(analysis: TemplateAnalysis, request: ParseRequest) -> FormatGrammar:
    """The strict grammar for this format (:mod:`.gemma4_grammar`, which reads the markers defined here; hence
    the import on first use)."""
    from .gemma4_grammar import grammar as build_grammar

    return build_grammar(analysis, request)


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
    does not declare is read too, and marked (see undeclared.py)."""
    by_length = sorted(request.tools, key=lambda t: -len(t.name))
    name_end = p.peek(p.space() + "{")
    declared = p.choice(*(p.literal(t.name) + name_end for t in by_length))
    other_name = p.tag(tags.TOOL_NAME, p.chars(undeclared.IDENTIFIER_CHARS))
    other = undeclared.not_declared(request.tools, name_end) + other_name + name_end
    names = p.choice(p.tag(tags.TOOL_NAME, declared), *undeclared.alternative(request, other))
    head = p.literal(CALL_START) + p.space() + p.atomic(p.literal(CALL_PREFIX) + names)
    head = head + p.commit()  # a call: kept as it stood if its arguments break
    # The dict is read by an iterative scanner (peg's "gemma" flavor): any nesting depth, resumable while streaming.
    args = p.tag(tags.TOOL_ARGS, p.json_object("gemma"))
    return head + p.space() + args + p.space() + p.choice(p.literal(CALL_END), p.end())


_TOKEN = re.compile(
    r"""<\|"\|>(?P<quoted>.*?)<\|"\|>
      | (?P<json>"(?:[^"\\]|\\.)*")
      | (?P<punct>[{}\[\]:,])
      | (?P<space>[ \t\n\r\v\f]+)
      | (?P<bare>[^,:{}\[\]<]+)""",
    re.DOTALL | re.VERBOSE,
)
_SPACE = " \t\n\r\v\f"  # what p.space() skips (not Unicode whitespace: that is part of a bare literal)
_PUNCT = {"{": "{", "}": "}", "[": "[", "]": "]", ":": ": ", ",": ", "}
_PYTHON_LITERALS = {"True": "true", "False": "false", "None": "null"}  # the template renders None as `None`


def args_to_json(text: str, tool_name: str = "") -> str:
    """A complete Gemma argument dict as JSON text (key order and number spelling kept). (The mapper also passes the
    call's ``tool_name``; Gemma's values carry their own types, so it is not needed.)

    ``text`` is what the call grammar accepted; anything else raises ValueError. Every string token (quoted or
    bare) is a key when the next token is ``:``; a bare literal stays as written if it is a JSON scalar."""
    tokens: list[tuple[str, str]] = []
    pos = 0
    for match in _TOKEN.finditer(text):
        if match.start() != pos:
            break
        pos = match.end()
        kind = match.lastgroup or ""
        if kind != "space":
            tokens.append((kind, match.group(kind)))
    if pos != len(text):
        raise ValueError(f"not a Gemma argument dict at position {pos}: {text!r}")
    pieces: list[str] = []
    for index, (kind, value) in enumerate(tokens):
        if kind == "punct":
            pieces.append(_PUNCT[value])
            continue
        is_key = index + 1 < len(tokens) and tokens[index + 1] == ("punct", ":")
        pieces.append(_scalar(kind, value, is_key))
    result = "".join(pieces)
    # The grammar guarantees JSON; check it without recursion (nesting may be deep) rather than hand out broken JSON.
    if scan_json(result, 0, "object", "json", False) != (OK, len(result)):
        raise ValueError(f"not a Gemma argument dict: {text[:80]!r}")
    return result


def _convert(name: str, text: str) -> str:
    """The mapper's converter: every tool's dict reads the same way."""
    del name
    return args_to_json(text)


def _scalar(kind: str, value: str, is_key: bool) -> str:
    """One key or leaf value as JSON text."""
    if kind == "quoted":
        return _ENCODE(value)
    if kind == "json":
        try:
            return _ENCODE(_DECODE(value))
        except ValueError:  # e.g. a bad escape: keep the text as written
            return _ENCODE(value)
    bare = value.strip(_SPACE)
    if is_key:
        return _ENCODE(bare)
    if bare in _PYTHON_LITERALS:
        return _PYTHON_LITERALS[bare]
    if bare in _JSON_LITERALS or _JSON_NUMBER.match(bare):
        return bare
    return _ENCODE(bare)  # anything else (NaN and Infinity included: not JSON) is a string


# One encoder and decoder for every token: json.dumps/loads with options build a new one per call.
_ENCODE = json.JSONEncoder(ensure_ascii=False).encode
_DECODE = json.JSONDecoder(strict=False).decode
_JSON_LITERALS = frozenset({"true", "false", "null"})
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?\Z")
