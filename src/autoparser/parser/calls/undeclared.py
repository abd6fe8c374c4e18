"""Calls to tools the request does not declare.

Models call tools they were not offered (a tool from an earlier turn, a hallucinated helper). By default
(``undeclared_tools="call"``: the server decides what to do) the parser reads such a call like any other — its name
as far as the format's name markup allows, its arguments without a schema — and marks it with a zero-width tag, so
the mapper returns it as a call with a warning. With ``"content"`` such a call is not read at all: it fails to
parse, so its text is content and its opening marker is reported like any marker that starts no valid call (what
surrounds it, a section's markers, stays in the content too). The grammar for constrained decoding allows only the
declared tools either way.

A declared name always wins: the undeclared alternative comes last in a choice and refuses a declared name, so
``get`` is read as the declared ``get`` and ``get_weather`` (undeclared) only once the name went past ``get``. As
with declared names, the name is reported only once its end is seen.
"""

from __future__ import annotations

from ... import peg as p
from .. import tags
from ..request import ParseRequest, ToolSpec

__all__ = ["IDENTIFIER_CHARS", "NAME_CHARS", "alternative", "marker", "not_declared"]

# A name the format ends with a marker of its own (``<function=NAME>``, ``"NAME"``, ``NAME[ARGS]``) may be anything
# up to it, short of whitespace, markup, quotes or brackets.
NAME_CHARS = "[^ \\t\\r\\n<>\\[\\]{}()\"'`,;=|\\\\]"
# A name that runs straight into what follows (Gemma's ``call:NAME{``, a name ended by a line break) is an
# identifier, as OpenAI-style tool names are (dots too: namespaced tools).
IDENTIFIER_CHARS = "[a-zA-Z0-9_.\\-]"


def marker(request: ParseRequest) -> p.Parser | None:
    """The zero-width tag that marks a call as undeclared, or None when such calls are not read."""
    return p.tag(tags.UNDECLARED, p.eps()) if request.undeclared_tools == "call" else None


def alternative(request: ParseRequest, call: p.Parser) -> list[p.Parser]:
    """``[marker + call]``, the last alternative of a choice of calls, or ``[]`` when such calls are not read."""
    found = marker(request)
    return [] if found is None else [found + call]


def not_declared(tools: tuple[ToolSpec, ...], name_end: p.Parser) -> p.Parser:
    """A lookahead refusing a declared name followed by ``name_end`` (what ends a name in this format)."""
    if not tools:
        return p.eps()
    names = sorted({t.name for t in tools}, key=len, reverse=True)
    return p.negate(p.choice(*(p.literal(n) + name_end for n in names)))
