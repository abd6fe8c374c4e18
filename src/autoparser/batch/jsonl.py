"""JSONL in and out, cheaply: lines travel as bytes, each worker decodes and encodes its own chunk.

The reading process only cuts the input into chunks of whole lines (``JsonlReader``: bytes, no JSON), so with
several workers it stays light; a worker turns its chunk into rows (:func:`read_rows`), and their outcomes back into
one block of output lines (:func:`encode_rows`), which the writer appends as it is. A blank line is no row: it has
no output line. A line that is not a JSON object is a row whose ``error`` says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from .formats import BatchError
from .parser import Outcome

__all__ = ["JsonlReader", "JsonlWriter", "count_rows", "encode_rows", "is_row", "read_rows", "skip_rows"]

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


class JsonlReader:
    """The input as chunks of about ``chunk_rows`` rows (blocks of whole lines, as bytes: the lines are counted,
    not split, here), from byte ``offset`` on. Each chunk comes with the byte offset just past it, for the
    checkpoint."""

    def __init__(self, path: str | Path, chunk_rows: int, offset: int = 0) -> None:
        self.path = Path(path)
        self.chunk_rows = max(chunk_rows, 1)
        self.offset = offset

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        with open(self.path, "rb", buffering=0) as f:
            position = f.seek(self.offset)
            size, carry = 64 * self.chunk_rows, b""  # bytes per block, fitted to the lines' length as they come
            while True:
                block = f.read(size)
                if not block:
                    break
                block = carry + block
                cut = block.rfind(b"\n") + 1
                if not cut:  # a line longer than the block: read on
                    carry = block
                    continue
                carry = block[cut:]
                position += cut
                lines = block.count(b"\n", 0, cut)
                size = max(4096, min(size * 4, cut * self.chunk_rows // lines))
                yield block[:cut], position
            if carry:
                yield carry, position + len(carry)


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
    except UnicodeEncodeError:
        return ("\n".join(map(_encode_ascii, out)) + "\n").encode()


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
