"""The file formats a batch reads and writes (JSONL, Parquet), told by the file's suffix, and pyarrow on demand.

Parquet needs pyarrow, the ``batch`` extra; JSONL needs nothing. pyarrow is imported only when a Parquet file or an
Arrow table is met, so ``import autoparser.batch`` works without it and a JSONL batch never loads it.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Literal

from ..errors import AutoparserError

__all__ = ["BATCH_INSTALL", "BatchError", "Format", "format_of", "pyarrow"]

Format = Literal["jsonl", "parquet"]
BATCH_INSTALL = "pip install 'autoparser[batch]'"
_SUFFIXES: dict[str, Format] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}


class BatchError(AutoparserError):
    """A batch cannot run as asked (an unknown file format, Parquet without pyarrow, a resume that does not
    match its checkpoint). Per-row problems are no ``BatchError``: they become the row's ``error``."""


def format_of(path: str | Path, given: str | None = None) -> Format:
    """``given`` if set, else the format the file's suffix names (``.jsonl``/``.ndjson``/``.json``, ``.parquet``/
    ``.pq``; a trailing ``.gz`` is not supported)."""
    if given is not None:
        if given not in ("jsonl", "parquet"):
            raise BatchError(f"unknown format {given!r}: jsonl or parquet")
        return given  # type: ignore[return-value]
    suffix = Path(path).suffix.lower()
    found = _SUFFIXES.get(suffix)
    if found is None:
        raise BatchError(
            f"{path}: cannot tell the format from {suffix or 'no suffix'!r}: name a .jsonl or .parquet "
            "file, or say which with --input-format / --output-format"
        )
    return found


def pyarrow() -> tuple[ModuleType, ModuleType]:
    """``(pyarrow, pyarrow.parquet)``, or a :class:`BatchError` naming the extra that installs them."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise BatchError(f"Parquet and Arrow tables need pyarrow: {BATCH_INSTALL}") from None
    return pa, pq
