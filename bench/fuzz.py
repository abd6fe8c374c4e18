"""A longer seeded fuzz run: the checks of tests/robustness/test_fuzz.py (P1 no crash, P2 nothing lost, P3 the stream
ends equal to parse()) with more mutants per output, every truncation, the full-size nesting inputs and one
character per feed on short texts. Each distinct failure (template, promise, kind) is minimised — chunks of the
text are deleted while the same failure persists — and printed with its template and the promise it breaks.

Run: python bench/fuzz.py [--seed N] [--count N] [--templates A,B] [--no-truncations] [--limit N]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests package: outputs, mutations, checks

from tests.robustness.fuzzing import Found, check_mutant
from tests.robustness.mutations import Mutant, deep_inputs, mutants, truncations
from tests.support.outputs import outputs

from autoparser import bundled_templates


def kind(found: Found) -> str:
    """What kind of failure this is, without the particulars: the exception and where (P1), the sort of loss (P2),
    the field that differs (P3)."""
    detail = found.failure.detail
    if found.failure.promise == "P1":
        return "P1 " + re.sub(r"^(feed\(\) of piece \d+ \(.*?\)|\S+) raised ", "", detail).split(": ")[0]
    if found.failure.promise == "P3":
        return "P3 " + detail.split(" ")[0]
    return "P2 " + " ".join(re.sub(r"'[^']*'|\[.*?\]|\d+", "", detail).split()[:3])


def _still_fails(template: str, mutant: Mutant, text: str, want: str) -> bool:
    candidate = Mutant(mutant.label, text, mutant.words, mutant.expected_calls)
    return any(kind(f) == want for f in check_mutant(template, candidate, one_char=len(text) <= 400))


def minimise(found: Found, deadline: float) -> str:
    """Delete ever smaller chunks of the text while the failure of the same kind persists (until ``deadline``)."""
    text, want = found.mutant.text, kind(found)
    if found.mutant.expected_calls is not None and "call(s) lost" in want:
        return text  # deleting text deletes calls: the failure would persist for the wrong reason
    size = max(len(text) // 2, 1)
    while size >= 1 and time.monotonic() < deadline:
        at, shrunk = 0, False
        while at < len(text) and time.monotonic() < deadline:
            candidate = text[:at] + text[at + size :]
            if candidate and _still_fails(found.template, found.mutant, candidate, want):
                text, shrunk = candidate, True
            else:
                at += size
        if not shrunk:
            size //= 2
    return text


def cases(template: str, seed: int, count: int, with_truncations: bool) -> list[tuple[Mutant, bool]]:
    """(mutant, stream one char per feed too) for one template."""
    found: list[tuple[Mutant, bool]] = []
    for output in outputs(template):
        found += [(m, len(m.text) <= 400) for m in mutants(output, seed, count)]
        if with_truncations and len(output.text) <= 600:
            found += [(m, False) for m in truncations(output)]
    found += [(m, False) for m in deep_inputs(template, full=True)]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=20, help="mutants of each kind per output (default 20)")
    parser.add_argument("--templates", help="comma-separated template names (substrings match)")
    parser.add_argument("--no-truncations", action="store_true", help="skip truncation at every position")
    parser.add_argument("--limit", type=int, default=40, help="failure kinds to minimise and print (default 40)")
    parser.add_argument("--shrink-seconds", type=float, default=5.0, help="time to minimise one failure")
    args = parser.parse_args()
    wanted = [s.strip() for s in args.templates.split(",")] if args.templates else None
    groups: dict[tuple[str, str], list[Found]] = {}
    checked = 0
    for template in bundled_templates():
        if wanted and not any(w in template for w in wanted):
            continue
        for mutant, one_char in cases(template, args.seed, args.count, not args.no_truncations):
            checked += 1
            for found in check_mutant(template, mutant, one_char=one_char, chunks=3 if len(mutant.text) > 4000 else 0):
                groups.setdefault((template, kind(found)), []).append(found)
        print(f"{template}: {sum(len(v) for (t, _), v in groups.items() if t == template)} failures", flush=True)
    print(f"\n{checked} cases, {sum(map(len, groups.values()))} failures in {len(groups)} (template, kind) groups\n")
    for (template, what), found in sorted(groups.items(), key=lambda kv: -len(kv[1]))[: args.limit]:
        first = min(found, key=lambda f: len(f.mutant.text))
        small = minimise(first, time.monotonic() + args.shrink_seconds)
        print(f"[{template}] {what}  (x{len(found)}, e.g. {first.mutant.label})")
        print(f"    {first.failure}"[:400])
        print(f"    minimal input: {small!r}"[:600])
    return 1 if groups else 0


if __name__ == "__main__":
    sys.exit(main())
