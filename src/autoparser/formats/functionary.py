"""Functionary v3.2: every block of the reply starts with ``>>>RECIPIENT\\n``.

``all`` addresses the user (the block is content); any other recipient is a function name and the block is its
JSON arguments. The generation prompt ends with the first ``>>>``, so the parser reads it as prefill. The
recipient *is* the header, with no markers around the name, which is why the generic analysis cannot express it.

The grammar (:func:`grammar`) is strict where the parser is lenient: a call is ``NAME\\n{arguments}`` for a tool of
the request (as the template renders it), its arguments valid under the tool's schema.
"""

from __future__ import annotations

import dataclasses
import re

from .. import peg as p
from ..analysis.model import TemplateAnalysis
from ..grammar.common import json_answer
from ..grammar.spec import FormatGrammar, Trigger
from ..parser import tags
from ..parser.assemble import GeneratedParser, end_of_turn, end_of_turn_markers
from ..parser.calls import undeclared
from ..parser.calls.resync import JSON, recover_call
from ..parser.request import ParseRequest, ToolSpec

__all__ = ["build_grammar", "build_parser"]

SEPARATOR = ">>>"
CONTENT_RECIPIENT = "all"
PRESERVED_TOKENS = (SEPARATOR + CONTENT_RECIPIENT,)


def build_parser(analysis: TemplateAnalysis, request: ParseRequest) -> GeneratedParser:
    """``(>>>all\\n content | >>>NAME\\n {json} | stray >>> | end of turn | text)* end``."""
    text = p.tag(tags.CONTENT, p.until_one_of([SEPARATOR, *end_of_turn_markers(analysis)]))
    items: list[p.Parser] = [p.literal(SEPARATOR + "all") + p.optional(p.literal("\n")) + text]
    if request.tools_enabled:
        names = sorted((t.name for t in request.tools), key=len, reverse=True)
        name_end = p.peek(p.choice("\n", p.space() + "{"))
        name = p.choice(*(p.literal(n) + name_end for n in names))
        head = p.atomic(p.literal(SEPARATOR) + p.tag(tags.TOOL_NAME, name) + p.space())
        # Any other recipient followed by JSON arguments calls a tool the request does not declare (undeclared.py).
        other = p.negate(p.literal(CONTENT_RECIPIENT) + name_end) + undeclared.not_declared(request.tools, name_end)
        other_name = p.tag(tags.TOOL_NAME, p.chars(undeclared.IDENTIFIER_CHARS)) + name_end
        other_head = p.atomic(p.literal(SEPARATOR) + other + other_name + p.space())
        body = p.commit() + p.tag(tags.TOOL_ARGS, p.json(canonical=True)) + p.space()
        call = p.tag(tags.TOOL, p.choice(head, *undeclared.alternative(request, other_head)) + body)
        # Committed at the name: kept as it stood if the arguments break (their rest is left out, with a warning).
        items.append(recover_call(call, [SEPARATOR, *end_of_turn_markers(analysis)], balanced=JSON))
        items.append(p.tag(tags.UNPARSED, p.literal(SEPARATOR)))
    else:
        items.append(p.literal(SEPARATOR))  # a recipient header when no tools were offered: markup
    items += end_of_turn(analysis)  # `<|eot_id|>`: markup at the end of the output, text elsewhere
    items.append(p.negate(p.end()) + text)
    parser = (p.zero_or_more(p.choice(*items)) + p.end()).compile()
    prefill = SEPARATOR if request.generation_prompt.endswith(SEPARATOR) else ""
    return GeneratedParser(parser, prefill, (SEPARATOR,) if request.tools_enabled else (), request)


def _call(tool: ToolSpec) -> p.Parser:
    """``NAME\\n{arguments}``: the block after its ``>>>``, arguments under the tool's parameter schema."""
    arguments = p.schema(p.json(), f"tool-{tool.name}-args", tool.parameters or {"type": "object"})
    return p.rule(f"tool-{tool.name}", p.literal(tool.name + "\n") + p.space() + arguments)


def _triggers(request: ParseRequest) -> tuple[Trigger, ...]:
    """A block addressed to one of the request's tools: ``>>>NAME\\n``.

    The generation prompt ends with the first ``>>>``, so the first block's recipient starts the output: one
    pattern matches it there (engines that search the output alone), the other after any ``>>>`` (later blocks,
    or engines whose buffer includes the generation prompt). The grammar starts at the name (the capture group).
    Unlike the reference's ``>>>(?!all)``, only known names followed by a line break fire, so ``>>>`` in ordinary
    content (a Python prompt, a quote) does not force a call."""
    names = "|".join(re.escape(t.name) for t in request.tools)  # the line break ends the name: order is free
    recipient = rf"((?:{names})\n)"
    return Trigger("pattern", f"^{recipient}"), Trigger("pattern", re.escape(SEPARATOR) + recipient)


def _answer(request: ParseRequest) -> p.Parser:
    """A json_schema answer: the ``all`` block whose text is the JSON value, bare or in a ```json fence."""
    return p.literal(CONTENT_RECIPIENT + "\n") + p.space() + json_answer(request) + p.space()


def build_grammar(analysis: TemplateAnalysis, request: ParseRequest) -> FormatGrammar:
    """Grammar parts: the lazy section is the call block(s) from the first tool name on (blocks joined by ``>>>``
    when parallel calls are allowed); tool_choice required allows an ``all`` block of text before the calls."""
    del analysis  # the format is fixed
    common = FormatGrammar(preserved_tokens=PRESERVED_TOKENS)
    response = _answer(request) if request.json_schema is not None else None
    if not request.tools_enabled:
        return dataclasses.replace(common, response=response)
    tools: dict[str, ToolSpec] = {}
    for tool in request.tools:
        tools.setdefault(tool.name, tool)  # a repeated name would define its rule twice
    call = p.choice(*(_call(tool) for tool in tools.values()))
    calls = call + p.zero_or_more(SEPARATOR + call) if request.parallel_tool_calls else call
    section = calls + p.space()
    text = p.literal(CONTENT_RECIPIENT + "\n") + p.until(SEPARATOR)
    # tool_choice auto from the first token: an ``all`` block, then maybe the calls; or the calls at once
    auto = p.choice(text + p.optional(p.literal(SEPARATOR) + section), section)
    return dataclasses.replace(
        common,
        section=section,
        triggers=_triggers(request),
        required=p.optional(text + SEPARATOR) + section,
        auto=auto,
        response=response,
    )
