"""Dedicated output formats (see docs/formats.md): each module builds a complete :class:`GeneratedParser`.

A builder has the signature ``build(analysis, request) -> GeneratedParser`` and uses the shared tag vocabulary
(:mod:`..tags`), so the shared mapper and stream handle its output. Formats without a module yet fall back to the
generic parser built from the analysis.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from ...analysis.model import TemplateAnalysis
from ..assemble import GeneratedParser
from ..request import ParseRequest

__all__ = ["dedicated_builder"]

Builder = Callable[[TemplateAnalysis, ParseRequest], GeneratedParser]

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


def dedicated_builder(name: str) -> Builder | None:
    """The builder for a dedicated format, or None (generic parser) if the format has no module."""
    module = MODULES.get(name)
    if module is None:
        return None
    try:
        loaded = importlib.import_module(f".{module}", __name__)
    except ModuleNotFoundError as err:
        if err.name != f"{__name__}.{module}":
            raise
        return None
    builder: Builder = loaded.build
    return builder
