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

from .parser import Outcome

__all__ = ["JsonlReader", "count_rows", "encode_rows", "is_row", "read_rows"]

_decode = json.JSONDecoder().decode
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
    """The input as chunks of ``chunk_rows`` rows (whole lines, as bytes), from byte ``offset`` on, after skipping
    ``skip`` rows there. Each chunk comes with the byte offset just past it, for the checkpoint."""

    def __init__(self, path: str | Path, chunk_rows: int, offset: int = 0, skip: int = 0) -> None:
        self.path = Path(path)
        self.chunk_rows = max(chunk_rows, 1)
        self.offset = offset
        self.skip = skip

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            position = self.offset + _skip_rows(f, self.skip)
            lines: list[bytes] = []
            rows = 0
            for line in f:
                lines.append(line)
                position += len(line)
                if is_row(line):
                    rows += 1
                    if rows >= self.chunk_rows:
                        yield b"".join(lines), position
                        lines, rows = [], 0
            if lines:
                yield b"".join(lines), position


def _skip_rows(f: BinaryIO, rows: int) -> int:
    """Read past ``rows`` rows of ``f``; the bytes read."""
    read = 0
    while rows > 0:
        line = f.readline()
        if not line:
            break
        read += len(line)
        rows -= is_row(line)
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
        row = _decode(line)
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

    def start(self) -> None:
        """A fresh output: the file emptied."""
        self._file = open(self.path, "wb")  # noqa: SIM115 (closed by close())

    def recover(self, offset: int) -> tuple[int, int]:
        """Resume after ``offset`` checkpointed bytes: keep the whole lines written since (a kill between a write
        and its checkpoint), cut a line left unfinished; the rows and failed rows of the lines kept beyond
        ``offset``."""
        self._file = open(self.path, "r+b")  # noqa: SIM115 (closed by close())
        size = self._file.seek(0, 2)
        if size < offset:
            raise ValueError(f"{self.path} is shorter ({size} bytes) than its checkpoint says ({offset})")
        self._file.seek(offset)
        tail = self._file.read()
        whole = tail[: tail.rfind(b"\n") + 1]
        self._file.seek(offset + len(whole))
        self._file.truncate()
        lines = whole.split(b"\n")[:-1]
        failed = sum(1 for line in lines if _decode(line.decode()).get("error") is not None)
        return len(lines), failed

    def write(self, data: bytes) -> bool:
        """Append a chunk's lines; True: they are in the file (for a process kill; not synced for a power loss)."""
        assert self._file is not None
        self._file.write(data)
        self._file.flush()
        return True

    def flush(self) -> bool:
        return False

    def state(self) -> dict[str, Any]:
        assert self._file is not None
        return {"bytes": self._file.tell()}

    def finish(self) -> None:
        self.close()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
