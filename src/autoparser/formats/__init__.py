"""Dedicated output formats (see docs/formats.md): the registry of the formats the generic analysis cannot describe.

Each format is a module here (or a package, when its markers, parser and grammar outgrow one file) with two
functions: ``build_parser(analysis, request) -> GeneratedParser``, using the shared tag vocabulary
(:mod:`autoparser.parser.tags`) so the shared mapper and stream read its output, and ``build_grammar(analysis,
request) -> FormatGrammar``. Formats build on the generic pieces (:mod:`autoparser.parser`,
:mod:`autoparser.grammar.common`); nothing there imports a format: :mod:`autoparser.build` picks a format's builder
from this registry, or the generic one. A format module is imported on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

from ..analysis.model import TemplateAnalysis
from ..parser.assemble import GeneratedParser
from ..parser.request import ParseRequest

if TYPE_CHECKING:
    from ..grammar.spec import FormatGrammar

__all__ = ["dedicated_builder", "dedicated_grammar"]

Builder = Callable[[TemplateAnalysis, ParseRequest], GeneratedParser]
GrammarBuilder = Callable[[TemplateAnalysis, ParseRequest], "FormatGrammar"]

# format name (analysis.format) -> module or package here defining ``build_parser`` and ``build_grammar``
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
    builder: Builder | None = getattr(loaded, "build_parser", None)
    return builder


def dedicated_grammar(name: str) -> GrammarBuilder | None:
    """The grammar builder (``build_grammar(analysis, request) -> FormatGrammar``) of a dedicated format, or None (the
    format has no grammar: requests get none)."""
    loaded = _module(name)
    builder: GrammarBuilder | None = getattr(loaded, "build_grammar", None)
    return builder
