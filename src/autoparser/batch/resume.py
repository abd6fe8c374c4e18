"""The checkpoint that lets an interrupted batch resume: no row written twice, none lost.

Output is written in input order, so "how far" is one number: the rows committed. Beside the output,
``OUTPUT.resume.json`` records them after each write that reached the file (a JSONL chunk, a Parquet part), with
where the input stands after them (a byte offset in a JSONL file, a row count in a Parquet file), what the output
holds (JSONL: its length; Parquet: its parts) and the failed rows so far. It is replaced atomically (written beside,
then renamed), so a kill leaves either the old or the new one.

A kill can fall between a write and its checkpoint: the output then holds rows the checkpoint does not count. A
resume keeps them (the writers' ``recover``: whole JSONL lines, whole Parquet parts), cuts what is unfinished and
reads on from the input row after the last one kept. The checkpoint also holds a fingerprint of the input file and
of the options: resuming with another input or other options is refused, not mixed into the same output. The file is
removed when the batch completes.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .formats import BatchError

__all__ = ["Checkpoint", "checkpoint_path", "fingerprint"]

_VERSION = 1


def checkpoint_path(output: str | Path) -> Path:
    output = Path(output)
    return output.with_name(output.name + ".resume.json")


def fingerprint(input_path: str | Path, options: Any) -> dict[str, Any]:
    """What a resumed run must share with the interrupted one: the input file (path, size, modification time)
    and a digest of the options (JSON of ``options``)."""
    stat = Path(input_path).stat()
    digest = hashlib.sha256(json.dumps(options, sort_keys=True, default=str).encode()).hexdigest()
    return {
        "input": str(Path(input_path).resolve()),
        "input_size": stat.st_size,
        "input_mtime_ns": stat.st_mtime_ns,
        "options": digest,
    }


@dataclass
class Checkpoint:
    """How far a batch got: ``rows`` committed (``failed`` of them with an error), the input ``position`` after
    them, the writer's ``output`` state; ``identity`` is the :func:`fingerprint`."""

    identity: dict[str, Any]
    rows: int = 0
    failed: int = 0
    position: int = 0
    output: dict[str, Any] = field(default_factory=dict)
    version: int = _VERSION

    @classmethod
    def load(cls, path: Path, identity: dict[str, Any]) -> Checkpoint:
        """The checkpoint at ``path``; a :class:`BatchError` when it is unreadable or another run's."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            found = cls(**data)
        except (OSError, ValueError, TypeError) as err:
            raise BatchError(f"cannot resume from {path}: {err}") from None
        if found.version != _VERSION:
            raise BatchError(f"cannot resume from {path}: written by another version of autoparser")
        differs = [key for key in identity if found.identity.get(key) != identity[key]]
        if differs:
            what = "the options" if differs == ["options"] else "the input file"
            raise BatchError(
                f"cannot resume from {path}: {what} changed since the interrupted run ({', '.join(differs)}); "
                "run without --resume to start over"
            )
        return found

    def save(self, path: Path) -> None:
        """Write it atomically: beside, then renamed over the old one."""
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text(json.dumps(asdict(self)), encoding="utf-8")
        os.replace(temporary, path)
