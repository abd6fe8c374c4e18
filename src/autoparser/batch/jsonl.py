"""JSONL in and out, cheaply: each worker reads, decodes, parses and encodes its own chunk of lines.

The reading process only cuts the input into chunks (``JsonlReader``: byte ranges of whole lines, found by seeking,
not by reading every line), so with several workers it stays almost idle; a worker reads its range
(:class:`LineSpan`), turns it into rows (:func:`read_rows`), and their outcomes back into one block of output lines
(:func:`encode_rows`), which the writer appends as it is. A blank line is no row: it has no output line. A line that
is not a JSON object is a row whose ``error`` says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from .formats import BatchError
from .parser import Outcome

__all__ = ["JsonlReader", "JsonlWriter", "LineSpan", "count_rows", "encode_rows", "is_row", "read_rows", "skip_rows"]

_decoder = json.JSONDecoder()
_decode, _raw_decode = _decoder.decode, _decoder.raw_decode
_BLANK = " \t\n\r\x0b\x0c"  # what bytes.isspace() calls space: a line of only these is no row, read either way
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode
_encode_ascii = json.JSONEncoder(separators=(",", ":"), default=str).encode


def is_row(line: bytes) -> bool:
    """Whether an input line is a row (not blank)."""
    return bool(line) and not line.isspace()


def count_rows(path: str | Path) -> int:
    """The rows of a JSONL file (for a progress bar's total): its non-blank lines, counted in blocks."""
    rows = 0
    with open(path, "rb") as f:
        for line in f:
            rows += is_row(line)
    return rows


@dataclass(frozen=True, slots=True)
class LineSpan:
    """A chunk of a JSONL file: bytes ``start`` to ``end`` of ``path``, whole lines. It is what crosses to a worker
    process (a few dozen bytes), which reads the lines itself: the reading process never holds them."""

    path: str
    start: int
    end: int

    def read(self) -> bytes:
        with open(self.path, "rb") as f:
            f.seek(self.start)
            return f.read(self.end - self.start)


class JsonlReader:
    """The input as chunks of about ``chunk_rows`` rows (:class:`LineSpan`), from byte ``offset`` on, each with the
    byte offset just past it, for the checkpoint. A chunk's end is found by seeking about ``chunk_rows`` lines on and
    reading to the next newline: the work here is a few small reads a chunk, whatever its rows (a line's length is
    estimated from a sample at the start and the bytes read at each end; a chunk is at most 4 times the last one's
    bytes, so that short lines after long ones do not make one huge chunk)."""

    def __init__(self, path: str | Path, chunk_rows: int, offset: int = 0) -> None:
        self.path = Path(path)
        self.chunk_rows = max(chunk_rows, 1)
        self.offset = offset

    def __iter__(self) -> Iterator[tuple[LineSpan, int]]:
        name = str(self.path)
        with open(self.path, "rb", buffering=0) as f:
            size = f.seek(0, 2)
            start = self.offset
            f.seek(start)
            line = _line_length(f.read(_SAMPLE), 1.0)
            most = 64 * self.chunk_rows  # a chunk's bytes at most: lines of 64 bytes at first, then 4 times the last's
            while start < size:
                end, line = _line_end(f, start + max(1, min(most, round(line * self.chunk_rows))), size, line)
                yield LineSpan(name, start, end), end
                most, start = 4 * (end - start), end


_SAMPLE, _PROBE = 1 << 16, 1 << 13  # bytes read at the start, and at each chunk's end, to estimate a line's length


def _line_length(block: bytes, at_least: float) -> float:
    """The mean length of the whole lines in ``block``; where it holds none, a line is at least ``block`` long (and
    ``at_least``)."""
    whole = block.rfind(b"\n") + 1
    if not whole:
        return max(at_least, float(len(block)))
    return whole / block.count(b"\n", 0, whole)


def _line_end(f: BinaryIO, target: int, size: int, line: float) -> tuple[int, float]:
    """The offset just past the line holding byte ``target - 1`` (``size`` for the file's last line), and the length
    of the lines just past it (``line``, the estimate so far, where they are longer than what was read of them)."""
    if target >= size:
        return size, line
    position = f.seek(target - 1)
    probe = _PROBE
    while True:
        block = f.read(probe)
        if not block:
            return size, line
        found = block.find(b"\n")
        if found >= 0:
            return position + found + 1, _line_length(block[found + 1 :], line)
        position += len(block)
        line = max(line, float(position - target))  # a line longer than the probe: the estimate grows with it
        probe = min(2 * probe, 1 << 20)


def skip_rows(path: Path, offset: int, rows: int) -> int:
    """The bytes of the ``rows`` rows from byte ``offset`` of a file on (blank lines between them included)."""
    read = 0
    if rows > 0:
        with open(path, "rb") as f:
            f.seek(offset)
            for line in f:
                read += len(line)
                rows -= is_row(line)
                if not rows:
                    break
    return read


def read_rows(data: bytes) -> Iterator[dict[str, Any] | str]:
    """The rows of a chunk of lines: each JSON object, or why the line is no row (a str)."""
    try:
        lines: Sequence[str] = data.decode().split("\n")
    except UnicodeDecodeError:
        yield from _read_bytes_rows(data)
        return
    for line in lines:
        if line.strip(_BLANK):
            yield _row(line)


def _read_bytes_rows(data: bytes) -> Iterator[dict[str, Any] | str]:
    """:func:`read_rows` of a chunk that is not all UTF-8: only the lines that are not fail."""
    for raw in data.split(b"\n"):
        if raw.isspace() or not raw:
            continue
        try:
            line = raw.decode()
        except UnicodeDecodeError as err:
            yield f"the line is not UTF-8 text: {err.reason} at byte {err.start}"
            continue
        yield _row(line)


def _row(line: str) -> dict[str, Any] | str:
    try:
        row, end = _raw_decode(line)  # no whitespace scans around the value, unless there is some (below)
        if end != len(line):
            row = _decode(line)
    except ValueError:
        try:
            row = _decode(line)  # leading whitespace, or the error's own message
        except ValueError as err:
            return f"the line is not valid JSON: {err}"
    return row if row.__class__ is dict else f"the line holds a JSON {type(row).__name__}, not an object"


def encode_rows(rows: Sequence[Any], outcomes: Sequence[Outcome], keep: Sequence[str]) -> bytes:
    """The output lines of a chunk: per row ``message``, ``warnings``, ``call_statuses``, ``error`` and the ``keep``
    fields (null where the row has none), as UTF-8 JSON lines (a text that is no valid Unicode, a lone surrogate
    from a ``\\ud800`` escape, is written escaped, as it came)."""
    out: list[dict[str, Any]] = []
    for row, (message, warnings, statuses, error) in zip(rows, outcomes, strict=True):
        record = {"message": message, "warnings": warnings, "call_statuses": statuses, "error": error}
        if keep:
            has = row.__class__ is dict
            for name in keep:
                record[name] = row.get(name) if has else None
        out.append(record)
    if not out:
        return b""
    try:
        return ("\n".join(map(_encode, out)) + "\n").encode()
    except UnicodeEncodeError:  # only the lines that cannot be UTF-8 are escaped: the same bytes however chunked
        return b"".join(map(_encode_line, out))


def _encode_line(record: dict[str, Any]) -> bytes:
    try:
        return (_encode(record) + "\n").encode()
    except UnicodeEncodeError:
        return (_encode_ascii(record) + "\n").encode()


class JsonlWriter:
    """The output file, written a chunk's block of lines at a time and flushed after each, so that what a killed
    run leaves is whole lines and at most one line cut short (which :meth:`recover` drops)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file: BinaryIO | None = None
        self._written = 0  # the bytes of whole chunks in the file (a write cut short by Ctrl-C is not counted)

    def start(self) -> None:
        """A fresh output: the file emptied."""
        self._file = open(self.path, "wb")  # noqa: SIM115 (closed by close())
        self._written = 0

    def recover(self, offset: int) -> tuple[int, int]:
        """Resume after ``offset`` checkpointed bytes: keep the whole lines written since (a kill between a write
        and its checkpoint), cut a line left unfinished; the rows and failed rows of the lines kept beyond
        ``offset``."""
        try:
            self._file = open(self.path, "r+b")  # noqa: SIM115 (closed by close())
        except FileNotFoundError:
            raise BatchError(f"cannot resume: {self.path} is gone (its checkpoint is still there)") from None
        size = self._file.seek(0, 2)
        if size < offset:
            raise BatchError(f"cannot resume: {self.path} is shorter ({size} bytes) than its checkpoint ({offset})")
        self._file.seek(offset)
        tail = self._file.read()
        whole = tail[: tail.rfind(b"\n") + 1]
        self._written = self._file.seek(offset + len(whole))
        self._file.truncate()
        lines = whole.split(b"\n")[:-1]
        failed = sum(1 for line in lines if _decode(line.decode()).get("error") is not None)
        return len(lines), failed

    def write(self, data: bytes) -> None:
        """Append a chunk's lines, flushed: in the file for a process kill (not synced for a power loss)."""
        assert self._file is not None
        self._file.write(data)
        self._file.flush()
        self._written += len(data)

    def flush(self) -> bool:
        return False

    def state(self) -> dict[str, Any]:
        return {"bytes": self._written}

    def finish(self) -> None:
        self.close()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
