"""Full garbage collections between replies (serve/collector.py): ``serve()`` turns Python's own off, and the app
runs one when the server is idle, or once ``ceiling`` seconds passed on a server that never is."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys

import pytest

from autoparser.serve.ops import collector


def test_a_full_collection_waits_for_an_idle_server(monkeypatch: pytest.MonkeyPatch) -> None:
    busy, now = [True], [100.0]
    runs = collector.FullCollections(lambda: busy[0], ceiling=300.0, clock=lambda: now[0])
    monkeypatch.setattr(gc, "get_count", lambda: (5, 3, 2))  # young collections happened since the last full one
    assert not runs.due()  # a reply is being made
    busy[0] = False
    assert runs.due()
    busy[0], now[0] = True, 400.0  # busy all along, but the last full collection is `ceiling` old
    assert runs.due()
    collected: list[int] = []
    monkeypatch.setattr(gc, "collect", lambda *args: collected.append(1) or 0)
    assert runs.collect() >= 0 and collected and runs.last == 400.0
    assert not runs.due()  # busy, and just collected
    monkeypatch.setattr(gc, "get_count", lambda: (5, 3, 0))
    busy[0] = False
    assert not runs.due()  # idle, but nothing new reached the old generation


def test_install_freezes_what_exists_and_turns_off_automatic_full_collections() -> None:
    """In a process of its own: install() changes process-wide settings."""
    code = (
        "import gc; from autoparser.serve.ops import collector; before = gc.get_threshold(); collector.install(); "
        "after = gc.get_threshold(); "
        "print(collector.installed(), gc.get_freeze_count() > 1000, after[:2] == before[:2], after[2] >= 1 << 30)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "True", "True", "True"]
    assert not collector.installed()  # this process: create_app() alone leaves the host's collector alone


def test_the_app_runs_full_collections_when_serve_installed_them(monkeypatch: pytest.MonkeyPatch) -> None:
    from autoparser import ChatTemplate
    from autoparser.serve import ServeConfig, create_app

    started: list[collector.FullCollections] = []

    async def run(self: collector.FullCollections) -> None:
        started.append(self)

    monkeypatch.setattr(collector, "_installed", [True])
    monkeypatch.setattr(collector.FullCollections, "run", run)
    app = create_app(ChatTemplate.load("Qwen3.5-4B"), ServeConfig("http://127.0.0.1:9"))

    async def lifespan() -> None:
        async with app.router.lifespan_context(app):
            pass

    asyncio.run(lifespan())
    assert len(started) == 1 and started[0].busy() is False  # nothing being answered
