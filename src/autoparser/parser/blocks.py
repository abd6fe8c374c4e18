"""The parser of replies written as headed blocks (``analysis.blocks``, learned in analysis/calls/blocks.py).

A header's value decides what a block is, so the parser reads the reply block by block (docs/parsing.md, "Headed
blocks"):

* **tagged** (``<|open|>TAG attrs<|sep|>…<|close|>TAG<|sep|>``): the reasoning tag's body is reasoning, the answer
  tag's is content; a section header and the closers of known blocks (the turn's own, opened by the generation
  prompt, included) are markup; a call block names its tool in an attribute (or by its tag) and holds argument
  blocks named by an attribute, typed by the tool's schema (other attributes, a running index, a type, are read and
  skipped), or its arguments as JSON (bare, or in a block of its own);
* **addressed** (``OPEN VALUE HEADER_END …``: a recipient or a role suffix): the answer's block is content,
  reasoning's reasoning, a block whose value is the call prefix and a tool's name is a call with JSON arguments, up
  to the block end where the template writes one (a call's own: ``<|call|>``), else the next header or the end of the
  turn.

Lenient like the generic parser: text outside blocks is content; a header or closer of a kind the analysis never
saw, a call header whose call does not parse, a stray opener are content with a warning (UNPARSED); a block whose
closer is missing ends at the next header or the end of the output; the next turn's opener ending the output is
markup (a stop marker, :func:`final_markers`). A call commits at its header (a stream announces it then) and is
recovered as it stood if its rest breaks: a value the output ends in leaves it cut off, a header that breaks it is
left out whole with its rest (:func:`_whole`). Headers are atomic, so nothing of one is shown while it
may still turn out to be another; text runs stop at (and withhold a partial) opener, closer or end-of-turn marker.

The generation prompt opens the turn's first block (Kimi K3's ``<|open|>think<|sep|>``, Functionary's
``<|from|>assistant\\n<|recipient|>``, ``<|im_start|>assistant`` before a role suffix, or only its first token): the
parser reads ``prefill + output`` with that header (or part of the opener) as prefill.
"""

from __future__ import annotations

import re

from .. import peg as p
from ..analysis.model import BlockFormat, BlockMode, TemplateAnalysis
from ..analysis.patterns import marker_positions
from . import tags
from .assemble import GeneratedParser, end_of_turn_markers
from .calls import undeclared
from .calls.resync import JSON, recover_call
from .calls.tagged_values import json_types, value_tag
from .markers import core
from .reasoning import extracts_reasoning, reasoning_block
from .request import ParseRequest, ToolSpec

__all__ = ["block_prefill", "build_block_parser", "end_markers", "final_markers", "header_end", "opener"]

WORD_CHARS = "[A-Za-z0-9_.-]"
_ATTR_NAME = "[A-Za-z0-9_.:-]"
_BARE_VALUE = "[^ \\t\\r\\n\"'<>\\[\\]=]"
_QUOTES = ('"', "'")
_ATTRS = r"""(?:\s+[\w.:-]+\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'<>\[\]=]+))*"""


def build_block_parser(analysis: TemplateAnalysis, request: ParseRequest) -> GeneratedParser:
    """The whole-output parser of a headed-block reply: ``item* end`` (see the module docstring)."""
    if analysis.blocks.mode is BlockMode.TAGGED:
        return _Tagged(analysis, request).build()
    return _Addressed(analysis, request).build()


def end_markers(analysis: TemplateAnalysis) -> list[str]:
    """The end-of-turn markers the parser reads, without the closers in front of them (those are read as closers):
    ``<|close|>message<|sep|><|end_of_msg|>`` gives ``<|end_of_msg|>``. Longest first."""
    return _turn_ends(analysis)[0]


def final_markers(analysis: TemplateAnalysis) -> list[str]:
    """The stop markers that are a block's opener or closer too, or the start of one (the next turn's ``<|open|>``,
    ``<|from|>``): markup where they end the output (a model that did not stop before the next turn), a header's
    start or a stray marker anywhere else. Longest first."""
    return _turn_ends(analysis)[1]


def _turn_ends(analysis: TemplateAnalysis) -> tuple[list[str], list[str]]:
    """:func:`end_markers` and :func:`final_markers`."""
    blocks = analysis.blocks
    found: list[str] = []
    final: list[str] = []
    closer = _closer_pattern(blocks)
    for marker in end_of_turn_markers(analysis):
        rest = marker
        while closer is not None and (m := closer.match(rest)) is not None:
            rest = rest[m.end() :].lstrip()
        if blocks.block_end and rest.startswith(blocks.block_end) and rest != blocks.block_end:
            rest = rest[len(blocks.block_end) :].lstrip()  # (the block end in front is read as the last block's)
        if not rest or rest in found or rest in final:
            continue
        # (the opener, or its first token, opens the next turn too: a header, not an end, unless the output ends)
        framing = any(core(t).startswith(rest) for t in (blocks.open, blocks.close_open))
        (final if framing else found).append(rest)
    order = {"key": lambda m: (-len(m), m)}
    return sorted(found, **order), sorted(final, **order)


def _closer_pattern(blocks: BlockFormat) -> re.Pattern[str] | None:
    if not blocks.close_open:
        return None
    return re.compile(re.escape(blocks.close_open) + "[A-Za-z0-9_.-]+" + re.escape(blocks.close_end))


def block_prefill(blocks: BlockFormat, generation_prompt: str) -> str:
    """The part of the generation prompt the parser reads before the output: the header the prompt ends with (the
    turn's first block is open: a reasoning or answer block, or an addressed header waiting for its recipient)."""
    if blocks.mode is BlockMode.ADDRESSED:
        return _addressed_prefill(blocks, generation_prompt)
    tags_ = "|".join(re.escape(t) for t in (blocks.reasoning, blocks.content) if t)
    if not tags_:
        return ""
    header = re.escape(blocks.open) + f"(?:{tags_})" + _ATTRS + r"\s*" + re.escape(blocks.header_end) + r"\s*\Z"
    found = re.search(header, generation_prompt)
    return generation_prompt[found.start() :] if found else ""


def _addressed_prefill(blocks: BlockFormat, generation_prompt: str) -> str:
    """An addressed block's header the prompt ends with (the model writes into reasoning or the answer it opened),
    else the opener or the start of it up to a marker token (``<|start|>`` of ``<|start|>assistant``: the model
    writes the role and its suffix)."""
    for value in [*([blocks.reasoning] if blocks.reasoning else []), blocks.content]:
        if generation_prompt.endswith(blocks.header(value)):
            return blocks.header(value)
    start = blocks.open.lstrip()
    for cut in [len(start), *sorted((m.end() for m in marker_positions(start)), reverse=True)]:
        if cut and generation_prompt.endswith(start[:cut]):
            return start[:cut]
    return ""


def opener(blocks: BlockFormat) -> p.Parser:
    """A block's opener; whitespace before it is layout (the separator between blocks)."""
    return p.space() + p.literal(blocks.open.lstrip())


def header_end(blocks: BlockFormat) -> p.Parser:
    """What ends a header: its marker (whitespace before it allowed), or exactly the line break a header of only
    whitespace is (Functionary v3.2's ``>>>NAME\\n``)."""
    text = core(blocks.header_end)
    if text:
        return p.space() + p.literal(text)
    return (
        p.choice(blocks.header_end.replace("\n", "\r\n"), blocks.header_end)
        if "\n" in blocks.header_end
        else (p.literal(blocks.header_end))
    )


def _attribute_value(inner: p.Parser | None = None, stop: str = "", quote: str = "") -> p.Parser:
    """An attribute value: in ``quote`` where the template quotes its values, else quoted either way or bare;
    ``inner`` reads the value itself (else any text)."""
    if quote:
        return quote + (inner if inner is not None else p.until_one_of([quote, *([stop] if stop else [])])) + quote
    # A bare value ends at whitespace or the header's end, nothing else (`key=x"city"` is no attribute).
    bare_end = p.peek(p.choice(p.chars("[ \\t\\r\\n]"), *([p.literal(stop)] if stop else [])))
    if inner is None:
        quoted = [q + p.until_one_of([q, *([stop] if stop else [])]) + q for q in _QUOTES]
        return p.choice(*quoted, p.chars(_BARE_VALUE) + bare_end)
    return p.choice(*(q + inner + q for q in _QUOTES), inner + bare_end)


class _Tagged:
    """Tagged blocks: ``<|open|>TAG attrs<|sep|>`` … ``<|close|>TAG<|sep|>``."""

    def __init__(self, analysis: TemplateAnalysis, request: ParseRequest) -> None:
        self.analysis, self.request, self.blocks = analysis, request, analysis.blocks
        self.ends = end_markers(analysis)
        self.end_core = core(self.blocks.header_end)

    def attribute(self) -> p.Parser:
        """Any attribute (``key="value"``, ``key='value'``, ``key=value``)."""
        value = _attribute_value(stop=self.end_core, quote=self.blocks.quote)
        return p.chars("[ \\t\\r\\n]") + p.chars(_ATTR_NAME) + p.space() + "=" + p.space() + value

    def attribute_of(self, tag: str | None) -> p.Parser:
        """One attribute of a ``tag`` header: one the template writes there, with a value it writes, is read
        silently; any other is read and reported (STRAY), not lost."""
        known: list[p.Parser] = []
        for attribute in (a for a in self.blocks.attributes if a.tag == tag):
            if attribute.values == ("#",):
                values = p.chars("[0-9]")
            else:
                values = p.choice(*(p.literal(v) for v in sorted(attribute.values, key=len, reverse=True)))
            key = p.chars("[ \\t\\r\\n]") + p.literal(attribute.name) + p.space() + "=" + p.space()
            known.append(key + _attribute_value(values, self.end_core, self.blocks.quote))
        return p.choice(*known, p.tag(tags.STRAY, self.attribute()))

    def attributes(self, tag: str | None) -> p.Parser:
        return p.zero_or_more(self.attribute_of(tag)) + p.space()

    def header(self, tag: p.Parser | str) -> p.Parser:
        """``open TAG attrs header_end`` (a tag given as text must not run on into a longer word)."""
        known = tag if isinstance(tag, str) else None
        if isinstance(tag, str):
            tag = p.literal(tag) + p.negate(p.chars(WORD_CHARS))
        return p.literal(self.blocks.open) + tag + self.attributes(known) + p.literal(self.blocks.header_end)

    def named_header(self, tag: str, attribute: str, value: p.Parser) -> p.Parser:
        """A ``tag`` header whose attribute ``attribute`` is ``value`` (other attributes before and after it)."""
        key = p.literal(attribute) + p.peek(p.space() + "=")
        others = p.zero_or_more(p.negate(p.chars("[ \\t\\r\\n]") + key) + self.attribute_of(tag))
        named = (
            p.chars("[ \\t\\r\\n]")
            + key
            + p.space()
            + "="
            + p.space()
            + _attribute_value(value, self.end_core, self.blocks.quote)
        )
        head = p.literal(self.blocks.open) + p.literal(tag) + p.negate(p.chars(WORD_CHARS))
        return head + others + named + self.attributes(tag) + p.literal(self.blocks.header_end)

    def closer(self, tag: str | None = None) -> p.Parser:
        word = p.literal(tag) if tag is not None else p.chars(WORD_CHARS)
        return p.literal(self.blocks.close_open) + word + p.literal(self.blocks.close_end)

    def known_tags(self) -> list[str]:
        b = self.blocks
        return [t for t in dict.fromkeys((b.reasoning, b.content, b.section, b.call, b.argument, b.turn)) if t]

    def build(self) -> GeneratedParser:
        b, request = self.blocks, self.request
        stops = sorted({b.open, b.close_open, *self.ends}, key=len, reverse=True)
        text = p.until_one_of(stops)
        items: list[p.Parser] = []
        triggers: list[str] = []
        if b.reasoning:
            items.append(self.reasoning_block())
        items.append(self.content_block())
        known = self.known_tags()
        if b.section:
            items.append(p.atomic(self.header(b.section)))  # the section's header is markup
            triggers.append(b.header(b.section))
        if request.tools_enabled and (b.call or b.name_attribute):
            items.append(self.call())
            triggers.append(b.open + b.call if b.call else b.open)
        if b.turn:
            items.append(p.atomic(self.header(b.turn)))  # a new turn header (the prompt writes the first): markup
        # The closers of known blocks are markup (the turn's own, which the generation prompt opened, included).
        items.append(p.atomic(p.choice(*(self.closer(t) + p.negate(p.chars(WORD_CHARS)) for t in known))))
        # A header or closer of another kind, and an opener or closer that starts nothing: content, with a warning
        # (where they end the output after the text, the next turn's opener among them, an end of turn: markup).
        ending, elsewhere = _end_of_turn(self.ends, final_markers(self.analysis))
        items.append(p.atomic(p.tag(tags.UNPARSED, p.choice(self.header(p.chars(WORD_CHARS)), self.closer()))))
        items += ending
        items.append(p.atomic(p.tag(tags.UNPARSED, p.choice(p.literal(b.open), p.literal(b.close_open)))))
        items += elsewhere
        items.append(p.negate(p.end()) + p.tag(tags.CONTENT, text))
        parser = (p.zero_or_more(p.choice(*items)) + p.end()).compile()
        prefill = block_prefill(b, request.generation_prompt)
        return GeneratedParser(parser, prefill, tuple(triggers), request)

    def reasoning_block(self) -> p.Parser:
        """The reasoning block, up to its closer. A call header inside it is reasoning where the closer follows (a
        call the model thought about); without the closer the block ends at the first call that parses (the
        generic reasoning block's liberty, parser/reasoning.py). Inline (the markup kept in the content) where the
        request does not extract reasoning."""
        b = self.blocks
        if extracts_reasoning(self.analysis.reasoning, self.request):
            starts: list[str] = []
            calls: p.Parser | None = None
            if self.request.tools_enabled and (b.call or b.name_attribute):
                calls = self.call()
                starts = [b.open + b.call]
                if b.section:  # (models drop the section's header too)
                    calls = p.choice(p.atomic(self.header(b.section)) + p.space() + calls, calls)
                    starts.append(b.header(b.section))
            return reasoning_block(self.analysis.reasoning, calls, starts)
        # (each tag inside its atomic: a header or closer still arriving, which may turn out to be another, is not
        # shown as content)
        head = p.atomic(p.tag(tags.CONTENT, self.header(b.reasoning)))
        end = p.atomic(p.tag(tags.CONTENT, self.closer(b.reasoning)))
        return head + p.tag(tags.CONTENT, p.until(b.closer(b.reasoning))) + p.optional(end)

    def content_block(self) -> p.Parser:
        """The answer's block: its body up to its closer, or to any other header or closer (a call in the answer,
        a closer left out)."""
        b = self.blocks
        body = p.tag(tags.CONTENT, p.until_one_of(sorted({b.open, b.close_open, *self.ends}, key=len, reverse=True)))
        return p.atomic(self.header(b.content)) + body + p.optional(p.atomic(self.closer(b.content)))

    def call(self) -> p.Parser:
        """One call block of a declared tool, or of one the request does not declare (marked: undeclared.py)."""
        b, request = self.blocks, self.request
        tools = sorted(request.tools, key=lambda t: -len(t.name))
        declared = [self.call_block(self.call_header(p.literal(t.name)), t) for t in tools]
        name_chars = undeclared.NAME_CHARS
        other_name = undeclared.not_declared(request.tools, p.negate(p.chars(name_chars))) + p.chars(name_chars)
        marker = undeclared.marker(request)
        others = [self.call_block(marker + self.call_header(other_name), None)] if marker is not None else []
        stops = sorted(
            {b.open + b.call, b.closer(b.call) if b.call else b.close_open, *self.ends}, key=len, reverse=True
        )
        if b.section:
            stops.append(b.closer(b.section))
        call = p.choice(*declared, *others)
        return recover_call(call, stops, balanced=JSON, closers=(b.closer(b.call),) if b.call else ())

    def call_header(self, name: p.Parser) -> p.Parser:
        b = self.blocks
        named = p.tag(tags.TOOL_NAME, name)
        if b.name_attribute:
            return self.named_header(b.call, b.name_attribute, named)
        return self.header(named + p.negate(p.chars(WORD_CHARS)))

    def call_block(self, head: p.Parser, tool: ToolSpec | None) -> p.Parser:
        """``header arguments closer``; the node spans the closer, so the call is complete only once it is seen."""
        b = self.blocks
        closer = self.closer(b.call) if b.call else self.closer()
        if b.argument:
            body = p.space() + p.zero_or_more(self.argument(tool) + p.space())
        else:
            body = p.space() + p.tag(tags.TOOL_ARGS, p.json(canonical=True)) + p.space()
        if b.json_block:
            # JSON arguments in a block of their own, as the template writes arguments given as JSON text
            # (`<|open|>json type="object"<|sep|>{…}<|close|>json<|sep|>`)
            arguments = p.tag(tags.TOOL_ARGS, p.json_object(canonical=True))
            wrapped = _whole(self.header(b.json_block)) + p.space() + arguments
            body = p.choice(wrapped + p.space() + p.optional(_whole(self.closer(b.json_block))) + p.space(), body)
        closing = p.choice(_whole(closer) + p.commit(), p.tag(tags.CUT, p.end()))
        return p.tag(tags.TOOL, p.atomic(head) + p.commit() + body + closing)

    def argument(self, tool: ToolSpec | None) -> p.Parser:
        """One argument block; its value is raw text up to the closer, typed by the parameter's schema (objects and
        arrays are read as JSON first, so a closer inside one of their strings does not end them)."""
        b = self.blocks
        end = b.closer(b.argument)
        stops = sorted({end, b.open + b.argument, b.closer(b.call) if b.call else b.close_open}, key=len, reverse=True)

        # A closer left out (the next argument, or the call's closer, ended the value): read, and reported. A value
        # the output ends in has no end: the call is cut off there (recovered as it stood, its status `cut_off`).
        closing = p.choice(p.literal(end), p.negate(p.end()) + p.tag(tags.missing(end), p.eps()))

        def one(name: p.Parser, kind: str, container: bool) -> p.Parser:
            value = p.tag(kind, p.until_one_of(stops))
            if container:
                whole = p.tag(kind, p.space() + p.json()) + p.space() + p.peek(p.literal(end))
                value = p.choice(whole, value)
            head = _whole(self.named_header(b.argument, b.key_attribute, name)) + p.commit()
            return p.tag(tags.TOOL_ARG, head + value) + closing

        known: list[p.Parser] = []
        props = tool.parameters.get("properties") if tool is not None else None
        if isinstance(props, dict):
            for prop, schema in sorted(props.items(), key=lambda kv: -len(kv[0])):
                types = json_types(schema)
                name = p.tag(tags.TOOL_ARG_NAME, p.literal(prop))
                known.append(one(name, value_tag(schema), bool(types) and types <= {"object", "array"}))
        unknown = p.tag(tags.TOOL_ARG_NAME, p.chars("[^ \\t\\r\\n\"'<>\\[\\]=|]"))
        return p.choice(*known, one(unknown, tags.TOOL_ARG_VALUE, False))


class _Addressed:
    """Addressed blocks: ``OPEN VALUE HEADER_END body [BLOCK_END]``, up to the block end or the next header."""

    def __init__(self, analysis: TemplateAnalysis, request: ParseRequest) -> None:
        self.analysis, self.request, self.blocks = analysis, request, analysis.blocks
        self.ends = end_markers(analysis)

    def head(self, value: str) -> p.Parser:
        """``OPEN value HEADER_END`` (the answer's value may be empty: ``<|im_start|>assistant`` + line break)."""
        return opener(self.blocks) + (p.literal(value) if value else p.eps()) + header_end(self.blocks)

    def closing(self, inline: bool = False, marker: str | None = None) -> p.Parser:
        """The block end after a block (``marker``: a call's), optional (a model may stop before it); ``inline``:
        kept in the content."""
        marker = self.blocks.block_end if marker is None else marker
        if not marker:
            return p.eps()
        end = p.tag(tags.CONTENT, p.literal(marker)) if inline else p.literal(marker)
        return p.optional(p.space() + p.atomic(end))

    def build(self) -> GeneratedParser:
        b, request = self.blocks, self.request
        start = b.open.lstrip()
        # The opener's first token alone (`<|from|>`, repeated or left without its role) starts no header: reported.
        token = next((m.group() for m in marker_positions(start) if m.start() == 0), "")
        stops = sorted(
            {start, token, *([b.separator + start] if b.separator else []), *self.ends, b.block_end, b.call_end} - {""},
            key=len,
            reverse=True,
        )
        thought = p.until_one_of(stops)
        # A call prefix of its own (`/tool:`, `to=functions.`) in the text is a call header whose opener broke:
        # it ends a text run and is reported (a call the reasoning mentions stays reasoning).
        prefix = b.call.strip() if len(b.call.strip()) >= 3 else ""
        body = p.until_one_of(sorted({*stops, prefix} - {""}, key=len, reverse=True))
        value_end = p.chars(self.value_chars()) + header_end(b)
        items: list[p.Parser] = []
        if b.reasoning:
            head = self.head(b.reasoning)
            if request.reasoning_format != "none":
                items.append(p.atomic(head) + p.tag(tags.REASONING, thought) + self.closing())
            else:  # inline: the block, its header and end included, stays in the content
                items.append(p.atomic(p.tag(tags.CONTENT, head)) + p.tag(tags.CONTENT, thought) + self.closing(True))
        items.append(p.atomic(self.head(b.content)) + p.tag(tags.CONTENT, body) + self.closing())
        triggers: list[str] = []
        if request.tools_enabled:
            items.append(self.call(stops) + self.closing(marker=b.call_closer))
            triggers.append(start)
        # Another value (a call that does not parse, a tool while tools are off): the header is reported and the
        # block's text is content; an opener that starts no header too, and a block end that ends no block.
        unknown = p.atomic(p.tag(tags.UNPARSED, opener(b) + value_end)) + p.tag(tags.CONTENT, body) + self.closing(True)
        items.append(unknown)
        # (a run of end-of-turn markers ending the output is markup, the next turn's opener or its first token too)
        ending, elsewhere = _end_of_turn(self.ends, final_markers(self.analysis))
        items += ending
        items.append(p.atomic(p.tag(tags.UNPARSED, opener(b))))
        if token and token != start:
            items.append(p.space() + p.atomic(p.tag(tags.UNPARSED, p.literal(token))))
        for marker in dict.fromkeys(m for m in (b.block_end, b.call_end, prefix) if m):
            items.append(p.atomic(p.tag(tags.UNPARSED, p.literal(marker))))
        items += elsewhere
        items.append(p.negate(p.end()) + p.tag(tags.CONTENT, body))
        prefill = block_prefill(b, request.generation_prompt)
        lead = p.eps()
        if prefill and start.startswith(prefill):
            # The prompt wrote the opener (or its first token): a reply that starts with no header is the prompt's
            # opener, silent, then the reply's text, its first word reported (a value cut off or damaged: `/tool:ge`,
            # a header end missing), or a whole unknown header; nothing of the prompt shows.
            headers = [self.head(b.content), *([self.head(b.reasoning)] if b.reasoning else [])]
            if request.tools_enabled:
                headers.append(self.call_head())
            other = p.atomic(p.tag(tags.UNPARSED, value_end)) + p.tag(tags.CONTENT, body) + self.closing(True)
            blank = p.choice(p.chars("[ \\t\\r\\n]"), p.end(), *(p.literal(m) for m in stops))
            word = p.negate(blank) + p.until_one_of(sorted({" ", "\t", "\r", "\n", *stops}, key=len, reverse=True))
            bare = p.atomic(p.literal(prefill)) + p.optional(p.choice(other, p.tag(tags.UNPARSED, word)))
            lead = p.optional(p.negate(p.choice(*headers)) + bare)
        parser = (lead + p.zero_or_more(p.choice(*items)) + p.end()).compile()
        return GeneratedParser(parser, prefill, tuple(triggers), request)

    def value_chars(self) -> str:
        """What a header value is written with: an identifier's characters and the punctuation of the values the
        template writes (``/`` and ``:`` of ``/tool:get_weather``)."""
        b = self.blocks
        extra = sorted({c for c in b.call + b.reasoning + b.content if c in _VALUE_PUNCTUATION})
        return undeclared.IDENTIFIER_CHARS[:-1] + "".join(extra) + "]"

    def call_head(self) -> p.Parser:
        """A call's header: ``OPEN`` + the call prefix + a requested tool's name (or, marked, another: undeclared.py)
        + ``HEADER_END``."""
        b, request = self.blocks, self.request
        open_, end = opener(b), header_end(b)
        if b.call:
            open_ = open_ + p.literal(b.call)
        names = sorted((t.name for t in request.tools), key=len, reverse=True)
        declared = p.choice(*(p.literal(n) + p.peek(end) for n in names))
        other = p.negate(p.literal(b.content) + end) if b.content and not b.call else p.eps()
        other += undeclared.not_declared(request.tools, end) + p.chars(undeclared.IDENTIFIER_CHARS) + p.peek(end)
        # (another recipient is a call only where JSON follows: `to=mail` with a letter is a block of text)
        other_head = p.atomic(open_ + p.tag(tags.TOOL_NAME, other) + end + p.peek(p.space() + p.choice("{", "[")))
        return p.choice(
            p.atomic(open_ + p.tag(tags.TOOL_NAME, declared) + end), *undeclared.alternative(request, other_head)
        )

    def call(self, stops: list[str]) -> p.Parser:
        """A block addressed to a tool (its value the call prefix and the tool's name): its body is the JSON
        arguments. Committed at the header; a body that breaks keeps the call as it stood (its rest, to the next
        header or the block end, left out with a warning)."""
        b = self.blocks
        body = p.space() + p.tag(tags.TOOL_ARGS, p.json(canonical=True)) + p.space()
        call = p.tag(tags.TOOL, self.call_head() + p.commit() + body)
        return recover_call(call, stops, balanced=JSON, closers=(b.call_closer,) if b.call_closer else ())


# Punctuation a header value may hold besides an identifier's (`assistant/tool:NAME`, `assistant to=NAME`).
_VALUE_PUNCTUATION = frozenset("/:=@#+~! ")


def _whole(markup: p.Parser) -> p.Parser:
    """``markup`` (a header, a closer) inside a committed call, all or nothing: cut off by the end of a (partial)
    input it consumes nothing, so a call that breaks in it is recovered as it stood *before* it and the rest that
    is left out, in a warning, holds all of it (an atomic alone would end the recovered call inside it, and the
    part it had read would be neither the call's nor the rest's: lost)."""
    return p.peek(markup) + p.atomic(markup)


def _end_of_turn(markers: list[str], final: list[str]) -> tuple[list[p.Parser], list[p.Parser]]:
    """The items of end-of-turn markers: where a run of them ends the output (whitespace may follow, and precede it:
    the separator after a block's end) it is markup, ``final`` markers (the next turn's opener) among them; a run of
    ``markers`` elsewhere is text."""
    every = sorted({*markers, *final}, key=lambda m: (-len(m), m))
    if not every:
        return [], []
    marker = p.choice(*(p.literal(m) for m in every))
    ending = [p.space() + marker + p.zero_or_more(p.space() + marker) + p.space() + p.end()]
    if not markers:
        return ending, []
    marker = p.choice(*(p.literal(m) for m in markers))
    return ending, [p.tag(tags.CONTENT, marker + p.zero_or_more(p.space() + marker))]
