"""Functionary v3.2: every block of the reply starts with ``>>>RECIPIENT\\n``.

``all`` addresses the user (the block is content); any other recipient is a function name and the block is its
JSON arguments. The generation prompt ends with the first ``>>>``, so the parser reads it as prefill. The
recipient *is* the header, with no markers around the name, which is why the generic analysis cannot express it.
"""

from __future__ import annotations

from ... import peg as p
from ...analysis.model import TemplateAnalysis
from .. import tags
from ..assemble import GeneratedParser
from ..request import ParseRequest

__all__ = ["build"]

SEPARATOR = ">>>"


def build(analysis: TemplateAnalysis, request: ParseRequest) -> GeneratedParser:
    """``(>>>all\\n content | >>>NAME\\n {json} | stray >>> | text)* end``."""
    text = p.tag(tags.CONTENT, p.until(SEPARATOR))
    items: list[p.Parser] = [p.literal(SEPARATOR + "all") + p.optional(p.literal("\n")) + text]
    if request.tools_enabled:
        names = sorted((t.name for t in request.tools), key=len, reverse=True)
        name = p.choice(*(p.literal(n) + p.peek(p.choice("\n", p.space() + "{")) for n in names))
        head = p.atomic(p.literal(SEPARATOR) + p.tag(tags.TOOL_NAME, name) + p.space())
        items.append(p.tag(tags.TOOL, head + p.tag(tags.TOOL_ARGS, p.json()) + p.space()))
        items.append(p.tag(tags.UNPARSED, p.literal(SEPARATOR)))
    else:
        items.append(p.literal(SEPARATOR))  # a recipient header when no tools were offered: markup
    items.append(p.negate(p.end()) + text)
    parser = (p.zero_or_more(p.choice(*items)) + p.end()).compile()
    prefill = SEPARATOR if request.generation_prompt.endswith(SEPARATOR) else ""
    return GeneratedParser(parser, prefill, (SEPARATOR,) if request.tools_enabled else (), request)
