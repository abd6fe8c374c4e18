"""A batch from file to file: read chunks, parse them (here or in worker processes), write them in order.

The reading process cuts the input into chunks of rows (:mod:`~autoparser.batch.jsonl`: byte ranges that the
workers read themselves; :mod:`~autoparser.batch.arrow`: record batches), hands them to ``workers`` processes (a few
chunks in flight per worker, so memory stays bounded whatever the input's size) and writes each parsed chunk as it
comes back, in input order (one write a chunk), then its checkpoint (:mod:`~autoparser.batch.resume`). With one
worker there is no process: the chunks are parsed in place. Ctrl-C stops it at a chunk's end with everything written
so far resumable; a kill loses at most the chunks in flight.
"""

from __future__ import annotations

import collections
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .arrow import ParquetParts, ParquetReader, empty_schema
from .formats import BatchError, Format, format_of
from .jsonl import JsonlReader, JsonlWriter, count_rows, skip_rows
from .parser import BatchParser
from .progress import BatchProgress
from .resume import Checkpoint, checkpoint_path, fingerprint
from .worker import ChunkResult, ChunkWorker, run_chunk, start_worker

__all__ = ["BatchSummary", "run_batch"]

_CHECKPOINT_SECONDS = 1.0


@dataclass(frozen=True)
class BatchSummary:
    """What a batch did: ``rows`` in the output (``failed`` of them with an error; ``resumed`` of them written by
    the interrupted run this one resumed), the wall and CPU seconds of this run (the worker processes' CPU
    included)."""

    output: Path
    rows: int
    failed: int
    resumed: int
    seconds: float
    cpu_seconds: float

    @property
    def ok(self) -> bool:
        return self.failed == 0

    def __str__(self) -> str:
        parsed = self.rows - self.resumed
        rate = f", {parsed / self.seconds:,.0f} rows/s" if self.seconds > 0 and parsed else ""
        resumed = f" ({self.resumed} from the interrupted run)" if self.resumed else ""
        failed = f"{self.failed} failed (see their 'error' field)" if self.failed else "none failed"
        return f"{self.rows} rows{resumed} to {self.output}, {failed}; {self.seconds:.1f} s{rate}"


def run_batch(
    parser: BatchParser,
    input: str | Path,
    output: str | Path,
    *,
    workers: int = 1,
    resume: bool = False,
    chunk_rows: int = 1000,
    input_format: str | None = None,
    output_format: str | None = None,
    progress: bool | None = None,
    flush_seconds: float = 10.0,
    on_warning: Callable[[str], None] | None = None,
) -> BatchSummary:
    """Parse every row of ``input`` into ``output`` (JSONL or Parquet each, by suffix or as given), one output
    row per input row, in order. ``resume``: carry on an interrupted run from its checkpoint (a fresh start when
    there is none and no output yet). ``progress``: a progress bar (None: when stderr is a terminal).
    ``flush_seconds``: Parquet output is made resumable at least this often. ``on_warning`` hears each of
    ``apply()``'s warnings about a request once.

    Raises :class:`BatchError` for a batch that cannot run as asked, and what ``apply()`` raises for the default
    request (before anything is written); per-row problems only fail their rows.
    """
    started, cpu_started = time.perf_counter(), _cpu()
    if workers < 1:
        raise BatchError("workers must be at least 1")
    source, target = Path(input), Path(output)
    read_as, write_as = format_of(source, input_format), format_of(target, output_format)
    if not source.is_file():
        raise BatchError(f"no such input file: {source}")
    parser.default_params()  # a default request the template cannot take fails now, not on every row
    notes: dict[str, None] = {}
    _report(parser.request_warnings, notes, on_warning)
    writer: JsonlWriter | ParquetParts
    if write_as == "jsonl":
        writer = JsonlWriter(target)
    else:
        writer = ParquetParts(target, empty_schema(parser), flush_seconds=flush_seconds)
    identity = fingerprint(source, _options(parser, read_as, write_as))
    mark = checkpoint_path(target)
    point, beyond = _begin(writer, mark, identity, resume)
    resumed = point.rows
    reader: JsonlReader | ParquetReader
    if read_as == "jsonl":  # the position is a byte offset: past the rows the output holds beyond it
        point.position += skip_rows(source, point.position, beyond)
        reader = JsonlReader(source, chunk_rows, point.position)
    else:  # the position is the rows read
        point.position = point.rows
        reader = ParquetReader(source, parser, chunk_rows, point.rows)
    shown = BatchProgress(None, point.rows, progress)
    if shown.enabled:
        shown.total = count_rows(source) if isinstance(reader, JsonlReader) else reader.rows
    # (rows, failed, input position) after the last chunk written: one tuple, replaced in one step, so that a
    # Ctrl-C landing anywhere leaves it describing what the output holds (or less: a resume recovers the rest)
    done = (point.rows, point.failed, point.position)
    try:
        with _Chunks(parser, write_as, workers) as parse, shown:
            saved = time.monotonic()
            for position, result in parse(reader):
                writer.write(result.data)
                done = (done[0] + result.rows, done[1] + result.failed, position)
                shown.advance(result.rows)
                _report(result.notes, notes, on_warning)
                # A checkpoint a second at most (renaming a file can take milliseconds): a resume keeps what the
                # output holds past it anyway (the writers' recover()), so a rarer one loses nothing.
                if time.monotonic() - saved >= _CHECKPOINT_SECONDS:
                    _save(point, done, writer, mark)
                    saved = time.monotonic()
    except KeyboardInterrupt:
        writer.flush()  # Parquet: what was gathered, as a part, so none of it is parsed again
        _save(point, done, writer, mark)
        raise
    finally:
        writer.close()
    writer.finish()
    mark.unlink(missing_ok=True)
    return BatchSummary(target, done[0], done[1], resumed, time.perf_counter() - started, _cpu() - cpu_started)


def _begin(
    writer: JsonlWriter | ParquetParts, mark: Path, identity: dict[str, Any], resume: bool
) -> tuple[Checkpoint, int]:
    """The starting point and the rows the output holds past the checkpoint's input position: a fresh output, or
    (``resume``) the checkpoint's, with the whole rows written after it counted in. Not saved here: the first
    chunk's checkpoint is the first consistent one, and until then the old one still describes the output."""
    output = writer.path if isinstance(writer, JsonlWriter) else writer.output
    if resume and mark.exists():
        point = Checkpoint.load(mark, identity)
        key = "bytes" if isinstance(writer, JsonlWriter) else "parts"
        extra_rows, extra_failed = writer.recover(int(point.output.get(key, 0)))
        point.rows += extra_rows
        point.failed += extra_failed
        point.output = dict(writer.state())
        return point, extra_rows
    if resume and output.exists():
        raise BatchError(
            f"{output} exists but has no checkpoint ({mark.name}): it is complete, or not this command's; "
            "remove it or run without --resume"
        )
    writer.start()
    point = Checkpoint(identity)
    point.output = dict(writer.state())
    point.save(mark)
    return point, 0


def _save(point: Checkpoint, done: tuple[int, int, int], writer: JsonlWriter | ParquetParts, mark: Path) -> None:
    point.rows, point.failed, point.position = done
    point.output = dict(writer.state())
    point.save(mark)


def _options(parser: BatchParser, read_as: Format, write_as: Format) -> dict[str, Any]:
    """What the output depends on besides the input: the template and every option."""
    state = parser.__getstate__()
    template = state.pop("template")
    state["template"] = [template.source, template.bos_token, template.eos_token, template.name]
    state["formats"] = [read_as, write_as]
    return state


def _report(found: Iterable[str], seen: dict[str, None], hear: Callable[[str], None] | None) -> None:
    for note in found:
        if note not in seen:
            seen[note] = None
            if hear is not None:
                hear(note)


class _Chunks:
    """``parse(reader)``: each chunk's input position and :class:`ChunkResult`, in input order, parsed in place
    (one worker) or by worker processes with ``2 × workers`` chunks in flight."""

    def __init__(self, parser: BatchParser, output: Format, workers: int) -> None:
        self.parser = parser
        self.output = output
        self.workers = workers
        self.pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> Callable[[Iterable[tuple[Any, int]]], Iterator[tuple[int, ChunkResult]]]:
        if self.workers == 1:
            work = ChunkWorker(self.parser, self.output)
            return lambda reader: ((position, work(chunk)) for chunk, position in reader)
        method = "fork" if sys.platform == "linux" else "spawn"  # forked workers inherit the analysis
        self.pool = ProcessPoolExecutor(
            self.workers,
            mp_context=multiprocessing.get_context(method),
            initializer=start_worker,
            initargs=(self.parser, self.output),
        )
        return self._ordered

    def _ordered(self, reader: Iterable[tuple[Any, int]]) -> Iterator[tuple[int, ChunkResult]]:
        assert self.pool is not None
        flight: collections.deque[tuple[int, Future[ChunkResult]]] = collections.deque()
        window = 2 * self.workers
        for chunk, position in reader:
            flight.append((position, self.pool.submit(run_chunk, chunk)))
            if len(flight) >= window:
                position, future = flight.popleft()
                yield position, future.result()
        while flight:
            position, future = flight.popleft()
            yield position, future.result()

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


def _cpu() -> float:
    """CPU seconds of this process and of its children that have ended."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system
