"""Prometheus metrics at ``GET /metrics``, kept with ``prometheus_client`` (a registry per app).

What is counted: requests by endpoint and status, errors by endpoint and kind (the OpenAI error ``type``), request
latency and time to first token (histograms), prompt and completion tokens as the upstream counted them, requests
in flight, parse warnings by kind, and the parser and grammar caches' sizes. :mod:`.access` times every request;
the chat handler reports what only it knows (usage, warnings, an error event mid-stream) through the request's
:class:`Observation`, found in the ASGI scope (:func:`observation`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from ..message import ParseWarning
from .chunks import Usage

__all__ = ["ENDPOINTS", "Metrics", "Observation", "metrics_endpoint", "observation", "warning_kind"]

# The endpoints counted by name; any other path is "other" (a label per path sent would grow without bound)
ENDPOINTS = ("/v1/chat/completions", "/v1/models", "/health", "/health/live", "/metrics")
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


class _Caches(Collector):
    """The entries in the parser and grammar caches (``build.py``), read at each scrape."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        from .. import build

        family = GaugeMetricFamily(
            "autoparser_cache_entries", "Entries in the parser and grammar caches", labels=["cache"]
        )
        for name, cached in (("parser", build.build_parser), ("grammar", build.build_grammar)):
            info = getattr(cached, "cache_info", None)
            if info is not None:
                family.add_metric([name], info().currsize)
        yield family


class Metrics:
    """One app's metrics, in a registry of its own (several apps in one process do not collide)."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "autoparser_requests",
            "Requests answered, by endpoint and HTTP status",
            ["endpoint", "status"],
            registry=registry,
        )
        self.errors = Counter(
            "autoparser_errors",
            "Error replies and mid-stream error events, by endpoint and kind (OpenAI error type)",
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
        self.in_flight = Gauge("autoparser_requests_in_flight", "Requests being answered", registry=registry)
        self.warnings = Counter(
            "autoparser_parse_warnings",
            "Warnings about replies (autoparser_warnings), by kind",
            ["kind"],
            registry=registry,
        )
        registry.register(_Caches())

    def error(self, endpoint: str, kind: str) -> None:
        self.errors.labels(endpoint, _KIND.sub("_", kind.lower())[:40] or "unknown").inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


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
