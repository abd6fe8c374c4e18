"""``autoparser serve --workers N``: N processes answering on one listening socket.

The parent has loaded and analysed the template and built the app; it binds the socket, freezes what exists out of
the garbage collector's sight (:func:`.collector.install`), then forks the workers: each inherits the app and the
socket (copy-on-write: the analysed template is not copied while nothing writes to it) and runs uvicorn on the socket;
the kernel hands each new connection to one of them. The parent only supervises: SIGINT or SIGTERM stops the workers
(SIGTERM: uvicorn's graceful shutdown) and waits for them; a worker that dies otherwise is replaced, unless workers
keep dying (more than ``3 * N`` replacements within a minute: the parent stops and exits 1).

Metrics (:mod:`.metrics`) add up across the workers through ``prometheus_client``'s multiprocess mode: the command
line sets ``PROMETHEUS_MULTIPROC_DIR`` to a directory of its own before ``prometheus_client`` is imported; each worker
writes its figures there, any worker's ``/metrics`` reads them all, and the parent marks a gone worker's live gauges
dead (:func:`prometheus_client.multiprocess.mark_process_dead`).

POSIX only (``os.fork``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from . import collector

__all__ = ["RESTARTS_PER_WORKER", "RESTART_WINDOW", "Supervisor", "listen"]

_log = logging.getLogger("autoparser.serve")
RESTARTS_PER_WORKER = 3  # replacements allowed per worker within RESTART_WINDOW seconds
RESTART_WINDOW = 60.0
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_WATCHED = {signal.SIGCHLD, *_STOP_SIGNALS}
_STARTUP_FAILURE = 3  # uvicorn's exit status when the app's startup fails


def listen(host: str, port: int, backlog: int = 2048) -> socket.socket:
    """The listening socket the workers share (SO_REUSEADDR, as uvicorn binds its own). IPPROTO_TCP: asyncio sets
    TCP_NODELAY only on accepted sockets that say they are TCP."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


class Supervisor:
    """Forks ``workers`` processes that each call ``run(sock)`` (then exit), and keeps them running until a stop
    signal. ``on_exit(pid)``: called for each worker that ended (the metrics' bookkeeping)."""

    def __init__(
        self,
        run: Callable[[socket.socket], int],
        sock: socket.socket,
        workers: int,
        *,
        on_exit: Callable[[int], Any] | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.run_worker = run
        self.sock = sock
        self.workers = workers
        self.on_exit = on_exit
        self.pids: set[int] = set()
        self.restarts: deque[float] = deque()

    def _fork(self, mask: set[signal.Signals]) -> int:
        pid = os.fork()
        if pid:
            self.pids.add(pid)
            return pid
        # The worker: the default handlers and no blocked signals (uvicorn installs its own), then never back into
        # the parent's code (its clean-up would run twice)
        code = 1
        try:
            for sig in _STOP_SIGNALS:
                signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            code = self.run_worker(self.sock)
        except BaseException:
            _log.exception("worker %d failed", os.getpid())
        finally:
            logging.shutdown()
            os._exit(code)
        raise AssertionError("unreachable")  # pragma: no cover

    def run(self) -> int:
        """Start the workers and supervise them; the exit status (0: stopped by a signal; 1: workers kept dying)."""
        collector.install()  # before the fork: what the workers inherit is frozen, so no collection touches it
        before = signal.pthread_sigmask(signal.SIG_BLOCK, _WATCHED)
        code = 0
        try:
            for _ in range(self.workers):
                self._fork(before)
            _log.info("started %d workers (pids %s)", self.workers, ", ".join(map(str, sorted(self.pids))))
            while True:
                received = signal.sigtimedwait(_WATCHED, 1.0)
                if received is not None and received.si_signo in _STOP_SIGNALS:
                    _log.info("stopping %d workers", len(self.pids))
                    break
                if not self._reap_and_replace(before):
                    code = 1
                    break
        finally:
            self._stop()
            signal.pthread_sigmask(signal.SIG_SETMASK, before)
        return code

    def _reaped(self) -> list[tuple[int, int]]:
        """The workers that ended since the last look: (pid, exit status)."""
        ended = []
        while self.pids:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            if pid in self.pids:
                self.pids.discard(pid)
                ended.append((pid, os.waitstatus_to_exitcode(status)))
                if self.on_exit is not None:
                    self.on_exit(pid)
        return ended

    def _reap_and_replace(self, mask: set[signal.Signals]) -> bool:
        """Replace the workers that died; False when they die too often to go on."""
        for pid, code in self._reaped():
            now = time.monotonic()
            while self.restarts and now - self.restarts[0] > RESTART_WINDOW:
                self.restarts.popleft()
            if len(self.restarts) >= RESTARTS_PER_WORKER * self.workers:
                _log.error(
                    "workers keep dying (%d replaced within %.0f s): stopping", len(self.restarts), RESTART_WINDOW
                )
                return False
            how = "failed to start" if code == _STARTUP_FAILURE else f"exited with {code}"
            self.restarts.append(now)
            new = self._fork(mask)
            _log.warning("worker %d %s: replaced by worker %d", pid, how, new)
        return True

    def _stop(self) -> None:
        """SIGTERM every worker and wait for them all; a second stop signal meanwhile kills those left."""
        for pid in self.pids:
            _signal(pid, signal.SIGTERM)
        while self.pids:
            received = signal.sigtimedwait(_WATCHED, 0.5)
            if received is not None and received.si_signo in _STOP_SIGNALS:
                _log.warning("killing %d workers", len(self.pids))
                for pid in self.pids:
                    _signal(pid, signal.SIGKILL)
            self._reaped()


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
