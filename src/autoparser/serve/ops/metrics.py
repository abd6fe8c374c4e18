"""Prometheus metrics at ``GET /metrics``, kept with ``prometheus_client`` (a registry per app).

Several worker processes (``autoparser serve --workers N``, or any pre-forking host) use ``prometheus_client``'s
multiprocess mode: where ``PROMETHEUS_MULTIPROC_DIR`` was set before ``prometheus_client`` was imported, every
process writes its figures to files there and ``/metrics`` reads all of them (:func:`multiprocess`): counters and
histograms summed across the processes, requests in flight summed over the live ones, and the cache sizes per
process (a ``pid`` label: each process has its own caches), as each last saw them at the end of a request.

What is counted: requests by endpoint and status, errors by endpoint and kind (the error's ``type``, OpenAI's or
Anthropic's), request latency and time to first token (histograms), prompt and completion tokens as the upstream
counted them, requests in flight, parse warnings by kind, and the parser and grammar caches' sizes. :mod:`.access`
times every request; the chat handler reports what only it knows (usage, warnings, an error event mid-stream)
through the request's :class:`Observation`, found in the ASGI scope (:func:`observation`).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    values,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from ...message import ParseWarning
from ..chunks import Usage

__all__ = [
    "ENDPOINTS",
    "Metrics",
    "Observation",
    "metrics_endpoint",
    "multiprocess",
    "observation",
    "warning_kind",
]

# The endpoints counted by name; any other path is "other" (a label per path sent would grow without bound)
ENDPOINTS = (
    "/v1/chat/completions",
    "/v1/responses",
    "/v1/messages",
    "/v1/messages/count_tokens",
    "/v1/models",
    "/health",
    "/health/live",
    "/metrics",
)
_SCOPE_KEY = "autoparser.observation"
_LATENCY = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
_FIRST_TOKEN = (0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
# Parse warnings by what they say (reading/mapper.py, reading/leftovers.py, reading/streaming.py), read with the
# quoted text taken out: a bounded set of kinds, "other" for a message none of these match
_WARNING_KINDS = tuple(
    (kind, re.compile(pattern))
    for kind, pattern in (
        ("unparsed_output", r"could not be parsed"),
        ("no_tool_call", r"has no tool call"),
        ("text_after_calls", r"text after the tool calls"),
        ("undeclared_tool", r"is not declared in the request"),
        ("arguments", r"^the arguments of tool call"),
        ("cut_off_call", r"output ends inside tool call|is malformed here|after where it broke"),
        ("call_markup", r"read without its|unknown member|has no arguments member|has a second id|in tool call"),
        ("invalid_call", r"did not start a valid tool call|tool call without a known name"),
        ("dropped_text", r"left out of the message"),
        ("unrecognised_markup", r"unrecognised markup"),
        ("reasoning_unclosed", r"reasoning block was not closed"),
        ("reasoning_unopened", r"closed a reasoning block never opened"),
        ("leftover_reasoning_marker", r"^reasoning marker "),
        ("leftover_call_marker", r"^call marker |written in call position"),
    )
)
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_KIND = re.compile(r"[^a-z0-9_]")


def warning_kind(message: str) -> str:
    """The kind of a parse warning, from its message (a label value of a bounded set)."""
    message = _QUOTED.sub("_", message)
    for kind, pattern in _WARNING_KINDS:
        if pattern.search(message):
            return kind
    return "other"


def endpoint_of(path: str) -> str:
    return path if path in ENDPOINTS else "other"


def multiprocess() -> bool:
    """Whether ``prometheus_client`` keeps its figures in ``PROMETHEUS_MULTIPROC_DIR``, shared by processes (it
    decides once, when first imported)."""
    return bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR")) and values.ValueClass is not values.MutexValue


_CACHES_HELP = "Entries in the parser and grammar caches"


def _cache_sizes() -> Iterator[tuple[str, int]]:
    """(cache, entries) of the parser and grammar caches (``build.py``)."""
    from ... import build

    for name, cached in (("parser", build.build_parser), ("grammar", build.build_grammar)):
        info = getattr(cached, "cache_info", None)
        if info is not None:
            yield name, info().currsize


class _Caches(Collector):
    """The entries in the parser and grammar caches, read at each scrape."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily("autoparser_cache_entries", _CACHES_HELP, labels=["cache"])
        for name, size in _cache_sizes():
            family.add_metric([name], size)
        yield family


class Metrics:
    """One app's metrics, in a registry of its own (several apps in one process do not collide); in multiprocess
    mode (:func:`multiprocess`), those of every process writing to ``PROMETHEUS_MULTIPROC_DIR``."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry(auto_describe=True)
        self.shared = multiprocess()
        self.requests = Counter(
            "autoparser_requests",
            "Requests answered, by endpoint and HTTP status",
            ["endpoint", "status"],
            registry=registry,
        )
        self.errors = Counter(
            "autoparser_errors",
            "Error replies and mid-stream error events, by endpoint and kind (the error type)",
            ["endpoint", "kind"],
            registry=registry,
        )
        self.latency = Histogram(
            "autoparser_request_duration_seconds",
            "Time from request to the reply's last byte, by endpoint",
            ["endpoint"],
            buckets=_LATENCY,
            registry=registry,
        )
        self.first_token = Histogram(
            "autoparser_time_to_first_token_seconds",
            "Streamed chat completions: time from request to the first event after the role chunk",
            buckets=_FIRST_TOKEN,
            registry=registry,
        )
        self.prompt_tokens = Counter(
            "autoparser_prompt_tokens", "Prompt tokens, as the upstream counted them", registry=registry
        )
        self.completion_tokens = Counter(
            "autoparser_completion_tokens", "Completion tokens, as the upstream counted them", registry=registry
        )
        self.in_flight = Gauge(
            "autoparser_requests_in_flight", "Requests being answered", multiprocess_mode="livesum", registry=registry
        )
        self.warnings = Counter(
            "autoparser_parse_warnings",
            "Warnings about replies (autoparser_warnings), by kind",
            ["kind"],
            registry=registry,
        )
        self.exposed = registry
        self.caches: Gauge | None = None
        if self.shared:
            from prometheus_client import multiprocess as shared

            # A scrape reaches one process: each writes its caches' sizes after each request, read with its pid
            self.caches = Gauge(
                "autoparser_cache_entries", _CACHES_HELP, ["cache"], multiprocess_mode="liveall", registry=registry
            )
            self.exposed = CollectorRegistry()
            shared.MultiProcessCollector(self.exposed)
        else:
            registry.register(_Caches())

    def request_done(self) -> None:
        """A request ended (multiprocess mode: this process's cache sizes are written for the next scrape)."""
        if self.caches is not None:
            for name, size in _cache_sizes():
                self.caches.labels(name).set(size)

    def error(self, endpoint: str, kind: str) -> None:
        self.errors.labels(endpoint, _KIND.sub("_", kind.lower())[:40] or "unknown").inc()

    def exposition(self) -> bytes:
        self.request_done()  # the scrape itself shows this process's caches as they are
        return generate_latest(self.exposed)


class Observation:
    """One request's figures: when it started, and what the chat handler reports about its reply."""

    __slots__ = ("endpoint", "metrics", "start")

    def __init__(self, metrics: Metrics | None, endpoint: str) -> None:
        self.metrics = metrics
        self.endpoint = endpoint
        self.start = time.perf_counter()

    def reply(
        self, usage: Usage | None, parse_warnings: Iterable[ParseWarning], request_warnings: Iterable[str]
    ) -> None:
        """A chat reply ended: its token counts and its warnings."""
        metrics = self.metrics
        if metrics is None:
            return
        if usage is not None:
            metrics.prompt_tokens.inc(usage.prompt_tokens)
            metrics.completion_tokens.inc(usage.completion_tokens)
        for warning in parse_warnings:
            metrics.warnings.labels(warning_kind(warning.message)).inc()
        for _ in request_warnings:
            metrics.warnings.labels("request_degraded").inc()

    def error(self, kind: str) -> None:
        """An error the status does not show (an error event that ended a stream begun with 200)."""
        if self.metrics is not None:
            self.metrics.error(self.endpoint, kind)


_NOTHING = Observation(None, "other")


def observation(scope: Scope) -> Observation:
    """The request's :class:`Observation` (one that records nothing where no metrics middleware runs)."""
    found = scope.get(_SCOPE_KEY)
    return found if isinstance(found, Observation) else _NOTHING


def observe(scope: Scope, metrics: Metrics) -> Observation:
    """Start observing the request of ``scope``."""
    made = Observation(metrics, endpoint_of(scope.get("path", "")))
    scope[_SCOPE_KEY] = made
    return made


async def metrics_endpoint(request: Request) -> Response:
    metrics: Any = request.app.state.metrics
    return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)
