"""What the grammar floor produces: a :class:`GrammarSpec` (the grammar, its triggers, and what an engine needs
with it), the :class:`Trigger` that switches a lazy grammar on, and the :class:`FormatGrammar` parts a dedicated
format contributes (the request then picks the shape, :func:`.common.format_grammar`)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .. import peg as p
from .structural_tag import build_structural_tag

__all__ = ["FormatGrammar", "GrammarSpec", "Trigger"]


@dataclass(frozen=True, slots=True)
class Trigger:
    """What switches a lazy grammar on: ``word`` (literal text), ``pattern`` (regex search), ``pattern_full``
    (regex matching the whole output so far) or ``token``.

    Triggers are searched in the generated text (llama.cpp's sampler buffers the output, not the prompt); patterns
    that must see the end of the generation prompt also match at the start of the output (``^...``). The grammar
    starts at a pattern's first capture group (its match start if it has none), or at a word."""

    type: str
    value: str


@dataclass(frozen=True)
class GrammarSpec:
    """Everything a constrained-decoding engine needs for one request.

    ``root`` is the grammar as a parser graph; :attr:`gbnf` and :attr:`lark` write it on first use (then keep
    it): a serving stack needs one dialect, so it does not pay for the other.
    """

    root: p.Parser | None = None
    lazy: bool = False
    triggers: tuple[Trigger, ...] = ()
    preserved_tokens: tuple[str, ...] = ()
    thinking_start_tag: str = ""
    thinking_end_tag: str = ""
    whole: p.Parser | None = None  # a lazy grammar's whole-output counterpart (free text and/or the calls)
    no_tag: str = "the request has no tools"  # why a request gets no :attr:`structural_tag` ("" when it may)

    @functools.cached_property
    def gbnf(self) -> str | None:
        """GBNF text (llama.cpp, xgrammar), or None when the request has no grammar."""
        return None if self.root is None else p.to_gbnf(self.root, lazy=self.lazy)

    @functools.cached_property
    def lark(self) -> str | None:
        """The same language in llguidance's Lark dialect, or None when the request has no grammar."""
        return None if self.root is None else p.to_lark(self.root, lazy=self.lazy)

    @property
    def full_root(self) -> p.Parser | None:
        """The grammar over the whole output, applied from the first token: the grammar itself when it is not
        lazy, else its whole-output counterpart."""
        return self.whole if self.lazy else self.root

    @functools.cached_property
    def full_gbnf(self) -> str | None:
        """GBNF over the whole output (see :attr:`full_root`), or None."""
        if not self.lazy:
            return self.gbnf
        return None if self.whole is None else p.to_gbnf(self.whole)

    @functools.cached_property
    def full_lark(self) -> str | None:
        """Lark over the whole output (see :attr:`full_root`), or None."""
        if not self.lazy:
            return self.lark
        return None if self.whole is None else p.to_lark(self.whole)

    @functools.cached_property
    def _structural(self) -> tuple[dict[str, object] | None, str]:
        if self.no_tag or not self.lazy:
            return None, self.no_tag or "the template shows no tool-call format to constrain"
        return build_structural_tag(self.whole, self.triggers)

    @property
    def structural_tag(self) -> dict[str, object] | None:
        """The whole-output grammar as an xgrammar structural tag (see :mod:`.structural_tag`), or None."""
        return self._structural[0]

    @property
    def structural_tag_reason(self) -> str:
        """Why there is no :attr:`structural_tag` ("" when there is one)."""
        return self._structural[1]


@dataclass(frozen=True, slots=True)
class FormatGrammar:
    """What a dedicated format (``formats/<name>.py``, function ``grammar(analysis, request)``) contributes.

    Grammar parsers describe what the model is *supposed* to write, strictly (no fallbacks to content), and are
    written with grammar-friendly nodes: ``until(D)`` directly followed by ``literal(D)``, ``schema()`` for JSON
    arguments, no lookaheads (they are dropped from grammars).

    * ``section``: the tool calls from the trigger on; the root of the lazy grammar (tool_choice auto). None when
      the request has no tools.
    * ``triggers``: what switches the lazy grammar on; the grammar starts at the first capture group of a pattern
      trigger (else the match start) or at a word trigger.
    * ``required``: the whole output after the generation prompt for tool_choice required (None: text up to the
      first word trigger, then ``section``).
    * ``auto``: the whole output after the generation prompt for tool_choice auto, for engines without lazy
      triggers: ``required`` with the calls optional (None: text up to the first word trigger, then optionally
      ``section``; formats with their own ``required`` must give their own ``auto``, else there is none).
    * ``response``: the whole output after the generation prompt for a json_schema request (None: the JSON value).
    * ``preserved_tokens`` / ``thinking_tags``: override what the analysis reports (None: keep it).
    """

    section: p.Parser | None = None
    triggers: tuple[Trigger, ...] = ()
    required: p.Parser | None = None
    auto: p.Parser | None = None
    response: p.Parser | None = None
    preserved_tokens: tuple[str, ...] | None = None
    thinking_tags: tuple[str, str] | None = None
