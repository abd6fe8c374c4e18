"""Which bundled templates the per-template tests run on: all 134 in CI (``AUTOPARSER_TEMPLATES=all``, set by
.ci/run), a seeded third of them elsewhere (a hash of the name, so every run and every xdist worker picks the same),
which keeps the README's test command within minutes on a 2-core machine.

Tables of cases computed at import (collection) should be built over :func:`sampled` templates only: a case left
out by the sample costs nothing then, not even its rendering. The conftest deselects (and reports) any per-template
case of a template outside the sample that a table still holds. Long position sweeps use :func:`sweep` the same way:
every position in CI (a seeded half for the two sweeps whose cost grows with the square of the text), a seeded sample
elsewhere, always with the cuts at and inside the format's markers (:func:`near_markers`).
"""

from __future__ import annotations

import os
import random
import zlib
from collections.abc import Iterable, Sequence

from autoparser import bundled_templates

__all__ = ["ALL_TEMPLATES", "in_sample", "near_markers", "sampled", "sweep"]

ALL_TEMPLATES = os.environ.get("AUTOPARSER_TEMPLATES", "sample") == "all"
SAMPLE_SHARE = 3  # one template in this many runs outside CI


def in_sample(template: str) -> bool:
    """Whether ``template`` is in the seeded sample (always true with ``AUTOPARSER_TEMPLATES=all``)."""
    return ALL_TEMPLATES or zlib.crc32(template.encode()) % SAMPLE_SHARE == 0


def sampled(templates: Iterable[str] | None = None) -> list[str]:
    """``templates`` (default: every bundled template) that are in the sample, in their order."""
    return [t for t in (bundled_templates() if templates is None else templates) if in_sample(t)]


def sweep(
    positions: Sequence[int],
    share: int = SAMPLE_SHARE,
    *,
    keep: Iterable[int] = (),
    seed: int = 0,
    ci_share: int = 1,
) -> list[int]:
    """``positions`` in CI; elsewhere a seeded ``1/share`` of them plus the first and last and any in ``keep``
    (the boundaries a sweep most needs), in order.

    ``ci_share`` above 1 thins CI's run the same way (every ``keep`` position, a seeded ``1/ci_share`` of the
    others): for the few sweeps whose every cut costs a parse of the whole prefix, so that their cost grows with
    the square of the text and a full run would take minutes of CI's budget. Their positions between markers lie in
    long runs of the same kind of text (an argument's characters), which a half of them covers as well."""
    if len(positions) <= 2 or (ALL_TEMPLATES and ci_share <= 1):
        return list(positions)
    rng = random.Random(seed)
    chosen = {positions[0], positions[-1], *keep}
    one_in = ci_share if ALL_TEMPLATES else share
    chosen.update(p for p in positions if rng.randrange(one_in) == 0)
    return [p for p in positions if p in chosen]


def near_markers(text: str, markers: Iterable[str], reach: int = 2) -> set[int]:
    """The cut positions of ``text`` (prefix lengths, 0 to ``len(text)``) within ``reach`` characters of the start or
    the end of an occurrence of one of ``markers``: the output stopped just before a marker, inside it, at its end or
    just after it, where a parser has to decide what the text is. A truncation sweep keeps them all
    (``sweep(..., keep=near_markers(...))``)."""
    found: set[int] = set()
    for marker in markers:
        if not marker:
            continue
        at = text.find(marker)
        while at >= 0:
            for edge in (at, at + len(marker)):
                found.update(range(max(0, edge - reach), min(len(text), edge + reach) + 1))
            at = text.find(marker, at + 1)
    return found
