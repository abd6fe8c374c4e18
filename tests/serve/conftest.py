"""Fixtures: the upstream double and the autoparser server, both on loopback ports for the whole session.

The server under test is a small ASGI dispatcher in front of one ``autoparser.serve`` app per (upstream kind,
grammar field, template), made on first use: ``{server}/{kind}/{grammar_field}/{template}/v1/...``. Every app is
the real one (``create_app``), driven over real HTTP.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx2
import openai
import pytest

from autoparser import ChatTemplate
from autoparser.serve import ServeConfig, create_app

from .double import LoopbackServer, UpstreamDouble


class Dispatcher:
    """Routes ``/{kind}/{grammar_field}/{template}/...`` to that template's app (made on first use)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.apps: dict[tuple[str, str, str], Any] = {}
        self.options: dict[str, dict[str, Any]] = {}  # template -> extra ServeConfig fields
        self._lock = threading.Lock()
        self._client: httpx2.AsyncClient | None = None

    def app(self, kind: str, grammar_field: str, template: str) -> Any:
        with self._lock:
            key = (kind, grammar_field, template)
            if key not in self.apps:
                if self._client is None:
                    self._client = httpx2.AsyncClient(timeout=httpx2.Timeout(30.0), limits=httpx2.Limits())
                config = ServeConfig(
                    self.upstream,
                    upstream_kind=kind,
                    grammar_field=grammar_field,
                    model_name=template,
                    **self.options.get(template, {}),
                )
                self.apps[key] = create_app(_load(template), config, client=self._client)
            return self.apps[key]

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    if self._client is not None:
                        await self._client.aclose()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        parts = scope["path"].split("/", 4)  # "", kind, grammar field, template, rest
        if len(parts) < 5:
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b"no such app"})
            return
        _, kind, grammar_field, template, rest = parts
        app = self.app(kind, grammar_field, template)
        await app({**scope, "path": "/" + rest, "raw_path": ("/" + rest).encode()}, receive, send)


def _load(name: str) -> ChatTemplate:
    return ChatTemplate.load(name)


@pytest.fixture(scope="session")
def double() -> Iterator[UpstreamDouble]:
    fake = UpstreamDouble()
    with LoopbackServer(fake.app) as running:
        fake.url = running.url  # type: ignore[attr-defined]
        yield fake


@pytest.fixture(scope="session")
def dispatcher(double: UpstreamDouble) -> Iterator[tuple[Dispatcher, str]]:
    routes = Dispatcher(double.url)  # type: ignore[attr-defined]
    with LoopbackServer(routes) as running:
        yield routes, running.url


@pytest.fixture(scope="session")
def base_url(dispatcher: tuple[Dispatcher, str]) -> Any:
    _, url = dispatcher

    def make(template: str, kind: str = "llama.cpp", grammar_field: str = "none") -> str:
        return f"{url}/{kind}/{grammar_field}/{template}/v1"

    return make


@pytest.fixture(scope="session")
def client(base_url: Any) -> Any:
    """``client(template, kind="llama.cpp", grammar_field="none")``: the real openai client for that app."""
    made: dict[str, openai.OpenAI] = {}

    def make(template: str, kind: str = "llama.cpp", grammar_field: str = "none") -> openai.OpenAI:
        url = base_url(template, kind, grammar_field)
        if url not in made:
            made[url] = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=60)
        return made[url]

    return make
