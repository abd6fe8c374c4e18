"""When the server's garbage collector may pause everything: between replies, not in the middle of a stream.

A full collection walks every object the process holds and stops every thread meanwhile. A server that has parsed
requests with large tool lists holds hundreds of thousands of parser nodes (a 1,000-tool request builds about
670,000 objects, and the parser cache keeps several), so a full collection pauses every stream for 0.2–0.8 s; and
Python starts one by itself whenever the objects that survived the young collections grew by a quarter — which one
large request does. So the server takes full collections into its own hands (:func:`install`, called by
``serve()``): what exists at start-up is frozen out of the collector's sight, automatic full collections are off,
and young collections (cheap: they walk only new objects, and free the short-lived cycles of requests, exceptions
and tasks) run as usual. :class:`FullCollections` then runs a full collection itself when there is one to run (young
collections happened since the last) and no reply is being made, or, on a server never idle, once ``ceiling`` seconds
passed since the last, so memory held by cycles that reached the old generation stays bounded.

The parser structures themselves are freed by reference counting when the cache lets them go; what a full collection
finds is the occasional cycle (a recursive rule's compiled matcher, a traceback).
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio

__all__ = ["FullCollections", "install", "installed"]

_log = logging.getLogger("autoparser.serve")
_NEVER = 1 << 30  # a threshold the count of young collections never reaches
_installed: list[bool] = []


def install() -> None:
    """Freeze what exists (the analysed template, the libraries: it lives as long as the process) and turn off the
    full collections Python would start by itself; :class:`FullCollections` runs them instead."""
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, _NEVER)
    _installed.append(True)


def installed() -> bool:
    """Whether :func:`install` ran in this process (only ``serve()`` calls it: an app embedded elsewhere keeps its
    host's collector settings)."""
    return bool(_installed)


@dataclass
class FullCollections:
    """Runs full collections between replies. ``busy()``: whether a reply is being made now."""

    busy: Callable[[], bool]
    interval: float = 1.0  # seconds between looks
    ceiling: float = 300.0  # seconds after which a busy server collects anyway
    clock: Callable[[], float] = time.monotonic
    last: float = field(default=0.0)

    def __post_init__(self) -> None:
        self.last = self.clock()

    def due(self) -> bool:
        """Whether to collect now: young collections happened since the last full one, and the server is idle or
        the last full collection is ``ceiling`` seconds old."""
        if gc.get_count()[2] == 0:
            return False
        return not self.busy() or self.clock() - self.last >= self.ceiling

    def collect(self) -> float:
        """One full collection now; its duration in seconds."""
        start = time.perf_counter()
        found = gc.collect()
        took = time.perf_counter() - start
        self.last = self.clock()
        _log.debug("full garbage collection: %d objects freed in %.0f ms", found, took * 1000)
        return took

    async def run(self) -> None:
        """Look every ``interval`` seconds, until cancelled."""
        while True:
            await anyio.sleep(self.interval)
            if self.due():
                self.collect()
