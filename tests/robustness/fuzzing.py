"""One fuzz case = one text checked against P1, P2 and P3; shared by test_fuzz.py and bench/fuzz.py."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from ..support.outputs import call_marker_cores, chat
from .mutations import Mutant
from .promises import Failure, char_chunks, check_parse, check_stream, random_chunks

__all__ = ["Found", "check_mutant", "describe"]


@dataclass(frozen=True)
class Found:
    template: str
    mutant: Mutant
    failure: Failure


def _seed(template: str, label: str) -> int:
    return zlib.crc32(f"{template}/{label}".encode("utf-8", "surrogatepass"))


def check_mutant(template: str, mutant: Mutant, *, one_char: bool = False, chunks: int = 0) -> list[Found]:
    """P1 and P2 on ``parse()``, P3 on a seeded random chunking (``chunks`` > 0: about that many pieces instead;
    ``one_char``: also one character per feed)."""
    params = chat(template)
    message, failures = check_parse(
        params,
        mutant.text,
        words=mutant.words,
        expected_calls=mutant.expected_calls,
        call_markers=call_marker_cores(template),
    )
    if message is not None:
        if chunks:
            size = max(1, len(mutant.text) // chunks)
            pieces = [mutant.text[i : i + size] for i in range(0, len(mutant.text), size)]
        else:
            pieces = random_chunks(mutant.text, _seed(template, mutant.label))
        failures += check_stream(params, pieces, message)
        if one_char:
            failures += check_stream(params, char_chunks(mutant.text), message)
    return [Found(template, mutant, f) for f in dict.fromkeys(failures)]


def describe(found: Sequence[Found], limit: int = 12) -> str:
    """A readable report: one line per failure, the text shortened."""
    lines = [f"{len(found)} failure(s):"]
    for item in found[:limit]:
        lines.append(f"  [{item.template}] {item.mutant.label}: {item.failure} :: {item.mutant.text!r:.240}")
    if len(found) > limit:
        lines.append(f"  ... and {len(found) - limit} more")
    return "\n".join(lines)
