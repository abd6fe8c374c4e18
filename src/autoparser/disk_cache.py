"""A per-user cache on disk of the work done once per template source, shared by every process on the machine.

Compiling a chat template with Jinja and analysing it take 20–40 ms, and every new process pays them again for each
template it loads: a server's restart, each worker of ``autoparser batch --workers N`` or of a Ray or ``datasets``
pipeline, every ``autoparser`` command. What they compute depends on the template's text alone, so it is kept here,
the way Python keeps compiled modules in ``__pycache__``: Jinja's compiled code for the template (``marshal``), what
the compile reads from its syntax tree, its analysis and its request profile (``pickle``). A template any process
has seen before then costs its parsers and its first rendering only (see docs/parsing.md, "Cold start").

Keys and validity. An entry is found by a hash of what the work read (the template source, and the BOS/EOS strings
where the renders use them), in a folder named for everything else the result depends on: the size and modification
time of each of autoparser's modules (another release, or an edited checkout, never reads what other code wrote),
Jinja's version, the Python implementation and the pickle protocol. Folders of other code versions are removed
while more than :data:`KEEP_VERSIONS` exist, and a folder keeps at most :data:`MAX_ENTRIES` files (the oldest go
first).

Trust. Loading a pickle or a code object runs code, so the cache is used only where nobody else can write: its
folder and the folder of this code version must belong to this user (or to root: a cache warmed in an image's build
step) and be writable by no one else (as ssh treats its keys); otherwise nothing is read or written. A file that
cannot be read back (cut short, from a crashed writer, tampered with) counts as missing and is written again; a write
goes to a temporary file renamed into place, so parallel workers never see half a file; a write that fails (a
read-only home, a full disk) costs the time and nothing else.

Where: ``$AUTOPARSER_CACHE_DIR``, else ``$XDG_CACHE_HOME/autoparser``, else ``~/.cache/autoparser``.
``AUTOPARSER_CACHE_DIR=off`` (or empty) turns it off; the test suite runs with it off, so that every test computes
what it checks (tests/test_disk_cache.py tests the cache itself). ``autoparser cache`` says where it is and what it
holds (or why it is not used), ``--clear`` empties it, ``--warm TEMPLATE...`` fills it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import shutil
import stat
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "KEEP_VERSIONS",
    "MAX_ENTRIES",
    "DiskCacheState",
    "cache_folder",
    "clear",
    "digest",
    "load",
    "remembered",
    "save",
    "state",
]

ENV = "AUTOPARSER_CACHE_DIR"
OFF = frozenset({"", "off", "0", "false", "no", "none"})
KEEP_VERSIONS = 4
MAX_ENTRIES = 4096  # files per version folder (1 to 100 KB each): three kinds for over 1,000 templates
_PACKAGE = Path(__file__).resolve().parent
_lock = threading.Lock()
_folders: dict[str, tuple[Path | None, Path | None, str]] = {}  # the setting's value -> what _open() made of it
_code_version: str | None = None
T = TypeVar("T")


def digest(*parts: str) -> str:
    """The key of an entry: a hash of the texts the work read (unambiguous: each part's length goes in too)."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()[:40]


def load(kind: str, key: str) -> Any | None:
    """The value saved under ``kind``/``key``, or None (no cache, no entry, or an entry that does not read back)."""
    folder = cache_folder()
    if folder is None:
        return None
    try:
        with open(folder / f"{key}.{kind}", "rb") as file:
            return pickle.load(file)  # our own files, in a folder only this user can write
    except Exception:  # missing, cut short or unreadable: recomputed (and written again)
        return None


def remembered(kind: str, key: str, expected: type[T], compute: Callable[[], T]) -> T:
    """The value saved under ``kind``/``key`` if it is an ``expected``, else ``compute()``, saved for the next
    process."""
    saved = load(kind, key)
    if isinstance(saved, expected):
        return saved
    value = compute()
    save(kind, key, value)
    return value


def save(kind: str, key: str, value: Any) -> None:
    """Keep ``value`` under ``kind``/``key`` (nothing happens where the cache is off or cannot be written)."""
    folder = cache_folder()
    if folder is None:
        return
    try:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(data)
            os.replace(temporary, folder / f"{key}.{kind}")
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        _bound(folder)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        return


@dataclass(frozen=True)
class DiskCacheState:
    """Where the cache is and what it holds (``autoparser cache``), or why it is not used."""

    root: Path | None  # the folder that holds one folder per code version
    folder: Path | None  # this code version's, None where the cache is not used
    files: int  # in every code version's folder
    bytes: int
    reason: str  # why the cache is not used ("" where it is)


def cache_folder() -> Path | None:
    """The folder this process's code version reads and writes, or None where the cache is off or not safe."""
    return _opened()[0]


def _opened() -> tuple[Path | None, Path | None, str]:
    """(this version's folder or None, the root, why the folder is None) for the current setting, decided once."""
    setting = os.environ.get(ENV)
    key = "\0default" if setting is None else setting
    try:
        return _folders[key]
    except KeyError:
        pass
    with _lock:
        if key not in _folders:
            _folders[key] = _open(setting)
        return _folders[key]


def _open(setting: str | None) -> tuple[Path | None, Path | None, str]:
    if setting is not None and setting.strip().lower() in OFF:
        return None, None, f"off: {ENV}={setting!r}"
    root = Path(setting).expanduser() if setting is not None else _default_root()
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _private(root):
            return None, root, f"not used: {root} is not a folder of this user's that only this user can write"
        folder = root / _version()
        folder.mkdir(mode=0o700, exist_ok=True)
        if not _private(folder):
            return None, root, f"not used: {folder} is not a folder of this user's that only this user can write"
        _drop_old_versions(root, folder)
    except OSError as err:
        return None, root, f"not used: {err}"
    return folder, root, ""


def state() -> DiskCacheState:
    """Where the cache is, how many files and bytes it holds, or why it is not used."""
    folder, root, reason = _opened()
    files = size = 0
    if folder is not None and root is not None:
        for version in _versions(root):
            with contextlib.suppress(OSError), os.scandir(version) as entries:
                for entry in entries:
                    with contextlib.suppress(OSError):
                        size += entry.stat(follow_symlinks=False).st_size
                        files += 1
    return DiskCacheState(root, folder, files, size, reason)


def clear() -> int:
    """Remove every entry of every code version (the folders stay); returns the number of files removed."""
    folder, root, _ = _opened()
    removed = 0
    if folder is None or root is None:
        return 0
    for version in _versions(root):
        with contextlib.suppress(OSError), os.scandir(version) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
                    removed += 1
    return removed


def _versions(root: Path) -> list[Path]:
    """The code versions' folders under ``root`` (named by :func:`_version`)."""
    return [entry for entry in root.iterdir() if entry.name.startswith("v-") and entry.is_dir()]


def _default_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "autoparser"


def _private(path: Path) -> bool:
    """Whether ``path`` is a real folder, of a trusted owner (:func:`_trusted`), that no one else can write."""
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return False
    return _trusted(info.st_uid)


def _trusted(owner: int) -> bool:
    """This user, or root: a cache warmed by root in an image's build step is read by the user that serves (its
    writes then fail, harmlessly), as Python reads ``__pycache__`` in a root-owned site-packages."""
    getuid = getattr(os, "getuid", None)
    return getuid is None or owner in (getuid(), 0)


def _version() -> str:
    """The name of this code version's folder (see the module docstring)."""
    global _code_version
    if _code_version is None:
        import jinja2

        stats = [jinja2.__version__, sys.implementation.cache_tag, str(pickle.HIGHEST_PROTOCOL)]
        for folder, children, files in os.walk(_PACKAGE):
            children[:] = sorted(child for child in children if child != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    info = os.stat(path)
                    stats.append(f"{os.path.relpath(path, _PACKAGE)}:{info.st_size}:{info.st_mtime_ns}")
        _code_version = f"v-{digest(*stats)[:20]}"
    return _code_version


def _drop_old_versions(root: Path, keep: Path) -> None:
    """Remove the oldest other code versions' folders while more than :data:`KEEP_VERSIONS` exist."""
    versions = [entry for entry in _versions(root) if entry != keep]
    if len(versions) < KEEP_VERSIONS:
        return
    versions.sort(key=lambda entry: entry.stat().st_mtime)
    for old in versions[: len(versions) - KEEP_VERSIONS + 1]:
        shutil.rmtree(old, ignore_errors=True)


def _bound(folder: Path) -> None:
    """Past :data:`MAX_ENTRIES` files, remove the oldest tenth (checked at a write: writes are rare)."""
    with os.scandir(folder) as entries:
        files = [entry for entry in entries if entry.is_file(follow_symlinks=False)]
    if len(files) <= MAX_ENTRIES:
        return
    files.sort(key=lambda entry: entry.stat(follow_symlinks=False).st_mtime)
    for entry in files[: len(files) - MAX_ENTRIES + MAX_ENTRIES // 10]:
        with contextlib.suppress(OSError):
            os.unlink(entry.path)
