"""From a template analysis and a request to the parser and the grammar: a dedicated format's builders where the
template is one (:mod:`.formats`), else the generic ones (:mod:`.parser.assemble`, :mod:`.grammar.generic`).

This is the one place that knows both: the generic builders never consult the registry and the formats build on
the generic pieces, so neither imports the other's floor back. Both results are cached per (analysis, request):
building costs more than parsing, and an analysis and a request are immutable and hashable.
"""

from __future__ import annotations

import dataclasses
import functools

from .analysis.formats import GENERIC
from .analysis.model import TemplateAnalysis
from .formats import dedicated_builder, dedicated_grammar
from .grammar.blocks import block_grammar
from .grammar.common import base_spec, extras, format_grammar, with_contribution
from .grammar.generic import generic_grammar
from .grammar.spec import GrammarSpec
from .parser.assemble import GeneratedParser, build_generic_parser
from .parser.blocks import build_block_parser
from .parser.leftovers import leftover_markers
from .parser.request import ParseRequest

__all__ = ["build_grammar", "build_parser"]


@functools.lru_cache(maxsize=256)
def build_parser(analysis: TemplateAnalysis, request: ParseRequest) -> GeneratedParser:
    """The parser for ``analysis`` under ``request`` (cached: building costs more than parsing)."""
    builder = dedicated_builder(analysis.format)
    if builder is None and analysis.blocks.enabled:
        builder = build_block_parser  # a reply of headed blocks (parser/blocks.py)
    built = builder(analysis, request) if builder is not None else build_generic_parser(analysis, request)
    leftovers = leftover_markers(analysis, request, built.tool_triggers)
    return dataclasses.replace(built, id_format=analysis.id_format, leftovers=leftovers)


@functools.lru_cache(maxsize=256)
def build_grammar(analysis: TemplateAnalysis, request: ParseRequest) -> GrammarSpec:
    """The grammar, triggers, preserved tokens and reasoning tags for ``request`` (cached)."""
    base = base_spec(analysis, request)
    if analysis.format == GENERIC:
        generic = block_grammar if analysis.blocks.enabled else generic_grammar  # headed blocks: grammar/blocks.py
        return dataclasses.replace(generic(analysis, request), **extras(base))
    builder = dedicated_grammar(analysis.format)
    if builder is None:
        return base
    contributed = builder(analysis, request)
    base = with_contribution(base, contributed)
    return dataclasses.replace(format_grammar(contributed, analysis, request), **extras(base))
