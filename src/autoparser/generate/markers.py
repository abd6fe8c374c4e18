"""Turning analysed markers into tolerant parsers.

Templates bake whitespace into markers (``"<tool_call>\\n"``); models are sloppier. A marker therefore matches
its non-whitespace core with any whitespace around it, except where whitespace is data (right before a tagged
argument value, whose own leading newline the mapper trims).
"""

from __future__ import annotations

from .. import peg as p

__all__ = ["core", "flex", "tight"]


def core(marker: str) -> str:
    return marker.strip()


def flex(marker: str) -> p.Parser:
    """``marker`` with optional whitespace around it (just optional whitespace if it is all whitespace)."""
    text = core(marker)
    if not text:
        return p.space()
    return p.space() + p.literal(text) + p.space()


def tight(marker: str) -> p.Parser:
    """``marker`` with optional whitespace before it only (it is followed by data)."""
    text = core(marker)
    if not text:
        return p.eps()
    return p.space() + p.literal(text)
