"""From a template analysis and a request to the parser and the grammar: a dedicated format's builders where the
template is one (:mod:`.formats`), else the generic ones (:mod:`.parser.assemble`, :mod:`.grammar.generic`).

This is the one place that knows both: the generic builders never consult the registry and the formats build on
the generic pieces, so neither imports the other's floor back. Both results are cached per (analysis, request):
building costs more than parsing, and an analysis and a request are immutable and hashable. The caches are bounded
by the memory they hold (:mod:`.cache`): an entry's size is estimated from the request's text.
"""

from __future__ import annotations

import dataclasses

from .analysis.formats import GENERIC
from .analysis.model import TemplateAnalysis
from .cache import sized_cache
from .formats import dedicated_builder, dedicated_grammar
from .grammar.blocks import block_grammar
from .grammar.common import base_spec, extras, format_grammar, with_contribution
from .grammar.generic import generic_grammar
from .grammar.spec import GrammarSpec
from .parser.assemble import GeneratedParser, build_generic_parser
from .parser.blocks import build_block_parser
from .parser.leftovers import leftover_markers
from .parser.regular import regular_reply
from .parser.request import ParseRequest

__all__ = ["build_grammar", "build_parser"]


# What a built parser holds per compiled node and a grammar per byte of the request text that shapes it, plus a
# floor (tracemalloc on bundled templates of several formats, 0 to 200 tools: 600 to 2,900 bytes a node; a 200-tool
# request's parser holds 1 to 40 MB, its grammar about 1 MB); a node not compiled yet (a tool's call behind a keyed
# choice) holds about 150 bytes
PARSER_BYTES = (16_000, 1_200, 150)
GRAMMAR_BYTES = (8_000, 40)


def parser_size(built: GeneratedParser, analysis: TemplateAnalysis, request: ParseRequest) -> int:
    """The estimated bytes of ``built``, the parser for ``request``."""
    parser = built.parser
    floor, compiled, graph = PARSER_BYTES
    return floor + compiled * parser.nodes + graph * max(parser.graph_nodes - parser.nodes, 0)


def grammar_size(built: GrammarSpec, analysis: TemplateAnalysis, request: ParseRequest) -> int:
    """The estimated bytes of ``built``, the grammar for ``request`` (its GBNF and Lark texts, made on first use,
    included)."""
    return GRAMMAR_BYTES[0] + GRAMMAR_BYTES[1] * request.text_size


@sized_cache(parser_size)
def build_parser(analysis: TemplateAnalysis, request: ParseRequest) -> GeneratedParser:
    """The parser for ``analysis`` under ``request`` (cached: building costs more than parsing)."""
    builder = dedicated_builder(analysis.format)
    if builder is None and analysis.blocks.enabled:
        builder = build_block_parser  # a reply of headed blocks (parser/blocks.py)
    built = builder(analysis, request) if builder is not None else build_generic_parser(analysis, request)
    leftovers = leftover_markers(analysis, request, built.tool_triggers)
    layout = built.layout or analysis  # (the layout the parser reads: a format may preset it)
    regular = None if built.markup is None else regular_reply(layout, request, built.markup, leftovers)
    return dataclasses.replace(built, id_format=analysis.id_format, leftovers=leftovers, regular=regular)


@sized_cache(grammar_size)
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
