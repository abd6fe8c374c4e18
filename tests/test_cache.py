"""The per-request caches are bounded by the memory they hold (issue 25, item 1): a budget in MiB over every cache
together, least recently used entries evicted first, whatever the number of entries.

Measured by the caches' own accounting (:func:`autoparser.cache.cache_usage`), not the process's memory; one test
checks that accounting against what tracemalloc sees an entry hold.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest

import autoparser
from autoparser import ChatTemplate
from autoparser.cache import (
    MIB,
    Deferred,
    SizedCache,
    cache_budget,
    cache_usage,
    clear_caches,
    quick,
    quick_deadline,
    set_cache_budget,
    sized_cache,
)
from autoparser.errors import TemplateError

QWEN = "Qwen3.5-4B"
MESSAGES = [{"role": "user", "content": "Hi"}]


@pytest.fixture
def budget() -> Iterator[None]:
    """Each test sets its own budget; the default comes back afterwards."""
    before = cache_budget()
    clear_caches()
    yield
    set_cache_budget(before / MIB)
    clear_caches()


def _tools(seed: str, n: int) -> list[dict[str, Any]]:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "the city " * 4},
            "days": {"type": "integer", "minimum": 1},
            "units": {"enum": ["metric", "imperial"]},
        },
        "required": ["city"],
    }
    return [
        {"type": "function", "function": {"name": f"tool_{seed}_{i}", "description": "Does it.", "parameters": schema}}
        for i in range(n)
    ]


def test_many_requests_with_fresh_large_tools_stay_under_the_budget(budget: None) -> None:
    template = ChatTemplate.load(QWEN)
    set_cache_budget(3)
    seen: list[int] = []
    for request in range(12):
        params = template.apply(MESSAGES, tools=_tools(f"r{request}", 12))
        message = params.parse("Hello")
        assert "Hello" in message.content + message.reasoning_content
        usage = cache_usage()
        assert usage.budget == 3 * MIB
        assert 0 < usage.bytes <= usage.budget
        seen.append(usage.bytes)
    # what was kept would have outgrown the budget several times over: the bound did the work
    one = seen[0]
    assert one * 12 > 2 * 3 * MIB, "the requests are too small to show the bound"


def test_the_budget_keeps_what_was_used_last(budget: None) -> None:
    template = ChatTemplate.load(QWEN)
    set_cache_budget(3)
    tools = _tools("kept", 12)
    first = template.apply(MESSAGES, tools=tools)._generated
    for request in range(8):
        template.apply(MESSAGES, tools=_tools(f"other{request}", 12))
        again = template.apply(MESSAGES, tools=tools)._generated  # used again: stays the newest
        assert again is first
    for request in range(8):  # no longer used: evicted, then built anew
        template.apply(MESSAGES, tools=_tools(f"more{request}", 12))
    assert template.apply(MESSAGES, tools=tools)._generated is not first


def test_a_smaller_budget_evicts_at_once_and_zero_keeps_nothing(budget: None) -> None:
    template = ChatTemplate.load(QWEN)
    set_cache_budget(64)
    for request in range(4):
        template.apply(MESSAGES, tools=_tools(f"s{request}", 6))
    held = cache_usage()
    assert held.entries > 4
    set_cache_budget(held.bytes / MIB / 2)
    assert cache_usage().bytes <= held.bytes / 2
    set_cache_budget(0)
    assert cache_usage().bytes == 0 and cache_usage().entries == 0
    template.apply(MESSAGES, tools=_tools("nothing", 2))  # still works, keeping nothing
    assert cache_usage().entries == 0


def test_the_estimate_is_near_what_an_entry_holds(budget: None) -> None:
    """The accounting is an estimate; it must stay within a small factor of the memory really held, or the budget
    means little. (tracemalloc counts what the caches keep after the request's own objects are gone.)"""
    template = ChatTemplate.load(QWEN)
    template.apply(MESSAGES, tools=_tools("warm", 2))
    clear_caches()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        params = template.apply(MESSAGES, tools=_tools("measured", 40))
        _ = params.full_grammar
        del params, _
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    estimate = cache_usage().bytes
    assert held / 3 <= estimate <= held * 3, (estimate, held)


def test_the_store_evicts_least_recently_used_first(budget: None) -> None:
    set_cache_budget(1000 / MIB)
    cache: SizedCache[str] = SizedCache("test")
    cache.put("a", "A", 400)
    cache.put("b", "B", 400)
    assert cache.get("a") == "A"  # a is now the newest
    cache.put("c", "C", 400)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == ("A", None, "C")
    cache.put("huge", "H", 1001)  # larger than the whole budget: not kept, and evicts nothing
    assert cache.get("huge") is None and cache.get("a") == "A"
    assert cache_usage().bytes == 800
    cache.put("a", "A2", 100)  # replaced: its old size no longer counts
    assert cache_usage().bytes == 500 and cache.get("a") == "A2"
    cache.clear()
    assert cache_usage().entries == 0


def test_sized_cache_memoizes_and_sizes_by_the_result(budget: None) -> None:
    calls: list[int] = []

    @sized_cache(lambda result, n: len(result))
    def text(n: int) -> str:
        calls.append(n)
        return "x" * n

    assert text(10) == text(10) == "x" * 10 and calls == [10]
    assert cache_usage().bytes == 10
    text.cache_clear()  # type: ignore[attr-defined]
    assert text(10) and calls == [10, 10]


def test_the_library_level_setting() -> None:
    before = cache_budget()
    try:
        autoparser.set_cache_budget(12.5)
        assert cache_budget() == int(12.5 * MIB)
        with pytest.raises(ValueError, match="budget"):
            autoparser.set_cache_budget(-1)
    finally:
        set_cache_budget(before / MIB)


# --- quick mode: what the server tries on its event loop -------------------------------------------------------


def test_quick_mode_defers_a_miss_and_takes_a_hit(budget: None) -> None:
    calls: list[int] = []

    @sized_cache(lambda value, n: 100)
    def square(n: int) -> int:
        calls.append(n)
        return n * n

    with quick(1.0), pytest.raises(Deferred):
        square(3)
    assert calls == [] and cache_usage().entries == 0  # nothing computed, nothing kept
    assert square(3) == 9 and calls == [3]  # outside quick mode: computed
    with quick(1.0):
        assert square(3) == 9  # a hit: no work to defer
        assert quick_deadline() is not None
    assert calls == [3] and quick_deadline() is None


def test_quick_mode_ends_a_slow_rendering_at_its_deadline_and_lets_a_fast_one_finish() -> None:
    template = ChatTemplate(
        "{% for i in range(n) %}{% for j in range(n) %}{% endfor %}{% endfor %}"
        "{% for m in messages %}{{ m.content }}{% endfor %}",
        name="loops.jinja",
    )
    with quick(0.002), pytest.raises(Deferred):
        template.render(MESSAGES, n=2000)  # (Deferred, not the TemplateError every other failure becomes)
    with quick(0.5):
        assert template.render(MESSAGES, n=1) == "Hi"
    assert template.render(MESSAGES, n=300) == "Hi"  # outside quick mode: the template's own limits
    with pytest.raises(TemplateError):
        template.render(MESSAGES, n=200_000)  # (past the sandbox's range: a template error, as before)
