"""One chunk of rows, parsed where it runs: the reading process or a worker process.

A chunk arrives as the reading process found it (JSONL: a byte range of whole lines, read here; Parquet: a record
batch) and leaves as it will be written (JSONL: bytes of output lines; Parquet: a record batch), so the reading
process does no per-row work and what crosses between processes is at most two buffers per chunk. Worker processes
each hold one :class:`ChunkWorker` (set up once by :func:`start_worker`, with the parser the reading process built:
forked, they inherit its analysis and caches; spawned, they rebuild them once).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any

from .formats import Format
from .jsonl import LineSpan, encode_rows, read_rows
from .parser import BatchParser, Outcome, failure

__all__ = ["ChunkResult", "ChunkWorker", "run_chunk", "start_worker"]


@dataclass(frozen=True, slots=True)
class ChunkResult:
    """A parsed chunk: its row count, how many failed, the output (bytes or a record batch), and the request
    warnings this worker met for the first time."""

    rows: int
    failed: int
    data: Any
    notes: tuple[str, ...] = ()


class ChunkWorker:
    """Parses chunks with ``parser`` into ``output`` format."""

    def __init__(self, parser: BatchParser, output: Format) -> None:
        self.parser = parser
        self.output = output
        self._noted = 0

    def __call__(self, chunk: Any) -> ChunkResult:
        parser = self.parser
        source = None
        if chunk.__class__ is LineSpan:
            rows: list[Any] = list(read_rows(chunk.read()))
        else:
            from .arrow import batch_rows

            rows, source = batch_rows(chunk, parser), chunk
        outcome = parser.outcome
        outcomes: list[Outcome] = [outcome(row) if row.__class__ is dict else failure(row) for row in rows]
        failed = sum(1 for o in outcomes if o[3] is not None)
        if self.output == "jsonl":
            data: Any = encode_rows(rows, outcomes, parser.keep)
        else:
            from .arrow import encode_batch

            data = encode_batch(parser, rows, outcomes, source)
        notes: tuple[str, ...] = ()
        if len(parser.request_warnings) > self._noted:
            notes = tuple(parser.request_warnings)[self._noted :]
            self._noted = len(parser.request_warnings)
        return ChunkResult(len(rows), failed, data, notes)


_WORKER: ChunkWorker | None = None


def start_worker(parser: BatchParser, output: Format) -> None:
    """A worker process's set-up: its :class:`ChunkWorker`; Ctrl-C left to the reading process (which stops the
    batch at a chunk's end); and an exit of its own when the reading process is gone (killed), rather than an
    orphan waiting for chunks forever."""
    global _WORKER
    _WORKER = ChunkWorker(parser, output)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="autoparser-parent-watch").start()


def run_chunk(chunk: Any) -> ChunkResult:
    """The task a worker process runs."""
    assert _WORKER is not None, "start_worker() sets the worker up"
    return _WORKER(chunk)
