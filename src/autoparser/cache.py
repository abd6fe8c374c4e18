"""The library's per-request caches, bounded by the memory they hold rather than by their number of entries.

A parser built for a request with 200 large tools holds some 20 MB; one for a plain request some 50 KB. A bound on
the number of entries (``lru_cache(maxsize=256)``) therefore bounds nothing: 256 requests with fresh large tools
took a server to gigabytes. Every cache that grows with the requests seen (parsers, grammars, parsed schemas,
rendering probes, leftover scanners) keeps its entries in one store, least recently used first, with one budget
(:func:`set_cache_budget`, ``autoparser serve --cache-mb``): an entry comes with an estimate of its size, made
cheaply from what it holds (a parser's number of compiled nodes, a grammar's request text, a schema's JSON text,
times what one of those costs once built), and the least recently used entries go until the store is under its
budget again. An entry larger than the whole budget
is not kept at all.

The estimates are rough — measured with tracemalloc on bundled templates of several formats with 0 to 200 tools, they
fall within a factor of about 2.5 of what an entry holds; ``tests/test_cache.py`` checks one — what is exact is the
store's own accounting of them (:func:`cache_usage`).
"""

from __future__ import annotations

import functools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, TypeVar

__all__ = [
    "DEFAULT_CACHE_MB",
    "CacheUsage",
    "Deferred",
    "SizedCache",
    "cache_budget",
    "cache_usage",
    "clear_caches",
    "quick",
    "quick_deadline",
    "set_cache_budget",
    "sized_cache",
]

DEFAULT_CACHE_MB = 256
MIB = 1024 * 1024
P = ParamSpec("P")
R = TypeVar("R")
V = TypeVar("V")


@dataclass(frozen=True)
class CacheUsage:
    """What the store holds: its entries, their estimated size in bytes, and its budget in bytes."""

    entries: int
    bytes: int
    budget: int


class _Store:
    """One least-recently-used order over every cache's entries, with one budget. Thread-safe: a server may prepare
    requests on several threads; a value computed twice at once is simply stored twice (the second replaces the
    first)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.total = 0
        self.entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: Hashable) -> tuple[bool, Any]:
        with self.lock:
            found = self.entries.get(key)
            if found is None:
                return False, None
            self.entries.move_to_end(key)
            return True, found[0]

    def put(self, key: Hashable, value: Any, size: int) -> None:
        size = max(1, int(size))
        with self.lock:
            old = self.entries.pop(key, None)
            if old is not None:
                self.total -= old[1]
            if size > self.budget:
                return  # larger than the whole budget: kept by nobody
            self.entries[key] = (value, size)
            self.total += size
            self._evict()

    def _evict(self) -> None:
        while self.total > self.budget and self.entries:
            _, (_, size) = self.entries.popitem(last=False)
            self.total -= size

    def clear(self, owner: object | None = None) -> None:
        with self.lock:
            if owner is None:
                self.entries.clear()
                self.total = 0
                return
            for key in [k for k in self.entries if isinstance(k, tuple) and k and k[0] is owner]:
                self.total -= self.entries.pop(key)[1]

    def resize(self, budget: int) -> None:
        with self.lock:
            self.budget = budget
            self._evict()

    def usage(self, owner: object | None = None) -> CacheUsage:
        with self.lock:
            if owner is None:
                return CacheUsage(len(self.entries), self.total, self.budget)
            mine = [size for key, (_, size) in self.entries.items() if isinstance(key, tuple) and key[0] is owner]
            return CacheUsage(len(mine), sum(mine), self.budget)


_STORE = _Store(DEFAULT_CACHE_MB * MIB)


@dataclass(frozen=True)
class _Info:
    """What ``functools.lru_cache``'s ``cache_info()`` says that a sized cache can say too."""

    currsize: int


def set_cache_budget(megabytes: float) -> None:
    """Bound every per-request cache of the library together to about ``megabytes`` MiB (default
    :data:`DEFAULT_CACHE_MB`; 0 keeps nothing). Entries over the new budget go at once, least recently used first."""
    if not megabytes >= 0:
        raise ValueError(f"the cache budget must be a number of megabytes >= 0, got {megabytes!r}")
    _STORE.resize(int(megabytes * MIB))


def cache_budget() -> int:
    """The budget in bytes."""
    return _STORE.budget


def cache_usage() -> CacheUsage:
    """What the caches hold now (by their size estimates)."""
    return _STORE.usage()


def clear_caches() -> None:
    """Empty every per-request cache."""
    _STORE.clear()


class SizedCache(Generic[V]):
    """A named part of the store: ``get`` and ``put`` by key, each entry with its estimated size in bytes."""

    def __init__(self, name: str) -> None:
        self.name = name

    def get(self, key: Hashable) -> V | None:
        found, value = _STORE.get((self, key))
        return value if found else None

    def put(self, key: Hashable, value: V, size: int) -> None:
        _STORE.put((self, key), value, size)

    def clear(self) -> None:
        _STORE.clear(self)

    def usage(self) -> CacheUsage:
        """This cache's part of the store."""
        return _STORE.usage(self)

    def __repr__(self) -> str:
        return f"SizedCache({self.name!r})"


class Deferred(Exception):
    """Raised in :func:`quick` mode instead of doing work that may take long: computing what a cache does not
    hold, or rendering past the quick deadline. The caller does the whole job again outside quick mode."""


_QUICK: ContextVar[float | None] = ContextVar("autoparser_quick_deadline", default=None)


@contextmanager
def quick(seconds: float) -> Iterator[None]:
    """Quick mode for the work done in this ``with`` (in this thread or task): a :func:`sized_cache` function whose
    result is not cached raises :class:`Deferred` instead of computing it (a parser, a grammar, a parsed schema: up
    to a second for large tools), and a render still running ``seconds`` from now raises it (a template's
    deadline checks end it there). For work that must not hold an event loop: tried there first, where what it
    needs is cached it is done in well under a millisecond; else it is done again in a worker thread."""
    token = _QUICK.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _QUICK.reset(token)


def quick_deadline() -> float | None:
    """The monotonic deadline of the quick mode this thread or task is in, or None."""
    return _QUICK.get()


def sized_cache(size: Callable[..., int]) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Memoize a function of hashable arguments in the store; ``size(result, *args, **kwargs)`` estimates an
    entry's bytes (called only on a miss). The wrapper has ``cache_clear()`` and ``cache_info().currsize``, like
    ``functools.lru_cache``'s."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        cache: SizedCache[Any] = SizedCache(f"{function.__module__}.{function.__qualname__}")

        @functools.wraps(function)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            key = (args, tuple(sorted(kwargs.items()))) if kwargs else args
            found, value = _STORE.get((cache, key))
            if found:
                return value  # type: ignore[no-any-return]
            if _QUICK.get() is not None:
                raise Deferred(f"{cache.name} is not cached")
            value = function(*args, **kwargs)
            cache.put(key, value, size(value, *args, **kwargs))
            return value

        wrapper.cache_clear = cache.clear  # type: ignore[attr-defined]
        wrapper.cache_info = lambda: _Info(cache.usage().entries)  # type: ignore[attr-defined]
        return wrapper

    return decorate
