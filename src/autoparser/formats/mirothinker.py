"""MiroThinker (``mirothinker``): MCP-style ``<use_mcp_tool>`` blocks naming a server, a tool and JSON arguments.

Output shape, as the template's ``render_tool_call`` writes a turn with calls (its history puts the reasoning in a
``<think>`` block first, as Qwen3 does)::

    <think>
    reasoning
    </think>

    content
    <use_mcp_tool>
    <server_name>search_and_scrape_webpage</server_name>
    <tool_name>google_search</tool_name>
    <arguments>
    {"q": "Paris weather"}
    </arguments>
    </use_mcp_tool>

Several calls of one turn go into one block (the template writes each ``server_name``/``tool_name``/``arguments``
triple in turn); models trained on "one tool per message" write one block per call, and both are read. The call's
name is ``tool_name``: OpenAI calls have no server, and the template derives the server from the tool's name
(``tool-python``, ``search_and_scrape_webpage``, ``generic-extras``, ...), so it carries nothing a client needs;
any server name is accepted, and a missing one too.

The template cannot render tool calls at all under Jinja2 (its macros read a loop variable of their caller, and it
assigns attributes on message dicts; transformers fails the same way), and the analysis learns nothing from it: the
markers are fixed here, and ``<think>``/``</think>`` is the reasoning block (the generation prompt writes an empty
one with thinking off).

A call is committed at its ``<arguments>`` tag, once its tool name is known: a stream announces it there and its
JSON arguments stream as written. A call the output cuts off, or whose arguments are not JSON, keeps them as
written, with a warning. A ``<use_mcp_tool>`` that starts no valid call (an unknown tool) is content, with a warning.
"""

from __future__ import annotations

from .. import peg as p
from ..analysis.model import ReasoningAnalysis, ReasoningMode, TemplateAnalysis
from ..grammar.common import json_answer, rule_safe
from ..grammar.spec import FormatGrammar, Trigger
from ..parser import tags
from ..parser.assemble import GeneratedParser, response_format
from ..parser.calls.resync import JSON, recover_call
from ..parser.markers import flex
from ..parser.reasoning import extracts_reasoning, leading_block, prefill
from ..parser.request import ParseRequest, ToolSpec

__all__ = ["build_grammar", "build_parser"]

BLOCK_START = "<use_mcp_tool>"
BLOCK_END = "</use_mcp_tool>"
SERVER_START = "<server_name>"
SERVER_END = "</server_name>"
TOOL_START = "<tool_name>"
TOOL_END = "</tool_name>"
ARGS_START = "<arguments>"
ARGS_END = "</arguments>"
THINK_START = "<think>"
THINK_END = "</think>"

_THINK = ReasoningAnalysis(ReasoningMode.TAG_BASED, THINK_START, THINK_END)
# A server name is a short identifier: it never runs across markup or lines (a damaged end tag must not let it
# swallow the call).
_SERVER_NAME = "[^<>\\n]"


def build_parser(analysis: TemplateAnalysis, request: ParseRequest) -> GeneratedParser:
    """``[reasoning] item* end`` where an item is a block of calls, a block start that did not start a valid call
    (UNPARSED, with the text after it), or content. ``analysis`` is not read: the markers are fixed."""
    del analysis
    items: list[p.Parser] = []
    triggers: tuple[str, ...] = ()
    stops: list[str] = []
    blocks: p.Parser | None = None
    if request.tools_enabled:
        call = _call(request.tools)
        calls = call + p.zero_or_more(p.space() + call)
        closing = p.choice(flex(BLOCK_END), p.space())
        block = flex(BLOCK_START) + calls + closing
        bare = p.space() + calls + closing  # the block tags dropped: a call still opens with its server or tool name
        items += [block, bare]
        blocks = p.choice(block, bare)
        triggers = (BLOCK_START,)
        stops = [BLOCK_START, SERVER_START, TOOL_START]
    text = p.tag(tags.CONTENT, p.until_one_of(stops) if stops else p.rest())
    if request.tools_enabled:
        unparsed = p.choice(*(p.literal(s) for s in stops))
        items.append(p.tag(tags.UNPARSED, unparsed) + p.optional(p.negate(p.end()) + text))
    items.append(p.negate(p.end()) + text)
    head = p.eps()
    if extracts_reasoning(_THINK, request):
        # A call ends a block the model never closed (see parser/reasoning.py); with thinking off the prompt wrote an
        # empty block, and one the model writes anyway is still reasoning.
        block = p.optional(leading_block(_THINK, blocks, stops))
        head = block + block if prefill(request.generation_prompt, _THINK) else block
    if request.json_schema is not None:
        head = head + p.space() + p.optional(response_format(stops))  # (where a broken fenced answer ends)
    parser = (head + p.zero_or_more(p.choice(*items)) + p.end()).compile()
    return GeneratedParser(parser, prefill(request.generation_prompt, _THINK), triggers, request)


def _call(tools: tuple[ToolSpec, ...]) -> p.Parser:
    """``<server_name>S</server_name> <tool_name>T</tool_name> <arguments>{json}</arguments>``, tagged TOOL. The tool
    name is reported once its end tag shows it is whole; ``<arguments>`` commits the call."""
    server = flex(SERVER_START) + p.chars(_SERVER_NAME) + flex(SERVER_END)
    names = (p.tag(tags.TOOL_NAME, p.literal(t.name)) for t in sorted(tools, key=lambda t: -len(t.name)))
    name = p.atomic(p.literal(TOOL_START) + p.space() + p.choice(*names) + p.space() + TOOL_END)
    arguments = p.tag(tags.TOOL_ARGS, p.json(canonical=True))
    body = p.optional(server) + p.space() + name + flex(ARGS_START) + p.commit() + arguments
    call = p.tag(tags.TOOL, body + p.optional(p.space() + ARGS_END))
    stops = (ARGS_END, BLOCK_END, BLOCK_START, THINK_END)  # the rest of a broken call ends at its markup
    return recover_call(call, stops, balanced=JSON, closers=(ARGS_END,))


# --- grammar -------------------------------------------------------------------------------------------------------

PRESERVED_TOKENS = (THINK_START, THINK_END)


def build_grammar(analysis: TemplateAnalysis, request: ParseRequest) -> FormatGrammar:
    """The lazy call block (trigger ``<use_mcp_tool>``), the whole output for tool_choice required and json_schema,
    and the thinking tags.

    A block holds one call, or several with parallel calls, laid out as the template writes them; the server name
    is any one-line name (the template's own choice of server depends on the tool's name). Before the calls or a
    JSON answer the output may reason in a ``<think>`` block, unless the prompt already closed one (thinking off).
    ``analysis`` is not read: the analysis learns nothing from this template."""
    del analysis
    tags_ = (THINK_START, THINK_END)
    thought = _thought(request)
    response = None
    if request.json_schema is not None:
        response = thought + json_answer(request) + p.space()
    if not request.tools_enabled:
        return FormatGrammar(response=response, preserved_tokens=PRESERVED_TOKENS, thinking_tags=tags_)
    section = _block(request)
    return FormatGrammar(
        section=section,
        triggers=(Trigger("word", BLOCK_START),),
        required=thought + p.until_one_of([BLOCK_START, THINK_START]) + section + p.space(),
        auto=thought + p.until_one_of([BLOCK_START, THINK_START]) + p.optional(section + p.space()),
        response=response,
        preserved_tokens=PRESERVED_TOKENS,
        thinking_tags=tags_,
    )


def _thought(request: ParseRequest) -> p.Parser:
    """An optional ``<think>`` block, unless the generation prompt closed one."""
    if request.generation_prompt.rstrip().endswith(THINK_END):
        return p.space()
    return p.optional(p.space() + THINK_START + p.until(THINK_END) + p.literal(THINK_END)) + p.space()


def _block(request: ParseRequest) -> p.Parser:
    seen: dict[str, ToolSpec] = {t.name: t for t in reversed(request.tools)}  # the first definition wins
    calls = [p.rule(f"mcp-{rule_safe(name)}", _grammar_call(seen[name])) for name in dict.fromkeys(seen)]
    call = p.choice(*calls)
    many = call + p.zero_or_more(p.space() + call) if request.parallel_tool_calls else call
    return p.literal(BLOCK_START) + p.space() + many + p.space() + p.literal(BLOCK_END)


def _grammar_call(tool: ToolSpec) -> p.Parser:
    arguments = p.schema(p.json(), f"{rule_safe(tool.name)}-args", tool.parameters or {"type": "object"})
    server = p.literal(SERVER_START) + p.chars(_SERVER_NAME, 1) + p.literal(SERVER_END)
    name = p.literal(f"{TOOL_START}{tool.name}{TOOL_END}")
    return server + p.space() + name + p.space() + ARGS_START + p.space() + arguments + p.space() + ARGS_END
