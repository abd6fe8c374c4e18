"""GBNF recognizer benchmark (tests/support/gbnf_recognizer.py): time and Earley items as the input grows.

The tests check the recognizer's work by counting Earley items, which does not depend on the machine
(tests/test_gbnf_recognizer.py); this prints what that work costs in time. Workloads:

* ``right-recursion``  ``root ::= item root | item`` over ``ab`` x N: Leo's optimization keeps it linear;
* ``  (no Leo)``       the same with Leo off, for contrast: quadratic (its sizes stop at ``--max-plain``);
* ``json-100-rules``   a JSON list under the JSON grammar plus 90 keyword rules (a generated tool-call grammar's size);
* ``tag-near-misses``  a ``<tag>`` body full of near-misses of ``</tag>``.

Per size: best-of-``--repeat`` milliseconds with Python's cyclic garbage collector off and on, µs per character
(collector off), Earley items per character, and the growth of each against the previous size (2.0 for a doubling
means linear, 4.0 quadratic). Nothing is asserted. The collector is shown apart because it is not the recognizer's
work but grows with it: each full collection traverses the whole chart built so far, so with it on the time per
character of long inputs creeps up (JSON: about 1.6x from 1,000 to 4,000 characters) while the items per character,
and the time with it off, stay flat.

Run: python bench/recognizer_bench.py [--sizes 500,1000,2000,4000] [--repeat N] [--max-plain N]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests package: the recognizer

from tests.test_gbnf_recognizer import JSON_GBNF

from autoparser.check.recognizer import Grammar, _earley, earley_items

RIGHT = 'root ::= item root | item\nitem ::= "a" | "b" x\nx ::= "c"?'
TAG = (
    'root ::= "<tag>" body "</tag>"\n'
    'body ::= ([^<] | "<" [^/] | "</" [^t] | "</t" [^a] | "</ta" [^g] | "</tag" [^>])*\n'
)


def hundred_rule_json() -> str:
    keywords = [f'kw-{i} ::= "keyword{i}" ws' for i in range(90)]
    union = "keyword ::= " + " | ".join(f"kw-{i}" for i in range(90))
    return JSON_GBNF.replace("| number |", "| number | keyword |") + "\n".join([union, *keywords]) + "\n"


def right_text(size: int) -> str:
    return "ab" * (size // 2)


def json_text(size: int) -> str:
    items = [{"name": f"n{i}", "args": [i, "x y", None, {"k": [1.5, True]}]} for i in range(size // 30 + 2)]
    text = json.dumps(items)[: size - 10].rsplit("},", 1)[0] + "}]"
    return text + " " * (size - len(text))


def tag_text(size: int) -> str:
    unit = "a < b </t </ta </tagx </tag </x>"
    return "<tag>" + unit * ((size - 11) // len(unit)) + "</tag>"


def best_ms(fn: Callable[[], object], repeat: int, *, collector: bool) -> float:
    """Best of ``repeat`` runs of ``fn``, in milliseconds, with the cyclic garbage collector on or off."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        if not collector:
            gc.disable()
        try:
            start = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - start)
        finally:
            gc.enable()
    return best * 1e3


def run(name: str, grammar: Grammar, make: Callable[[int], str], sizes: list[int], repeat: int, leo: bool) -> None:
    start = grammar._start("root")
    previous: tuple[float, float, int] | None = None
    for size in sizes:
        text = make(size)
        if not _earley(grammar._tables, start, text, True, leo):
            print(f"{name:<18} {len(text):>7}  (not accepted: the workload is broken)")
            continue
        ms, ms_gc = (
            best_ms(lambda text=text: _earley(grammar._tables, start, text, True, leo), repeat, collector=collector)
            for collector in (False, True)
        )
        items = earley_items(grammar, text, leo=leo)
        if previous:
            growth = f"{ms / previous[0]:6.2f} {ms_gc / previous[1]:6.2f} {items / previous[2]:6.2f}"
        else:
            growth = f"{'—':>6} {'—':>6} {'—':>6}"
        per_char = ms * 1e3 / len(text)
        print(f"{name:<18} {len(text):>7} {ms:9.2f} {ms_gc:9.2f} {per_char:8.2f} {items / len(text):10.2f}  {growth}")
        previous = (ms, ms_gc, items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="500,1000,2000,4000", help="input sizes in characters (comma-separated)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size; the best is reported")
    parser.add_argument("--max-plain", type=int, default=1000, help="largest size for the quadratic no-Leo run")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    header = f"{'workload':<18} {'chars':>7} {'ms':>9} {'ms+gc':>9} {'µs/char':>8} {'items/char':>10}"
    print(f"{header}  {'ms×':>6} {'ms+gc×':>6} {'items×':>6}")  # ×: growth against the previous size
    right = Grammar.parse(RIGHT)
    run("right-recursion", right, right_text, sizes, args.repeat, leo=True)
    run("  (no Leo)", right, right_text, [s for s in sizes if s <= args.max_plain], args.repeat, leo=False)
    run("json-100-rules", Grammar.parse(hundred_rule_json()), json_text, sizes, args.repeat, leo=True)
    run("tag-near-misses", Grammar.parse(TAG), tag_text, sizes, args.repeat, leo=True)


if __name__ == "__main__":
    main()
