"""Upstream connections kept open between whole (non-streamed) replies, for the direct reader (:mod:`.direct`).

A connection costs a request its ``connect()`` (the upstream's ``accept()`` too, and a DNS lookup for ``localhost``):
about 0.1–0.5 ms of CPU on the development machine, a fifth of what the server spends on a small non-streamed
request. A whole reply arrives with its length, so once it is read to its end the connection can carry the next
request, as HTTP/1.1 intends. Streamed replies keep a connection of their own (llama.cpp's end cut off at their last
event, and closing the connection is how a client that went away cancels the engine's work).

Few are kept, briefly: llama.cpp's server (cpp-httplib) gives each connection one of its HTTP threads for as long as
it stays open, idle or not, and has a few of them (its slots plus two, or the cores less one), so every idle
connection held here is a thread a new request, streamed ones included, could not have. One idle connection per
upstream, closed after ``idle_seconds`` (1 s), serves a client that sends whole requests one after another, and
costs the upstream one thread for a second at most.

An idle connection is watched by :class:`_Idle`: anything arriving on it (the upstream closing it, stray bytes)
drops it, and its timer closes it once idle for ``idle_seconds``. A request whose reused connection closes before a
byte of the reply came is sent once more on a new one (:meth:`.direct.DirectStream.open`).
"""

from __future__ import annotations

import asyncio

__all__ = ["ConnectionPool", "PoolKey"]

PoolKey = tuple[str, str, int]  # (scheme, host, port)


class ConnectionPool:
    """Idle connections by upstream, most recently used first; used from one event loop at a time (a pool seen from
    another loop, as in tests that start servers one after another, starts empty there)."""

    def __init__(self, *, idle_seconds: float = 1.0, max_idle: int = 1) -> None:
        self.idle_seconds = idle_seconds
        self.max_idle = max_idle
        self._idle: dict[PoolKey, list[_Idle]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def take(self, key: PoolKey) -> asyncio.BaseTransport | None:
        """An idle connection to ``key`` that may carry a request, or None."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            # (another loop's connections are left to it: its transports may not be touched from this one)
            self._idle.clear()
            self._loop = loop
        entries = self._idle.get(key)
        now = loop.time()
        while entries:
            idle = entries.pop()
            idle.taken = True
            idle.stop_timer()
            if not idle.transport.is_closing() and now - idle.since < self.idle_seconds:
                return idle.transport
            idle.transport.close()
        return None

    def give(self, key: PoolKey, transport: asyncio.BaseTransport) -> None:
        """Keep ``transport`` (its reply read to the end) for the next request to ``key``."""
        loop = asyncio.get_running_loop()
        entries = self._idle.setdefault(key, [])
        if loop is not self._loop or len(entries) >= self.max_idle or transport.is_closing():
            transport.close()
            return
        idle = _Idle(self, key, transport, loop.time())
        idle.timer = loop.call_later(self.idle_seconds, idle.gone)
        transport.set_protocol(idle)
        entries.append(idle)

    def idle(self) -> int:
        """How many idle connections the pool holds."""
        return sum(len(entries) for entries in self._idle.values())

    def close(self) -> None:
        """Close every idle connection."""
        for entries in self._idle.values():
            for idle in entries:
                idle.taken = True
                idle.stop_timer()
                idle.transport.close()
        self._idle.clear()

    def _drop(self, idle: _Idle) -> None:
        entries = self._idle.get(idle.key, [])
        if idle in entries:
            entries.remove(idle)
        idle.transport.close()


class _Idle(asyncio.Protocol):
    """The protocol of an idle connection: whatever happens on it, or its time up, it is dropped from the pool."""

    def __init__(self, pool: ConnectionPool, key: PoolKey, transport: asyncio.BaseTransport, since: float) -> None:
        self.pool, self.key, self.transport, self.since = pool, key, transport, since
        self.taken = False
        self.timer: asyncio.TimerHandle | None = None  # (set by the pool as it keeps the connection)

    def data_received(self, data: bytes) -> None:
        self.gone()

    def eof_received(self) -> bool:
        self.gone()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.gone()

    def gone(self) -> None:
        """Out of the pool, and closed (idempotent)."""
        if not self.taken:
            self.taken = True
            self.stop_timer()
            self.pool._drop(self)

    def stop_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
