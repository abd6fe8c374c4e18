"""Where a broken call ends: the rest of a call that broke off is skipped into a warning, not left in the content.

A call the parser committed to (a stream announced it) stays a call when what follows turns out malformed
(``peg.recover``): its arguments are what was read, closed (docs/parsing.md, "Broken calls"). The text from where it
broke to where the call ends is not the answer's text either: it is the rest of the call, left out with a warning
(tag :data:`~..tags.MALFORMED`), so the text of one call never ends up split between the call and the content.

Where the call ends is read from the markup: the first of the format's structural markers (the call's own end
marker, the next call's start, the section's end, an end-of-turn marker) and, for JSON arguments, the bracket that
closes what the call had left open (``{"name": "f", "arguments": {invalid json}}`` ends after its last ``}``);
else the end of the output. The call's end markers found there are consumed with it.
"""

from __future__ import annotations

from collections.abc import Iterable

from ... import peg as p
from ...analysis.model import TemplateAnalysis
from .. import tags
from ..markers import core, is_markup

__all__ = ["JSON", "PYTHON", "call_stops", "recover_call"]


def call_stops(analysis: TemplateAnalysis, *extra: str) -> tuple[str, ...]:
    """The markers at which the rest of a broken call ends (longest first): the format's section and per-call
    markers, the call's end marker, a name prefix that is markup (another call), end-of-turn markers, ``extra``."""
    tools = analysis.tools
    fmt, fn = tools.format, tools.function
    found = {core(m) for m in (fmt.section_start, fmt.section_end, fmt.per_call_start, fmt.per_call_end)}
    found |= {core(m) for m in (fn.close, fn.name_prefix) if is_markup(core(m))}
    found |= {m.strip() for m in analysis.end_of_turn}
    found |= {m for m in extra if m}
    return tuple(sorted((m for m in found if len(m) >= 2), key=len, reverse=True))


JSON = "{["  # the brackets of JSON arguments (and Gemma's dicts)
PYTHON = "([{"  # the brackets of a pythonic call


def recover_call(
    body: p.Parser, stops: Iterable[str], *, balanced: str = "", closers: Iterable[str] = (), whole_words: bool = False
) -> p.Parser:
    """``peg.recover(body)`` whose rest, once broken, runs to the first of ``stops`` (``balanced``: or to the
    bracket closing what the call left open, :data:`JSON` or :data:`PYTHON`) and is tagged
    :data:`~..tags.MALFORMED`; ``closers`` (the call's own end markers, in order) are consumed after it.
    ``whole_words``: the call breaks before a word, never inside it (for arguments shown only once complete)."""
    return p.recover(
        body,
        rest=tuple(stops),
        balanced=balanced,
        quotes="\"'" if balanced == PYTHON else '"',
        closers=tuple(c for c in map(core, closers) if c),
        rest_tag=tags.MALFORMED,
        whole_words=whole_words,
    )
