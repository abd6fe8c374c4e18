"""Calls to tools the request does not declare.

Models call tools they were not offered (a tool from an earlier turn, a hallucinated helper). The parser reads such
a call like any other — its name as far as the format's name markup allows, its arguments without a schema — and
marks it with a zero-width tag, so the mapper either returns it as a call with a warning (``undeclared_tools=
"call"``, the default: the server decides) or keeps its text as content with a warning (``"content"``). The
grammar for constrained decoding still allows only the declared tools.

A declared name always wins: the undeclared alternative comes last in a choice and refuses a declared name, so
``get`` is read as the declared ``get`` and ``get_weather`` (undeclared) is read only once the name went past
``get``. As with declared names, the name is reported only once its end is seen.
"""

from __future__ import annotations

from .. import peg as p
from . import tags
from .request import ParseRequest, ToolSpec

__all__ = ["NAME_CHARS", "marker", "not_declared"]

# What a tool name may be made of when nothing else bounds it: no whitespace, no markup, quotes or brackets.
NAME_CHARS = "[^ \\t\\r\\n<>\\[\\]{}()\"'`,;=|\\\\]"


def marker(request: ParseRequest) -> p.Parser:
    """The zero-width tag that marks a call as undeclared (and says what the mapper makes of it)."""
    tag = tags.UNDECLARED_CONTENT if request.undeclared_tools == "content" else tags.UNDECLARED
    return p.tag(tag, p.eps())


def not_declared(tools: tuple[ToolSpec, ...], name_end: p.Parser) -> p.Parser:
    """A lookahead refusing a declared name followed by ``name_end`` (what ends a name in this format)."""
    if not tools:
        return p.eps()
    names = sorted({t.name for t in tools}, key=len, reverse=True)
    return p.negate(p.choice(*(p.literal(n) + name_end for n in names)))
