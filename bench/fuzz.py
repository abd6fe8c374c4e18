"""A longer seeded fuzz run: the checks of tests/robustness/test_fuzz.py (P1 no crash, P2 nothing lost, P3 the stream
ends equal to parse()) with more mutants per output, every truncation, damage followed by a cut, the full-size
nesting inputs, json_schema requests (the JSON answer bare and fenced, cut at every position and damaged; the calls
under such a request), one character per feed on short texts and pieces of 1 to 3 characters and cuts inside every
marker on the damaged-and-cut ones. Each distinct failure (template, promise, kind) is minimised — chunks of the
text are deleted while the same failure persists — and printed with its template and the promise it breaks.

Run: python bench/fuzz.py [--seed N] [--count N] [--templates A,B] [--no-truncations] [--no-schema] [--limit N]
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests package: outputs, mutations, checks

from tests.robustness.fuzzing import Found, check_mutant, schema_chat
from tests.robustness.mutations import Mutant, cut_damage, deep_inputs, json_answers, mutants, truncations
from tests.robustness.promises import marker_cut_chunkings
from tests.support.outputs import markers, outputs

from autoparser import bundled_templates
from autoparser.errors import TemplateError


def kind(found: Found) -> str:
    """What kind of failure this is, without the particulars: the exception and where (P1), the sort of loss (P2),
    the field that differs (P3)."""
    detail = found.failure.detail
    if found.failure.promise == "P1":
        return "P1 " + re.sub(r"^(feed\(\) of piece \d+ \(.*?\)|\S+) raised ", "", detail).split(": ")[0]
    if found.failure.promise == "P3":
        return "P3 " + detail.split(" ")[0]
    return "P2 " + " ".join(re.sub(r"'[^']*'|\[.*?\]|\d+", "", detail).split()[:3])


@dataclass(frozen=True)
class Case:
    """One fuzz case: the text, and how to check it."""

    mutant: Mutant
    one_char: bool = False  # also one character per feed
    fine: bool = False  # also pieces of 1 to 3 characters and cuts inside every marker
    schema: bool = False  # under a json_schema request
    fenced_answer: bool = False  # a JSON answer in a fence (no call marker there)

    def check(self, template: str, mutant: Mutant | None = None) -> list[Found]:
        mutant = self.mutant if mutant is None else mutant
        chunks = 3 if len(mutant.text) > 4000 else 0
        return check_mutant(
            template,
            mutant,
            one_char=self.one_char and len(mutant.text) <= 400,
            chunks=chunks,
            fine=self.fine,
            params=schema_chat(template) if self.schema else None,
            fenced_answer=self.fenced_answer,
        )


def _still_fails(template: str, case: Case, text: str, want: str) -> bool:
    mutant = case.mutant
    candidate = Mutant(mutant.label, text, mutant.words, mutant.expected_calls)
    return any(kind(f) == want for f in dataclasses.replace(case, one_char=True).check(template, candidate))


def minimise(found: Found, case: Case, deadline: float) -> str:
    """Delete ever smaller chunks of the text while the failure of the same kind persists (until ``deadline``)."""
    text, want = found.mutant.text, kind(found)
    if found.mutant.expected_calls is not None and "call(s) lost" in want:
        return text  # deleting text deletes calls: the failure would persist for the wrong reason
    size = max(len(text) // 2, 1)
    while size >= 1 and time.monotonic() < deadline:
        at, shrunk = 0, False
        while at < len(text) and time.monotonic() < deadline:
            candidate = text[:at] + text[at + size :]
            if candidate and _still_fails(found.template, case, candidate, want):
                text, shrunk = candidate, True
            else:
                at += size
        if not shrunk:
            size //= 2
    return text


def cases(template: str, seed: int, count: int, with_truncations: bool, with_schema: bool) -> list[Case]:
    """The fuzz cases of one template."""
    found: list[Case] = []
    for output in outputs(template):
        found += [Case(m, one_char=len(m.text) <= 400) for m in mutants(output, seed, count)]
        found += [Case(m, one_char=True, fine=True) for m in cut_damage(output, seed, count)]
        if with_truncations and len(output.text) <= 600:
            found += [Case(m) for m in truncations(output)]
        if with_schema and output.calls:
            found += [Case(m, fine=True, schema=True) for m in cut_damage(output, seed + 7, max(count // 4, 1))]
    if with_schema:
        for answer in json_answers(template):
            fenced = "json-fenced" in answer.label
            damaged = [*truncations(answer), *mutants(answer, seed, max(count // 4, 1))]
            damaged += cut_damage(answer, seed, count)
            found += [Case(m, one_char=True, schema=True, fenced_answer=fenced) for m in damaged]
    found += [Case(m) for m in deep_inputs(template, full=True)]
    return found


def _streams(template: str, case: Case) -> int:
    """How many chunkings of the case are streamed (for the report; see check_mutant)."""
    text = case.mutant.text
    fine = 1 + len(marker_cut_chunkings(text, markers(template))) if case.fine else 0
    return 1 + (case.one_char and len(text) <= 400) + fine


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=20, help="mutants of each kind per output (default 20)")
    parser.add_argument("--templates", help="comma-separated template names (substrings match)")
    parser.add_argument("--no-truncations", action="store_true", help="skip truncation at every position")
    parser.add_argument("--no-schema", action="store_true", help="skip the json_schema requests")
    parser.add_argument("--limit", type=int, default=40, help="failure kinds to minimise and print (default 40)")
    parser.add_argument("--shrink-seconds", type=float, default=5.0, help="time to minimise one failure")
    args = parser.parse_args()
    wanted = [s.strip() for s in args.templates.split(",")] if args.templates else None
    groups: dict[tuple[str, str], list[tuple[Found, Case]]] = {}
    checked = streams = 0
    for template in bundled_templates():
        if wanted and not any(w in template for w in wanted):
            continue
        try:
            found_cases = cases(template, args.seed, args.count, not args.no_truncations, not args.no_schema)
        except TemplateError as error:  # a template that cannot render its outputs (the round trip says why)
            print(f"{template}: skipped ({error})", flush=True)
            continue
        for case in found_cases:
            checked += 1
            streams += _streams(template, case)
            for found in case.check(template):
                groups.setdefault((template, kind(found)), []).append((found, case))
        print(f"{template}: {sum(len(v) for (t, _), v in groups.items() if t == template)} failures", flush=True)
    total = sum(map(len, groups.values()))
    print(f"\n{checked} cases, {streams} streams, {total} failures in {len(groups)} (template, kind) groups\n")
    for (template, what), found in sorted(groups.items(), key=lambda kv: -len(kv[1]))[: args.limit]:
        first, case = min(found, key=lambda f: len(f[0].mutant.text))
        small = minimise(first, case, time.monotonic() + args.shrink_seconds)
        print(f"[{template}] {what}  (x{len(found)}, e.g. {first.mutant.label})")
        print(f"    {first.failure}"[:400])
        print(f"    minimal input: {small!r}"[:600])
    return 1 if groups else 0


if __name__ == "__main__":
    sys.exit(main())
