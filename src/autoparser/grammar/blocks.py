"""The grammar of replies written as headed blocks (``analysis.blocks``; the parser is parser/blocks.py).

Strict where the parser is lenient: blocks as the template writes them, a call only of a requested tool with its
arguments valid under the tool's schema.

* **tagged** (Kimi K3): the rest of a block the generation prompt opened, or an optional reasoning block; the
  answer's block; the section of call blocks (``<|open|>tools<|sep|>`` … ``<|close|>tools<|sep|>``, or the calls
  alone where the template writes no section); then the turn's closer and end-of-turn marker, optional. A call's
  header names its tool in the name attribute first (``<|open|>call tool="get_weather"``), other attributes may
  follow (a running index); each argument block names its parameter the same way (then any attributes: a type),
  the required parameters first in the schema's order, then the optional ones, each at most once (in any order up
  to five of them, as generic tagged arguments); a value is raw text up to the block's closer where the
  schema takes a string, else JSON under the parameter's schema. The lazy grammar is triggered by the section's
  header (or a call's opener).
* **addressed** (Functionary v2, role suffixes): the output starts with what the prompt left of the opener, then a
  value (or inside the reasoning or answer block the prompt opened). A call is ``PREFIX NAME HEADER_END
  {arguments}``, more calls each after the block end, separator and opener; an answer is the content's block, closed
  by the block end where the template writes one. Triggers are patterns for the call prefix, a requested tool's name
  and header end, at the start of the output or after an opener.
"""

from __future__ import annotations

import re

from .. import peg as p
from ..analysis.model import BlockMode, TemplateAnalysis
from ..analysis.patterns import marker_positions
from ..parser.blocks import block_prefill, end_markers
from ..parser.calls.tagged_values import json_types
from ..parser.request import ParseRequest, ToolSpec
from ..parser.schema_types import accepts_string, constrains_text, string_part
from .common import json_answer, lazy_grammar, optional_parameters, rule_safe, whole_grammar
from .spec import GrammarSpec, Trigger

__all__ = ["block_grammar"]


def block_grammar(analysis: TemplateAnalysis, request: ParseRequest) -> GrammarSpec:
    """The grammar for ``request`` (a lazy one with triggers for tool_choice auto; see the module docstring)."""
    if analysis.blocks.mode is BlockMode.TAGGED:
        return _Tagged(analysis, request).grammar()
    return _Addressed(analysis, request).grammar()


class _Tagged:
    def __init__(self, analysis: TemplateAnalysis, request: ParseRequest) -> None:
        self.analysis, self.request, self.blocks = analysis, request, analysis.blocks
        self.prefill = block_prefill(self.blocks, request.generation_prompt)

    def header(self, tag: str) -> p.Parser:
        return p.literal(self.blocks.header(tag))

    def closer(self, tag: str) -> p.Parser:
        return p.literal(self.blocks.closer(tag))

    def opened(self, tag: str) -> bool:
        """Whether the generation prompt left a ``tag`` block open (the output starts inside it)."""
        return bool(tag) and self.prefill.startswith(self.blocks.open + tag)

    def lead(self) -> p.Parser:
        """The reasoning: the rest of a block the prompt opened, or an optional block of the model's."""
        b = self.blocks
        if not b.reasoning:
            return p.eps()
        # Up to the closers' opener: a delimiter holding its own first character twice (`<|close|>think<|sep|>`)
        # trips llguidance's GBNF reader. (Headers may be quoted in it: the parser reads them as reasoning.)
        body = p.until(b.close_open) + self.closer(b.reasoning) + p.space()
        if self.opened(b.reasoning):
            return body
        if self.opened(b.content):
            return p.eps()
        return p.optional(self.header(b.reasoning) + body)

    def answer(self, inner: p.Parser | None = None, then: p.Parser | None = None) -> p.Parser:
        """The answer's block: ``inner`` as its body (else any text without the format's markup), then its closer
        and ``then``; or, with ``then`` given, the body alone ending the reply (the model stopped before the
        closer). One path up to the closer: llguidance lexes greedily, so two alternatives sharing the body would
        each have to be lexed alike."""
        b = self.blocks
        if inner is None:
            stops = sorted({b.open, b.close_open, *end_markers(self.analysis)}, key=len)
            inner = p.until_one_of(stops[::-1])
        closing = self.closer(b.content) + p.space()
        body = inner + (closing if then is None else p.optional(closing + then))
        return body if self.opened(b.content) else self.header(b.content) + body

    def end(self) -> p.Parser:
        """The turn's closer and end-of-turn marker the model writes last (optional)."""
        b = self.blocks
        closing = p.optional(self.closer(b.turn) + p.space()) if b.turn else p.eps()
        ends = end_markers(self.analysis)
        return closing + (p.optional(p.choice(*map(p.literal, ends)) + p.space()) if ends else p.eps())

    def section(self) -> p.Parser:
        b, request = self.blocks, self.request
        seen: dict[str, ToolSpec] = {}
        for tool in request.tools:
            seen.setdefault(tool.name, tool)
        call = p.choice(*(p.rule(f"tool-{rule_safe(t.name)}", self.call(t)) for t in seen.values()))
        calls = call + p.zero_or_more(call) if request.parallel_tool_calls else call
        if b.section:
            return self.header(b.section) + calls + self.closer(b.section) + p.space()
        return calls

    def call(self, tool: ToolSpec) -> p.Parser:
        b = self.blocks
        if b.name_attribute:
            head = p.literal(f"{b.open}{b.call} {b.name_attribute}={self.quoted(tool.name)}")
            head += self.attributes(b.call) + p.literal(b.header_end)
        else:
            head = p.literal(b.header(tool.name))
        schema = tool.parameters or {"type": "object"}
        if b.argument:
            body = self.arguments(tool)
        else:
            body = p.space() + p.schema(p.json(), f"{rule_safe(tool.name)}-args", schema) + p.space()
        return head + body + self.closer(b.call or tool.name)

    def arguments(self, tool: ToolSpec) -> p.Parser:
        """The argument blocks: the required ones first, in the schema's order, then the optional ones, each at most
        once (in any order up to a bound: :func:`~.common.optional_parameters`)."""
        props = tool.parameters.get("properties") or {}
        required = [r for r in dict.fromkeys(tool.parameters.get("required") or []) if r in props]
        parts = [self.argument(tool, name) for name in required]
        optional = [self.argument(tool, name) for name in props if name not in required]
        if optional:
            parts.append(optional_parameters(rule_safe(tool.name), optional))
        return p.sequence(*parts) if parts else p.eps()

    def argument(self, tool: ToolSpec, name: str) -> p.Parser:
        b = self.blocks
        schema = tool.property_schema(name) or {}
        head = p.literal(f"{b.open}{b.argument} {b.key_attribute}={self.quoted(name)}")
        head += self.attributes(b.argument, schema) + p.literal(b.header_end)
        end = b.closer(b.argument)
        rule = f"{rule_safe(tool.name)}-{rule_safe(name)}"
        if accepts_string(schema):
            stops = sorted({b.open, b.close_open}, key=len, reverse=True)  # (the closer starts with close_open)
            text = p.until_one_of(stops)
            value = (
                p.schema(text, rule, string_part(schema), raw=True) if constrains_text(string_part(schema)) else text
            )
            return head + value + p.literal(end)
        return head + p.space() + p.schema(p.json(), rule, schema) + p.space() + p.literal(end)

    def quoted(self, value: str) -> str:
        quote = self.blocks.quote or '"'
        return quote + value + quote

    def attributes(self, tag: str, schema: object = None) -> p.Parser:
        """The other attributes the template writes in ``tag`` headers, in its order: a number, one of the values
        seen, or — the argument's type attribute — the spelling of the parameter's JSON type (of any type where
        the schema does not say)."""
        b = self.blocks
        found = p.eps()
        names = dict(b.type_names)
        for attribute in (a for a in b.attributes if a.tag == tag):
            if attribute.values == ("#",):
                value: p.Parser = p.chars("[0-9]")
            else:
                allowed = list(attribute.values)
                if tag == b.argument and attribute.name == b.type_attribute:
                    types = json_types(schema)
                    if types:
                        allowed = [v for v in dict.fromkeys(names[t] for t in sorted(types) if t in names)] or allowed
                value = p.choice(*(p.literal(v) for v in sorted(allowed, key=len, reverse=True)))
            quote = b.quote or '"'
            found = found + p.literal(f" {attribute.name}={quote}") + value + p.literal(quote)
        return found

    def grammar(self) -> GrammarSpec:
        b, request = self.blocks, self.request
        lead = self.lead()
        if request.json_schema is not None:
            value = p.space() + json_answer(request) + p.space()
            return whole_grammar(lead + self.answer(value, self.end()))
        if not request.tools_enabled or not (b.call or b.name_attribute):
            return GrammarSpec()
        section = self.section()
        if request.tool_choice == "required":
            return whole_grammar(lead + p.optional(self.answer()) + section + self.end())
        whole = lead + p.choice(self.answer(None, p.optional(section) + self.end()), section + self.end())
        word = b.header(b.section) if b.section else b.open + b.call
        root = p.trigger_rule("calls", section + self.end())
        return lazy_grammar(root, (Trigger("word", word),), whole)


class _Addressed:
    def __init__(self, analysis: TemplateAnalysis, request: ParseRequest) -> None:
        self.analysis, self.request, self.blocks = analysis, request, analysis.blocks
        b = self.blocks
        self.prefill = block_prefill(b, request.generation_prompt)
        start = b.open.lstrip()
        self.ends = end_markers(analysis)
        # What the output starts with: the rest of the opener the prompt began (all of it, or none), then a value;
        # inside reasoning or the answer where the prompt opened that block.
        self.in_reasoning = bool(b.reasoning) and self.prefill == b.header(b.reasoning)
        self.in_answer = not self.in_reasoning and self.prefill == b.header(b.content)
        self.rest = "" if self.in_reasoning or self.in_answer else start[len(self.prefill) :]

    def next_block(self, *, ended: bool = True, marker: str | None = None) -> p.Parser:
        """The end of a block (``marker``: a call's) and the next one's opener (the separator is whitespace: one
        ``space``). ``ended`` False: the block end is optional (the reasoning block the prompt opened, which a turn
        without reasoning leaves empty: ``<turn>model:thought`` then ``<turn>model``, as the template writes an
        answer alone)."""
        b = self.blocks
        marker = b.block_end if marker is None else marker
        end = p.literal(marker) if marker else p.eps()
        return (end if ended else p.optional(end)) + p.space() + p.literal(b.open.lstrip())

    def free_text(self) -> p.Parser:
        """A block's text: up to the block end or the next opener, and without the opener's marker tokens
        (`<|from|>`, which the parser reports where it starts no header; `<|recipient|>`, a call's marker, which the
        parser reports in content)."""
        b = self.blocks
        start = b.open.lstrip()
        tokens = {m.group() for m in marker_positions(start)}
        first = next((m.group() for m in marker_positions(start) if m.start() == 0), "")
        stops = sorted({*tokens, first or start, b.block_end, b.call_end} - {""}, key=len, reverse=True)
        return p.until_one_of(stops)

    def thought(self) -> p.Parser:
        """The rest of a reasoning block the prompt opened, or an optional one of the model's; then the next block's
        opener."""
        b = self.blocks
        if self.in_reasoning:
            return self.free_text() + self.next_block(ended=False)
        if not b.reasoning or self.in_answer:
            return p.eps()
        return p.optional(p.literal(b.reasoning + b.header_end) + self.free_text() + self.next_block())

    def text(self) -> p.Parser:
        """The content block after its opener (its header too unless the prompt wrote it): any text."""
        b = self.blocks
        head = p.eps() if self.in_answer else p.literal(b.content + b.header_end)
        return head + self.free_text()

    def section(self) -> p.Parser:
        b, request = self.blocks, self.request
        seen: dict[str, ToolSpec] = {}
        for tool in request.tools:
            seen.setdefault(tool.name, tool)
        calls = []
        for tool in seen.values():
            arguments = p.schema(p.json(), f"tool-{rule_safe(tool.name)}-args", tool.parameters or {"type": "object"})
            head = p.literal(b.call + tool.name + b.header_end)
            calls.append(p.rule(f"tool-{rule_safe(tool.name)}", head + p.space() + arguments))
        call = p.choice(*calls)
        # (JSON's own trailing space may take the separator too)
        more = p.space() + self.next_block(marker=b.call_closer)
        calls = call + p.zero_or_more(more + call) if request.parallel_tool_calls else call
        return calls + p.space() + self.end(b.call_closer)

    def end(self, marker: str | None = None) -> p.Parser:
        """The last block's end (``marker``: a call's) and the end-of-turn marker the model writes last (both
        optional)."""
        marker = self.blocks.block_end if marker is None else marker
        ended = p.optional(p.literal(marker) + p.space()) if marker else p.eps()
        ends = [e for e in self.ends if e != marker]
        return ended + (p.optional(p.choice(*map(p.literal, ends)) + p.space()) if ends else p.eps())

    def triggers(self) -> tuple[Trigger, ...]:
        """A block addressed to a requested tool: its value and header end, at the start of the output (after the
        part of the opener the prompt did not write) or after an opener."""
        b = self.blocks
        names = "|".join(re.escape(t.name) for t in self.request.tools)
        value = rf"({re.escape(b.call)}(?:{names}){re.escape(b.header_end)})"
        found = [Trigger("pattern", re.escape(b.open.lstrip()) + value)]
        if not (self.in_reasoning or self.in_answer):
            found.insert(0, Trigger("pattern", f"^{re.escape(self.rest)}{value}"))
        return tuple(found)

    def grammar(self) -> GrammarSpec:
        b, request = self.blocks, self.request
        first = p.literal(self.rest) if self.rest else p.eps()
        lead = first + self.thought()
        if request.json_schema is not None:
            head = p.eps() if self.in_answer else p.literal(b.content + b.header_end)
            return whole_grammar(lead + head + p.space() + json_answer(request) + p.space() + self.end())
        if not request.tools_enabled:
            return GrammarSpec()
        section = self.section()
        if request.tool_choice == "required":
            return whole_grammar(lead + p.optional(self.text() + self.next_block()) + section)
        # After the answer: calls, or the end (a block end and end-of-turn marker; text runs on where blocks have
        # no end).
        calls = self.next_block() + section
        then = p.choice(calls, self.end()) if b.block_end else p.optional(calls)
        answer = self.text() + then
        whole = lead + (answer if self.in_answer else p.choice(answer, section))
        return lazy_grammar(p.trigger_rule("calls", section), self.triggers(), whole)
