"""Test-wide settings.

Hypothesis runs derandomized, so CI is reproducible, and without its per-example deadline (200 ms by default): no
test fails for being slow on a loaded machine (the benchmarks in bench/ time things). Explore new examples locally
with ``pytest --hypothesis-profile=explore``.

Templates: a test parametrized over the bundled templates runs on all 134 in CI (``AUTOPARSER_TEMPLATES=all``, set
by .ci/run) and on a seeded sample of them elsewhere (a third, chosen by a hash of the name, so every run and every
xdist worker picks the same), which keeps the README's test command within minutes on a 2-core machine. The cases
left out are reported as deselected, never as passed; tests over the whole set at once (tables, docs, counts) and
tests of named templates always run. tests/support/sample.py holds the sample, for tables built at collection.

The disk cache (autoparser/disk_cache.py) is off for the whole run, the processes the tests start included: every
test computes what it checks, whatever an earlier run left on this machine. tests/test_disk_cache.py turns it on in
folders of its own.
"""

from __future__ import annotations

import gc
import os

import pytest
from hypothesis import settings

os.environ["AUTOPARSER_CACHE_DIR"] = "off"  # before any test runs (see the module docstring)

from autoparser import bundled_templates

from .support.sample import ALL_TEMPLATES, in_sample

settings.register_profile("default", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, max_examples=2000, deadline=None)
settings.load_profile("default")

_BUNDLED = frozenset(bundled_templates())


def _templates_of(item: pytest.Item) -> list[str]:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return []
    return [value for value in callspec.params.values() if isinstance(value, str) and value in _BUNDLED]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if ALL_TEMPLATES:
        return
    keep: list[pytest.Item] = []
    left_out: list[pytest.Item] = []
    for item in items:
        (keep if all(in_sample(t) for t in _templates_of(item)) else left_out).append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = keep


def pytest_report_header(config: pytest.Config) -> str:
    if ALL_TEMPLATES:
        return f"templates: all {len(_BUNDLED)} (AUTOPARSER_TEMPLATES=all)"
    sample = sum(in_sample(t) for t in _BUNDLED)
    return (
        f"templates: a seeded sample of {sample} of the {len(_BUNDLED)} bundled templates for per-template tests "
        "(AUTOPARSER_TEMPLATES=all runs all, as CI does)"
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    # The tables and caches a run builds (rendered outputs, parsers, grammars) are millions of objects, which the
    # garbage collector's passes at interpreter exit walk again and again: seconds per process, every xdist worker
    # too. Nothing needs collecting then; frozen, they are left to the exit.
    gc.freeze()
