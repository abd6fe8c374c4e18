"""Regular-expression building blocks for locating markers around needles in rendered text.

A *marker* is ``<...>`` or ``[...]`` (as in :func:`.diff.segmentize_markers`). The reference implementation
searches with PEG parsers tried at every offset; a compiled regex ``search`` finds the same leftmost match in
one pass.
"""

from __future__ import annotations

import re

__all__ = ["MARKER", "first_marker", "last_marker", "marker_positions"]

MARKER = r"(?:<[^>]*>|\[[^\]]*\])"
_MARKER_RE = re.compile(MARKER)


def marker_positions(text: str) -> list[re.Match[str]]:
    return list(_MARKER_RE.finditer(text))


def first_marker(text: str) -> str:
    match = _MARKER_RE.search(text)
    return match.group() if match else ""


def last_marker(text: str) -> str:
    matches = marker_positions(text)
    return matches[-1].group() if matches else ""
