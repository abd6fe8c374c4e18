"""``GET /health`` (readiness: 200 only while the upstream answers, 503 with the reason otherwise) and
``GET /health/live`` (liveness: 200 while the process serves).

The upstream is asked what its own kind answers cheaply: llama.cpp's ``GET /health`` (503 while it loads a model),
an OpenAI-style engine's ``GET /v1/models`` (vLLM, SGLang and providers all have it). The answer is kept for a
second and concurrent probes share one upstream request, so that a flood of ``/health`` (open without the API key)
never becomes a flood upstream.
"""

from __future__ import annotations

import time

import anyio
import httpx2
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..upstream import Upstream

__all__ = ["HealthProbe", "health", "live"]


class HealthProbe:
    """Whether the upstream answers: :meth:`reason` is None when it does, else why not."""

    def __init__(self, upstream: Upstream, *, timeout: float = 5.0, ttl: float = 1.0) -> None:
        self.upstream = upstream
        self.timeout = timeout
        self.ttl = ttl
        self._checked = -float("inf")
        self._reason: str | None = None
        self._lock = anyio.Lock()

    @property
    def url(self) -> str:
        up = self.upstream
        return up.url + ("/health" if up.kind == "llama.cpp" else "/v1/models")

    async def reason(self) -> str | None:
        async with self._lock:
            if time.monotonic() - self._checked >= self.ttl:
                self._reason = await self._probe()
                self._checked = time.monotonic()
            return self._reason

    async def _probe(self) -> str | None:
        up = self.upstream
        try:
            response = await up.client.get(self.url, headers=up.headers, timeout=self.timeout)
            await response.aread()
        except httpx2.HTTPError as err:
            return f"upstream {self.url} is unreachable: {type(err).__name__}"
        if response.status_code >= 400:
            return f"upstream {self.url} answered {response.status_code}"
        return None


async def health(request: Request) -> Response:
    server = request.app.state.autoparser
    probe: HealthProbe = request.app.state.health
    reason = await probe.reason()
    body = {"status": "ok" if reason is None else "unavailable", "model": server.model, "upstream": probe.url}
    if reason is not None:
        body["reason"] = reason
    return JSONResponse(body, status_code=200 if reason is None else 503)


async def live(request: Request) -> Response:
    return JSONResponse({"status": "ok"})
