"""Dedicated output formats (see docs/formats.md): each module builds a complete :class:`GeneratedParser`.

A builder has the signature ``build(analysis, request) -> GeneratedParser`` and uses the shared tag vocabulary
(:mod:`..tags`), so the shared mapper and stream handle its output. Formats without a module yet fall back to the
generic parser built from the analysis.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

from ...analysis.model import TemplateAnalysis
from ..assemble import GeneratedParser
from ..request import ParseRequest

if TYPE_CHECKING:
    from ..grammar import FormatGrammar

__all__ = ["dedicated_builder", "dedicated_grammar"]

Builder = Callable[[TemplateAnalysis, ParseRequest], GeneratedParser]
GrammarBuilder = Callable[[TemplateAnalysis, ParseRequest], "FormatGrammar"]

# format name (analysis.format) -> module in this package defining ``build``
MODULES = {
    "gpt-oss": "gpt_oss",
    "functionary-v3.2": "functionary",
    "kimi-k2": "kimi",
    "mirothinker": "mirothinker",
    "lfm2": "lfm2",
    "lfm2.5": "lfm2",
    "minimax-m3": "minimax_m3",
    "deepseek-dsml": "dsml",
    "gemma4": "gemma4",
}


def _module(name: str) -> ModuleType | None:
    module = MODULES.get(name)
    if module is None:
        return None
    try:
        return importlib.import_module(f".{module}", __name__)
    except ModuleNotFoundError as err:
        if err.name != f"{__name__}.{module}":
            raise
        return None


def dedicated_builder(name: str) -> Builder | None:
    """The parser builder for a dedicated format, or None (generic parser) if the format has no module."""
    loaded = _module(name)
    builder: Builder | None = getattr(loaded, "build", None)
    return builder


def dedicated_grammar(name: str) -> GrammarBuilder | None:
    """The grammar builder (``grammar(analysis, request) -> FormatGrammar``) of a dedicated format, or None (the
    format has no grammar: requests get none)."""
    loaded = _module(name)
    builder: GrammarBuilder | None = getattr(loaded, "grammar", None)
    return builder
