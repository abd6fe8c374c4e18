"""The grammar of pythonic tool calls: the learned layout only, calls of the request's tools, schema-typed values.

The parser (:mod:`..parser.calls.tools_pythonic`) accepts every common wrapper and every spelling; a grammar keeps
the model on the layout its template teaches: the learned wrapper words (``<|tool_call_start|>`` then
```` ```python ````), a ``[...]`` list or one call per line, keyword arguments in schema order as
:class:`.python_literals.PythonLiteralGrammar` types them, with the template's keyword spelling (``True`` or
``true``; both when the template never showed one), bare strings where it writes them bare, strings without
escapes (a quote inside one) where it writes them so, and a space between the arguments where it writes no comma.
"""

from __future__ import annotations

from .. import peg as p
from ..analysis.model import ToolsAnalysis
from ..parser.request import ParseRequest, ToolSpec
from .python_literals import PythonLiteralGrammar
from .spec import Trigger

__all__ = ["pythonic_grammar_section"]


def pythonic_grammar_section(tools: ToolsAnalysis, request: ParseRequest) -> tuple[p.Parser, tuple[Trigger, ...]]:
    """The tool-call section (from its trigger on) and the triggers that switch it on.

    The trigger is the wrapper's first word; a bare list starts at ``[NAME(`` and bare lines at ``NAME(`` for each
    tool (lists and calls in prose are common: only the opening of a real call may switch a grammar on)."""
    fmt = tools.format
    keywords = tools.pythonic.keywords or "both"
    bare = tools.pythonic.quote == ""
    raw = tools.pythonic.quote if tools.pythonic.raw_strings else ""
    spaced = not tools.pythonic.separator.strip()
    taken: set[str] = set()
    arguments = {tool.name: _arguments(tool, taken, keywords, bare, raw, spaced) for tool in request.tools}

    def calls(opener: str) -> p.Parser:
        return p.choice(*(p.literal(f"{opener}{tool.name}(") + arguments[tool.name] for tool in request.tools))

    start, end = fmt.section_start.split(), fmt.section_end.split()
    listed = fmt.tools_array_wrapped
    sep = p.space() + "," + p.space() if listed else p.literal("\n") + p.space()
    more = p.zero_or_more(sep + calls("")) if request.parallel_tool_calls else p.eps()
    if listed and not start:
        # The list's "[" belongs to the first call's opener: that is the trigger word, and text before the calls
        # stops at the trigger word that follows it (an until directly followed by its delimiter).
        body = calls("[") + more + p.space() + "]"
        triggers = tuple(Trigger("word", f"[{tool.name}(") for tool in request.tools)
    elif listed:
        body = "[" + p.space() + calls("") + more + p.space() + "]"
        triggers = (Trigger("word", start[0]),)
    else:
        body = calls("") + more
        words = [start[0]] if start else [f"{tool.name}(" for tool in request.tools]
        triggers = tuple(Trigger("word", word) for word in words)
    opening = p.sequence(*(p.literal(word) + p.space() for word in start)) if start else p.eps()
    closing = p.sequence(*(p.space() + p.literal(word) for word in end)) if end else p.eps()
    return opening + body + closing, triggers


def _arguments(tool: ToolSpec, taken: set[str], keywords: str, bare: bool, raw: str, spaced: bool) -> p.Parser:
    """What follows ``NAME(`` in a call: the tool's own keyword arguments, typed by its schema, and ``)``.

    ``taken``: the rule names used so far in the grammar (see :class:`PythonLiteralGrammar`); ``raw``: the quote of
    strings the template writes without escapes; ``spaced``: it separates the arguments by a space."""
    schema = tool.parameters or {"type": "object"}
    builder = PythonLiteralGrammar(
        schema, f"tool-{tool.name}", taken, keywords=keywords, bare=bare, raw=raw, spaced=spaced
    )
    kwargs = builder.keyword_arguments()
    inside = p.space() if kwargs is None else p.space() + kwargs + p.space()
    return p.rule(builder.name, inside + ")")  # the builder's own rules are named after it: tool-NAME-...
