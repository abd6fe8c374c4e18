"""A template's cold cost: load + analysis + first ``apply()``, per bundled template, from cleared caches.

Cold = every cache autoparser keeps in memory per template source or request is emptied first (the analysis, the
compiled Jinja template, the request profile and content format, the parsers and grammars built per request), so the
figures are what a fresh process pays, without the interpreter start-up and imports, in two cases:

* ``never seen``: the disk cache (autoparser/disk_cache.py, in a folder of the bench's own) emptied too: the first
  process on the machine to load the template (its writes to the disk cache included);
* ``seen before``: the disk cache holds what an earlier process wrote for the template (a server's restart, the next
  batch or pipeline worker, the next ``autoparser`` command).

Reported (milliseconds, the median over the templates of each template's best of ``--repeat`` runs, wall and CPU):

* ``cold``: ``ChatTemplate.load(name)``, ``.analysis``, then the first ``apply(messages, tools=[...])``;
* ``first apply``: that first ``apply()`` alone (the analysis done, every per-request cache empty);
* and the import: ``python -X importtime -c "import autoparser"``'s total and the wall time of a fresh import.

Targets (issue 27): first apply <= 6 ms median; cold <= 2x the C++ reference's 8 ms, so a median <= 16 ms; the import
no slower than before.

Run: python bench/cold_bench.py [--repeat N] [--verbose] [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

from autoparser import ChatTemplate, bundled_templates, disk_cache
from autoparser.analysis.analyzer import clear_cache
from autoparser.cache import clear_caches
from autoparser.errors import TemplateError
from autoparser.template.environment import clear_compile_cache

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


def clear_all() -> None:
    """Empty every cache that holds work done for a template source or a request."""
    clear_cache()
    clear_compile_cache()
    clear_caches()
    for cached in _lru_caches():
        cached.cache_clear()


def _lru_caches() -> list[Callable[..., object]]:
    """The functools caches keyed by template source, looked up by name (they are private; a module's name in its
    package can be shadowed by a function of the same name, so the modules come from the import system)."""
    found = [
        getattr(importlib.import_module(f"autoparser.requests.{module}"), function, None)
        for module, function in (("content_format", "content_format"), ("profile", "_profile"))
    ]
    return [f for f in found if f is not None and hasattr(f, "cache_clear")]


@dataclass
class Run:
    cold: float  # ms, load + analysis + first apply
    cold_cpu: float
    apply: float  # ms, the first apply alone
    apply_cpu: float


def one_run(name: str, seen: bool = False) -> Run | None:
    """One cold run (``seen``: with the disk cache holding the template's entries, else with it empty), or None for a
    template that renders no request of this shape (left out of the medians)."""
    clear_all()
    folder = disk_cache.cache_folder()
    if not seen and folder is not None:
        for entry in folder.iterdir():
            entry.unlink()
    wall, cpu = time.perf_counter(), time.process_time()
    template = ChatTemplate.load(name)
    template.analysis  # noqa: B018 - the property is the work being timed
    apply_wall, apply_cpu = time.perf_counter(), time.process_time()
    try:
        template.apply(ASK, tools=TOOLS)
    except TemplateError:
        return None
    end_wall, end_cpu = time.perf_counter(), time.process_time()
    return Run(
        (end_wall - wall) * 1000, (end_cpu - cpu) * 1000, (end_wall - apply_wall) * 1000, (end_cpu - apply_cpu) * 1000
    )


def best(runs: list[Run]) -> Run:
    return Run(
        min(r.cold for r in runs),
        min(r.cold_cpu for r in runs),
        min(r.apply for r in runs),
        min(r.apply_cpu for r in runs),
    )


def report(names: list[str], seen: bool, repeat: int, verbose: bool) -> None:
    results: dict[str, Run] = {}
    for name in names:
        if seen:
            one_run(name)  # an earlier process fills the disk cache
        runs = [one_run(name, seen) for _ in range(repeat)]
        if all(runs):
            results[name] = best([r for r in runs if r])
    case = "seen before (disk cache filled)" if seen else "never seen (disk cache empty)"
    if verbose:
        for name, run in sorted(results.items(), key=lambda item: -item[1].cold):
            print(f"  {case}: cold {run.cold:7.1f} ms  first apply {run.apply:6.1f} ms  {name}")

    def median(field: str) -> float:
        return statistics.median(getattr(run, field) for run in results.values())

    print(f"{case}, {len(results)} templates (of {len(names)}; the others render no request with tools):")
    print(f"  cold (load + analysis + first apply): median {median('cold'):.1f} ms, cpu {median('cold_cpu'):.1f} ms")
    print(f"  first apply: median {median('apply'):.1f} ms, cpu {median('apply_cpu'):.1f} ms")


def import_times(repeat: int) -> tuple[float, float]:
    """(median ``-X importtime`` total of ``autoparser`` in µs, median wall ms of ``python -c "import autoparser"``)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    totals, walls = [], []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", "import autoparser"],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        ).stderr
        match = re.search(r"^import time:\s+\d+ \|\s+(\d+) \| autoparser$", out, re.MULTILINE)
        if match:
            totals.append(int(match[1]))
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import autoparser"], env=env, check=True)
        base = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
        walls.append((base - start) - (time.perf_counter() - base))
    return statistics.median(totals) if totals else float("nan"), statistics.median(walls) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="cold runs per template (the best is kept)")
    parser.add_argument("--imports", type=int, default=7, help="fresh interpreters for the import time")
    parser.add_argument("--only", default="", help="the templates whose name contains this")
    parser.add_argument("--verbose", action="store_true", help="every template's figures")
    args = parser.parse_args()
    names = [n for n in bundled_templates() if args.only in n]
    root = tempfile.mkdtemp(prefix="cold-bench-")
    os.environ[disk_cache.ENV] = root
    try:
        for seen in (False, True):
            report(names, seen, args.repeat, args.verbose)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if args.imports:
        total, wall = import_times(args.imports)
        print(f"import autoparser: -X importtime {total / 1000:.1f} ms, wall over a bare interpreter {wall:.1f} ms")


if __name__ == "__main__":
    main()
