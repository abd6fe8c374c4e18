"""Access-tracking wrappers: find out which input fields a template actually reads.

Capability probing needs to know, for example, whether a template reads ``tools[0].function.name`` or
iterates over a message's ``content``. Rendering with :func:`track` wrappers records every key read
(``messages[0].content``), iteration (``messages[0].content:iter``) and index access as a path in an
:class:`AccessLog`. The wrappers are ``dict``/``list`` subclasses holding the original data, so rendering
(including ``tojson`` and ``repr``) produces exactly the same text as with plain data.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["AccessLog", "TrackedDict", "TrackedList", "track"]


class AccessLog:
    """The set of paths read during a render."""

    __slots__ = ("paths",)

    def __init__(self) -> None:
        self.paths: set[str] = set()

    def record(self, path: str) -> None:
        self.paths.add(path)

    def used(self, path: str) -> bool:
        """Whether ``path`` (e.g. ``tools[0].function.name``) or anything below it was read.

        A value converted to text as a whole (``{{ tool }}``, ``tool | tojson``) counts as reading everything
        inside it, so an ancestor marked ``:all`` makes ``path`` used too.
        """
        if any(p == path or p.startswith((path + ".", path + "[", path + ":")) for p in self.paths):
            return True
        return any(p.endswith(":all") and path.startswith(p[: -len(":all")]) for p in self.paths)

    def __repr__(self) -> str:
        return f"AccessLog({sorted(self.paths)})"


def track(value: Any, path: str, log: AccessLog) -> Any:
    """Wrap dicts and lists (recursively, lazily) so reads below ``path`` are recorded in ``log``."""
    if isinstance(value, dict) and not isinstance(value, TrackedDict):
        return TrackedDict(value, path, log)
    if isinstance(value, list) and not isinstance(value, TrackedList):
        return TrackedList(value, path, log)
    return value


class TrackedDict(dict):  # type: ignore[type-arg]
    """A dict that records key reads."""

    __slots__ = ("_log", "_path")

    def __init__(self, data: dict[Any, Any], path: str, log: AccessLog) -> None:
        super().__init__(data)
        self._path = path
        self._log = log

    def _child(self, key: Any) -> str:
        return f"{self._path}.{key}"

    def __getitem__(self, key: Any) -> Any:
        value = super().__getitem__(key)
        self._log.record(self._child(key))
        return track(value, self._child(key), self._log)

    def get(self, key: Any, default: Any = None) -> Any:
        if key in self:
            return self[key]
        return default

    def items(self) -> Any:
        self._log.record(f"{self._path}:items")
        return [(k, self[k]) for k in dict.keys(self)]

    def values(self) -> Any:
        self._log.record(f"{self._path}:items")
        return [self[k] for k in dict.keys(self)]

    def __iter__(self) -> Iterator[Any]:
        self._log.record(f"{self._path}:iter")
        return super().__iter__()

    def __repr__(self) -> str:
        self._log.record(f"{self._path}:all")
        return super().__repr__()

    __str__ = __repr__


class TrackedList(list):  # type: ignore[type-arg]
    """A list that records index access and iteration."""

    __slots__ = ("_log", "_path")

    def __init__(self, data: list[Any], path: str, log: AccessLog) -> None:
        super().__init__(data)
        self._path = path
        self._log = log

    def __getitem__(self, index: Any) -> Any:
        value = super().__getitem__(index)
        if isinstance(index, slice):
            self._log.record(f"{self._path}:slice")
            start = index.indices(len(self))[0]
            step = index.step or 1
            return [track(v, f"{self._path}[{start + i * step}]", self._log) for i, v in enumerate(value)]
        position = index if index >= 0 else len(self) + index
        self._log.record(f"{self._path}[{position}]")
        return track(value, f"{self._path}[{position}]", self._log)

    def __iter__(self) -> Iterator[Any]:
        self._log.record(f"{self._path}:iter")
        for i, value in enumerate(super().__iter__()):
            yield track(value, f"{self._path}[{i}]", self._log)

    def __repr__(self) -> str:
        self._log.record(f"{self._path}:all")
        return super().__repr__()

    __str__ = __repr__
