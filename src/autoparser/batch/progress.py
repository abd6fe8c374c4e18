"""A progress bar with the rate and the time left, on a terminal only (rich's): quiet when stderr is a file or a
pipe, so logs and CI output stay clean."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any

__all__ = ["BatchProgress"]


class BatchProgress:
    """Rows done out of ``total`` (None: unknown), starting from ``done`` (a resumed run). ``enabled``: None shows
    it when stderr is a terminal."""

    def __init__(self, total: int | None, done: int = 0, enabled: bool | None = None) -> None:
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.total = total
        self.done = done
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> BatchProgress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("parsing"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"),  # rich's own speed estimate, in rows
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=Console(stderr=True),
            )
            self._bar.start()
            self._task = self._bar.add_task("parse", total=self.total, completed=self.done, rate="")
        return self

    def advance(self, rows: int) -> None:
        self.done += rows
        if self._bar is not None:
            self._bar.update(self._task, advance=rows)
            speed = self._bar.tasks[0].speed
            if speed:
                self._bar.update(self._task, rate=f"{speed:,.0f} rows/s")

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._bar is not None:
            self._bar.stop()
