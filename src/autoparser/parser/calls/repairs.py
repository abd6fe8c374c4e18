"""Arguments a converter read although they were not written as the template writes them.

Formats whose argument text is converted to JSON when the call is complete (pythonic calls, MiniMax-M3's XML
elements; ``GeneratedParser.convert_args``) return plain JSON text. Where the converter had to decide what the
model meant — an element whose end tag it dropped, a string whose quotes it did not escape — it returns
:class:`RepairedArguments` instead: the same JSON text carrying notes, which the mapper turns into warnings and a
``repaired`` call status (docs/parsing.md, "Broken calls"), so no repair is silent.
"""

from __future__ import annotations

__all__ = ["RepairedArguments"]


class RepairedArguments(str):
    """JSON arguments text (a ``str``) with ``notes`` saying what the converter repaired."""

    __slots__ = ("notes",)
    notes: tuple[str, ...]

    def __new__(cls, text: str, notes: tuple[str, ...] | list[str]) -> RepairedArguments:
        made = super().__new__(cls, text)
        made.notes = tuple(notes)
        return made
