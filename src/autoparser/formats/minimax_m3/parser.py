"""MiniMax-M3 (``minimax-m3``): XML tool calls whose every tag follows the ``]<]minimax[>[`` namespace token.

Output shape (one assistant turn as the template writes it)::

    <mm:think>reasoning</mm:think>content]<]minimax[>[<tool_call>
    ]<]minimax[>[<invoke name="get_weather">]<]minimax[>[<city>Paris]<]minimax[>[</city>]<]minimax[>[</invoke>
    ]<]minimax[>[</tool_call>

The template defines ``]<]minimax[>[`` next to its BOS/EOS and image tokens (``]~b]``, ``[e~[``, ``]<]image[>[``): it
is a special token the model writes before every tag of a call. A detokenizer that skips special tokens drops it,
so every tag is read with or without it. What the generic markers cannot express:

* the arguments are nested XML, typed only by the tool's schema (:mod:`.arguments` converts them); the
  generic analysis, which splits ``]<]minimax[>[`` into fragments, finds markers that cannot even build a parser;
* a turn without reasoning starts with a bare ``</mm:think>`` (the template's prefix for "no thinking"), which is
  markup, not content.

A call is committed at its ``<invoke name="NAME">`` (a stream announces it there); its arguments are converted, and
shown, once its ``</invoke>`` arrives, or once the next call or the section's end shows the model dropped that tag.
A call the output cuts off keeps its arguments as written, with a warning; arguments that are not elements as the
template writes them are kept as written too, with a warning (the mapper's). Thinking is the template's
``thinking_mode`` (``enabled``: the prompt opens ``<mm:think>``; ``disabled``: it writes ``</mm:think>``;
``adaptive`` or unset: the model decides), passed in ``chat_template_kwargs``.
"""

from __future__ import annotations

from ... import peg as p
from ...analysis.model import ReasoningAnalysis, ReasoningMode, TemplateAnalysis
from ...parser import tags
from ...parser.assemble import GeneratedParser, response_format
from ...parser.markers import core, flex
from ...parser.reasoning import extracts_reasoning, prefill, reasoning_block
from ...parser.request import ParseRequest, ToolSpec
from .arguments import arguments_to_json, close_elements
from .markers import EOS, INVOKE_END, INVOKE_PREFIX, NAME_END, NS, SECTION_END, SECTION_START, THINK_END, THINK_START

__all__ = ["build_parser"]


_THINK = ReasoningAnalysis(ReasoningMode.TAG_BASED, THINK_START, THINK_END)


def _both(*markers: str) -> list[str]:
    """Each marker with and without the namespace token, longest first (for text scans)."""
    return sorted({form for marker in markers for form in (NS + marker, marker)}, key=len, reverse=True)


def _tag(marker: str) -> p.Parser:
    """A tag, after the namespace token when the model's output still has it."""
    return p.optional(p.literal(NS)) + p.literal(marker)


# Where the arguments of a call end: its end tag, or markup showing the model went on without it.
_ARGS_END = [*_both(INVOKE_END, INVOKE_PREFIX, SECTION_END, SECTION_START), EOS]
# What may start a call: a section, or a call whose section tag was dropped.
_CALL_OPENERS = _both(SECTION_START, INVOKE_PREFIX)


def build_parser(analysis: TemplateAnalysis, request: ParseRequest) -> GeneratedParser:
    """``[reasoning] item* end`` where an item is a call section, calls without their section tags, a call opener
    that did not start a valid call (UNPARSED, with the text after it), the end-of-turn token (dropped), or content.

    The markers are fixed by the format; of the analysis only the reasoning markers are read."""
    reasoning = analysis.reasoning if core(analysis.reasoning.end) else _THINK
    items: list[p.Parser] = []
    stops = [EOS]
    triggers: tuple[str, ...] = ()
    sections: p.Parser | None = None
    if request.tools_enabled:
        calls = _calls(request.tools)
        closing = p.optional(p.space() + _tag(SECTION_END)) + p.space()
        section = p.space() + _tag(SECTION_START) + calls + closing
        bare = calls + closing  # the model dropped the section's start tag
        items += [section, bare]
        sections = p.choice(section, bare)
        triggers = (NS + SECTION_START,)
        stops += _CALL_OPENERS
    stops.sort(key=len, reverse=True)
    text = p.tag(tags.CONTENT, p.until_one_of(stops))
    if request.tools_enabled:
        unparsed = p.choice(*(p.literal(marker) for marker in _CALL_OPENERS))
        items.append(p.tag(tags.UNPARSED, unparsed) + p.optional(p.negate(p.end()) + text))
    items.append(p.literal(EOS))  # end-of-turn markup, not content
    items.append(p.negate(p.end()) + text)
    head = p.eps()
    if extracts_reasoning(reasoning, request):
        # A call ends a block the model never closed (see parser/reasoning.py). A turn without reasoning opens with a
        # bare end tag (the template writes it so, and so does its prompt with thinking disabled; a model may repeat
        # it).
        block = reasoning_block(reasoning, sections, _CALL_OPENERS if sections is not None else ())
        head = p.optional(p.choice(block, flex(reasoning.end)))
    if request.json_schema is not None:
        head = head + p.space() + p.optional(response_format(stops))  # (where a broken fenced answer ends)
    parser = (head + p.zero_or_more(p.choice(*items)) + p.end()).compile()
    return GeneratedParser(
        parser,
        prefill(request.generation_prompt, reasoning),
        triggers,
        request,
        "none",  # calls carry no ids
        _converter(request.tools) if request.tools_enabled else None,
    )


def _calls(tools: tuple[ToolSpec, ...]) -> p.Parser:
    """One or more calls, whitespace between them."""
    call = _call(tools)
    return call + p.zero_or_more(call)


def _call(tools: tuple[ToolSpec, ...]) -> p.Parser:
    """``<invoke name="NAME">`` arguments ``</invoke>``, tagged TOOL. The name is reported with its closing quote
    (so ``get`` is not taken for ``get_weather``), which commits the call; the arguments are the text up to the end
    tag, held back until the call is complete and converted then."""
    names = (p.tag(tags.TOOL_NAME, p.literal(t.name)) for t in sorted(tools, key=lambda t: -len(t.name)))
    head = p.space() + _tag(INVOKE_PREFIX) + p.atomic(p.choice(*names) + NAME_END) + p.commit()
    arguments = p.tag(tags.TOOL_ARGS, p.until_one_of(_ARGS_END))
    # A dropped end tag: the next call or the section's end closes the call (the end of turn does not: like the end
    # of the output, it may have cut the call off).
    followers = [m for m in _ARGS_END if m not in (INVOKE_END, NS + INVOKE_END, EOS)]
    dropped = p.peek(p.choice(*(p.literal(m) for m in followers)))
    closing = p.choice(_tag(INVOKE_END), dropped) + p.space()
    return p.recover(p.tag(tags.TOOL, head + arguments + closing))


def _converter(tools: tuple[ToolSpec, ...]) -> _ArgumentsConverter:
    return _ArgumentsConverter({tool.name: tool for tool in reversed(tools)})  # the first definition wins


class _ArgumentsConverter:
    """The mapper's converter: a call's argument elements as JSON, typed by its tool's schema."""

    __slots__ = ("_tools",)

    def __init__(self, tools: dict[str, ToolSpec]) -> None:
        self._tools = tools

    def __call__(self, name: str, text: str) -> str:
        tool = self._tools.get(name)
        return arguments_to_json(text, tool.parameters if tool is not None else {})

    @staticmethod
    def close(text: str) -> tuple[int, str]:
        """For a call that broke off: the part of its argument text to keep, and the end tags that close it (the
        mapper's repair of broken arguments, see mapper._repaired_conversion)."""
        return close_elements(text)
