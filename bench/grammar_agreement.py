"""Grammar <=> parser agreement at a larger budget than CI's: per tool-calling template and grammar kind, how many
random grammar samples (llguidance over bytes and the template's markers) the parser reads back as valid calls.

Columns: samples judged, samples with calls, calls, walks that did not end, llguidance errors, disagreements.
The first disagreement of each row is printed with --verbose.

Run: python bench/grammar_agreement.py [--samples N] [--seed S] [--verbose] [TEMPLATE ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests' sampling support

from tests.support.agreement import KINDS, check

from autoparser import bundled_templates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("templates", nargs="*", help="bundled template names (default: all)")
    parser.add_argument("--samples", type=int, default=20, help="samples per template and kind (default 20)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1; CI uses 0)")
    parser.add_argument("--verbose", action="store_true", help="print the first disagreement of each row")
    args = parser.parse_args()
    names = args.templates or bundled_templates()
    totals = [0, 0, 0, 0, 0, 0]
    agreeing_rows = rows = 0
    start = time.perf_counter()
    print(f"{'template':46} {'kind':10} {'judged':>6} {'w/calls':>7} {'calls':>5} {'unf':>4} {'engine':>6} {'bad':>4}")
    for name in names:
        for kind in KINDS:
            report = check(name, kind, args.samples, args.seed)
            if report is None:
                continue
            row = [
                report.samples,
                report.with_calls,
                report.calls,
                report.unfinished,
                len(report.engine_errors),
                len(report.failures),
            ]
            totals = [a + b for a, b in zip(totals, row, strict=True)]
            rows += 1
            agreeing_rows += not report.failures
            print(f"{name:46} {kind:10} " + " ".join(f"{v:>{w}}" for v, w in zip(row, (6, 7, 5, 4, 6, 4), strict=True)))
            if args.verbose and report.failures:
                print("    " + report.failures[0][:400])
    print(f"{'total':57} " + " ".join(f"{v:>{w}}" for v, w in zip(totals, (6, 7, 5, 4, 6, 4), strict=True)))
    print(f"{agreeing_rows}/{rows} grammars without a disagreement; {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
