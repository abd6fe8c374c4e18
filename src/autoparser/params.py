"""``ChatParams``: what :meth:`ChatTemplate.apply` returns — the prompt to send and how to read the answer."""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import ParseError
from .grammar.spec import GrammarSpec, Trigger
from .message import ChatMessage
from .parser import tags
from .parser.assemble import GeneratedParser
from .reading.streaming import StreamParser, parse_output

__all__ = ["ChatParams"]


_REASONING_TAGS = frozenset({tags.REASONING, tags.UNCLOSED_REASONING, tags.UNOPENED_REASONING})


@dataclass(frozen=True)
class ChatParams:
    """The rendered prompt plus the parser (and grammar) for the model's reply to it.

    ``prompt`` ends with ``generation_prompt`` (what the template appended for the assistant's turn). Parse the
    model's output — only the output, not the prompt — with :meth:`parse`, or stream it with :meth:`stream`.

    For constrained decoding: ``grammar`` (GBNF, or None), ``lark_grammar`` (the same language in llguidance's
    Lark dialect, JSON-schema parts as ``%json``), ``grammar_lazy`` (apply it only once one of
    ``grammar_triggers`` fires), ``preserved_tokens`` (markers the tokenizer must keep whole) and the reasoning
    markers ``thinking_start_tag``/``thinking_end_tag`` (triggers inside a reasoning block must not fire).
    Engines that apply a grammar from the first generated token (xgrammar; llguidance as vLLM and SGLang drive
    it) take ``full_grammar`` / ``full_lark_grammar`` instead: for ``tool_choice="auto"`` the whole output (free
    text and/or calls), otherwise the same as ``grammar`` / ``lark_grammar``. Every grammar describes the model's
    output only, never the prompt.
    """

    prompt: str
    generation_prompt: str
    format: str
    _generated: GeneratedParser = field(repr=False)
    _grammar: GrammarSpec = field(default_factory=GrammarSpec, repr=False)
    # What apply() had to degrade: a tool list the template cannot render, a parser simpler than the analysis
    # describes (it could not be built from the learned markers).
    warnings: tuple[str, ...] = ()

    @property
    def grammar(self) -> str | None:
        """GBNF grammar for the reply, or None (written on first access)."""
        return self._grammar.gbnf

    @property
    def lark_grammar(self) -> str | None:
        """The same grammar in llguidance's Lark dialect, or None (written on first access)."""
        return self._grammar.lark

    @property
    def full_grammar(self) -> str | None:
        """GBNF over the whole output, usable from the first token (no trigger needed), or None: for
        ``tool_choice="auto"`` reasoning where the template has it, free text that does not start a call, then
        optionally the calls; for other requests the same as :attr:`grammar`."""
        return self._grammar.full_gbnf

    @property
    def full_lark_grammar(self) -> str | None:
        """:attr:`full_grammar` in llguidance's Lark dialect, or None."""
        return self._grammar.full_lark

    @property
    def structural_tag(self) -> dict[str, object] | None:
        """The whole-output grammar of a ``tool_choice="auto"`` request as an xgrammar structural tag (a
        JSON-serialisable dict in xgrammar 0.2's ``{"type": "structural_tag", "format": ...}`` form), or None
        (:attr:`structural_tag_reason` says why). Free text until a trigger word, then the calls, each held to
        its tool's schema; nothing after the calls. vLLM: ``extra_body={"structured_outputs": {"structural_tag":
        json.dumps(params.structural_tag)}}``; xgrammar: ``GrammarCompiler.compile_structural_tag(...)``."""
        return self._grammar.structural_tag

    @property
    def structural_tag_reason(self) -> str:
        """Why there is no :attr:`structural_tag`: "" when there is one (e.g. "the request has no tools", "calls
        are recognised by a pattern ..., not by a literal trigger word")."""
        return self._grammar.structural_tag_reason

    @property
    def grammar_lazy(self) -> bool:
        """Whether :attr:`grammar` applies only once one of :attr:`grammar_triggers` fired (tool_choice auto)."""
        return self._grammar.lazy

    @property
    def grammar_triggers(self) -> tuple[Trigger, ...]:
        return self._grammar.triggers

    @property
    def preserved_tokens(self) -> tuple[str, ...]:
        return self._grammar.preserved_tokens

    @property
    def enable_thinking(self) -> bool:
        """Whether this request has the model reason: ``enable_thinking`` as given, else as the template's own switch
        was set (``thinking``, ``reasoning_effort="none"``, ...: ``analysis.switches``), else the template's default.
        The parser reads a reply by it (an end marker alone ends reasoning only while thinking is on)."""
        return self._generated.request.enable_thinking

    @property
    def thinking_start_tag(self) -> str:
        return self._grammar.thinking_start_tag

    @property
    def thinking_end_tag(self) -> str:
        return self._grammar.thinking_end_tag

    def parse(self, text: str, partial: bool = False, *, strict: bool = False) -> ChatMessage:
        """The message in ``text``. Never raises on model output unless ``strict``: what does not parse as
        structure is returned as content and described in ``message.warnings``."""
        if not isinstance(text, str):
            raise TypeError(f"parse() needs a str, got {type(text).__name__}")
        message = parse_output(self._generated, text, partial=partial)
        if strict and message.warnings:
            first = message.warnings[0]
            raise ParseError(text, first.position, frozenset({first.message}))
        return message

    def reasoning_end(self, text: str, partial: bool = False) -> int | None:
        """Where the reply's leading reasoning ends in ``text``: the offset of what follows the reasoning block
        (its end marker included), 0 when the reply does not open with reasoning, None while a partial ``text``
        cannot tell yet. Serving stacks that split reasoning from the rest before parsing tool calls
        (vLLM) hand ``text[offset:]`` on; ``parse(text)`` is what the whole reply means."""
        generated = self._generated
        result = generated.parser.parse(generated.prefill + text, partial=partial)
        offset = len(generated.prefill)
        if result.fail:
            return 0
        reasoning_end = None
        full = generated.prefill + text
        for node in result.nodes:
            if node.tag not in _REASONING_TAGS:
                if reasoning_end is None:
                    return max(node.start - offset, 0)
                if node.start < reasoning_end:
                    return None
                return max(self._after_block(full, reasoning_end, node.start) - offset, 0)
            reasoning_end = node.end
        if partial and result.need_more_input:
            return None
        return len(text) if reasoning_end is not None else 0

    def _after_block(self, text: str, reasoning_end: int, next_start: int) -> int:
        """Where what follows a reasoning block starts: after its end marker and the whitespace after that, which
        is where the next node starts unless that node opens past markup of its own (DeepSeek's calls start past
        their section marker, which a tool parser handed the rest must see)."""
        gap = text[reasoning_end:next_start]
        marker = self.thinking_end_tag.strip()
        at = len(gap) - len(gap.lstrip())
        if not marker or not gap.startswith(marker, at):
            return next_start
        at += len(marker)
        return reasoning_end + at + len(gap[at:]) - len(gap[at:].lstrip())

    def stream(self) -> StreamParser:
        """A new :class:`StreamParser` for one model reply."""
        return StreamParser(self._generated)
