"""Operations (issue 25, item 6): ``/health`` that reflects the upstream, ``/health/live``, Prometheus ``/metrics``,
and the ``X-Request-Id`` of every reply and access log line.

Each test runs an autoparser app of its own (a fresh metrics registry) on a loopback port, in front of the upstream
double, of an upstream whose health can be switched, or of a port nothing listens on.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from autoparser import ChatTemplate
from autoparser.serve.ops.metrics import warning_kind

from .apps import EchoUpstream, closed_port, serving
from .double import LoopbackServer, Script, UpstreamDouble, tokens

QWEN = "Qwen3.5-4B"


def _ask(key: str, **fields: Any) -> dict[str, Any]:
    return {"model": QWEN, "messages": [{"role": "user", "content": f"Hello [{key}]"}], **fields}


def _samples(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """``/metrics`` read back with Prometheus' own parser: {(sample name, sorted labels): value}."""
    response = httpx2.get(url + "/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    found = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


# --- health ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["llama.cpp", "openai"])
def test_health_is_200_while_the_upstream_answers(kind: str, double: UpstreamDouble) -> None:
    with serving(double.url, upstream_kind=kind) as (url, _):  # type: ignore[attr-defined]
        response = httpx2.get(url + "/health")
    assert response.status_code == 200
    assert response.json()["status"] == "ok" and response.json()["model"] == QWEN


@pytest.mark.parametrize("kind", ["llama.cpp", "openai"])
def test_health_is_503_with_the_reason_when_the_upstream_is_down(kind: str) -> None:
    with serving(f"http://127.0.0.1:{closed_port()}", upstream_kind=kind) as (url, _):
        response = httpx2.get(url + "/health")
        live = httpx2.get(url + "/health/live")
    assert response.status_code == 503
    assert response.json()["status"] == "unavailable" and "unreachable" in response.json()["reason"]
    assert live.status_code == 200 and live.json() == {"status": "ok"}


def test_health_follows_the_upstreams_own_health() -> None:
    fake = EchoUpstream()
    with LoopbackServer(fake.app) as upstream, serving(upstream.url) as (url, app):
        assert httpx2.get(url + "/health").status_code == 200
        fake.healthy = False  # llama.cpp answers 503 while it loads a model
        app.state.health.ttl = 0.0  # the answer is otherwise kept for a second
        answered = httpx2.get(url + "/health")
        assert answered.status_code == 503 and "answered 503" in answered.json()["reason"]
        fake.healthy = True
        assert httpx2.get(url + "/health").status_code == 200


def test_concurrent_health_checks_share_one_upstream_probe() -> None:
    fake = EchoUpstream()
    with LoopbackServer(fake.app) as upstream, serving(upstream.url) as (url, _):
        for _ in range(5):
            assert httpx2.get(url + "/health").status_code == 200
    assert len(fake.authorizations) == 1  # each /health probe is recorded; the rest read the kept answer


# --- metrics -----------------------------------------------------------------------------------------------------

REPLY = ["<think>", "\n", "Let me see.", "\n", "</think>", "\n\n", "Here", " it", " is", "."]


@pytest.fixture(scope="module")
def observed(double: UpstreamDouble) -> Iterator[str]:
    with serving(double.url) as (url, _):  # type: ignore[attr-defined]
        yield url


def test_metrics_count_requests_tokens_and_first_tokens(observed: str, double: UpstreamDouble) -> None:
    double.script("metered", Script(REPLY, prompt_tokens=17))
    client = openai.OpenAI(base_url=observed + "/v1", api_key="unused", max_retries=0, timeout=30)
    client.chat.completions.create(**_ask("metered"))
    list(client.chat.completions.create(**_ask("metered"), stream=True))
    client.models.list()
    found = _samples(observed)
    chat = (("endpoint", "/v1/chat/completions"), ("status", "200"))
    assert found[("autoparser_requests_total", chat)] == 2
    assert found[("autoparser_requests_total", (("endpoint", "/v1/models"), ("status", "200")))] == 1
    assert found[("autoparser_prompt_tokens_total", ())] == 2 * 17
    assert found[("autoparser_completion_tokens_total", ())] == 2 * len(REPLY)
    assert found[("autoparser_time_to_first_token_seconds_count", ())] == 1  # the streamed one
    endpoint = (("endpoint", "/v1/chat/completions"),)
    assert found[("autoparser_request_duration_seconds_count", endpoint)] == 2
    assert found[("autoparser_request_duration_seconds_sum", endpoint)] > 0
    assert found[("autoparser_requests_in_flight", ())] == 1  # the /metrics request itself
    assert ("autoparser_cache_entries", (("cache", "parser"),)) in found


def test_metrics_count_errors_by_kind(observed: str, double: UpstreamDouble) -> None:
    before = _samples(observed)
    double.script("metered-refused", Script(status=503, error="busy"))
    httpx2.post(observed + "/v1/chat/completions", json=_ask("metered-refused"))
    httpx2.post(observed + "/v1/chat/completions", json={"model": QWEN})  # no messages: 400
    httpx2.post(observed + "/v1/chat/completions", content=b"{}", headers={"content-type": "text/plain"})
    httpx2.get(observed + "/no/such/path")
    double.script("metered-broken", Script(["</think>", "\n\n", "Hi", "never"], fail_after=3))
    httpx2.post(observed + "/v1/chat/completions", json=_ask("metered-broken", stream=True))
    found = _samples(observed)

    def added(kind: str, endpoint: str = "/v1/chat/completions") -> float:
        key = ("autoparser_errors_total", (("endpoint", endpoint), ("kind", kind)))
        return found.get(key, 0) - before.get(key, 0)

    assert added("upstream_error") == 2  # the refused request, and the error event that ended the stream
    assert added("invalid_request_error") == 2  # the request without messages, the text/plain body
    assert added("not_found_error", "other") == 1


def test_metrics_count_parse_warnings_by_kind(observed: str, double: UpstreamDouble) -> None:
    before = _samples(observed)
    weather = {
        "type": "function",
        "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {}}}},
    }
    markers = ["<tool_call>", "</tool_call>", "</think>", "<function=", "</function>"]
    text = "</think>\n\n<tool_call>\n<function=get_time>\n</function>\n</tool_call>\ntrailing words"
    double.script("metered-warned", Script(tokens(text, markers)))
    body = _ask("metered-warned", tools=[weather])
    reply = httpx2.post(observed + "/v1/chat/completions", json=body).json()
    warned = reply["choices"][0]["message"].get("autoparser_warnings", [])
    assert warned  # the reply does carry warnings: the metric must count each
    found = _samples(observed)
    counted = {
        dict(labels)["kind"]: value - before.get((name, labels), 0)
        for (name, labels), value in found.items()
        if name == "autoparser_parse_warnings_total"
    }
    assert sum(counted.values()) == len(warned)
    assert {k for k, v in counted.items() if v} == {warning_kind(w["message"]) for w in warned}


def test_warning_kinds_read_the_message_not_the_quoted_text() -> None:
    params = ChatTemplate.load(QWEN).apply([{"role": "user", "content": "x"}])
    warnings = params.parse("<tool_call>\n<function=nope>\n</function>\n</tool_call>\nafter").warnings
    assert warnings and all(warning_kind(w.message) != "other" for w in warnings)
    assert warning_kind("tool 'x' is not declared in the request") == "undeclared_tool"
    assert warning_kind("unrecognised markup 'could not be parsed' ignored") == "unrecognised_markup"
    assert warning_kind("something nobody wrote yet") == "other"


# --- request ids -------------------------------------------------------------------------------------------------


def test_every_reply_carries_a_request_id(observed: str, double: UpstreamDouble) -> None:
    made = set()
    for method, path, headers in (
        ("GET", "/v1/models", {}),
        ("GET", "/health", {}),
        ("GET", "/nowhere", {}),
        ("POST", "/v1/chat/completions", {"content-type": "text/plain"}),
        ("POST", "/v1/chat/completions", {"content-type": "application/json", "host": "evil.example"}),
    ):
        response = httpx2.request(method, observed + path, headers=headers, content=b"{}")
        rid = response.headers["x-request-id"]
        assert re.fullmatch(r"[0-9a-f]{32}", rid), (path, rid)
        made.add(rid)
    assert len(made) == 5


@pytest.mark.parametrize(
    ("sent", "kept"),
    [
        ("abc-123", "abc-123"),
        ("req_1.2:3", "req_1.2:3"),
        ("a b<c>\"d';", "abcd"),
        ("x" * 500, "x" * 128),
    ],
)
def test_a_sent_request_id_is_kept_sanitised(sent: str, kept: str, observed: str, double: UpstreamDouble) -> None:
    double.script("with-id", Script(["</think>", "\n\n", "Hi"]))
    for stream in (False, True):
        body = _ask("with-id", stream=stream)
        response = httpx2.post(observed + "/v1/chat/completions", json=body, headers={"x-request-id": sent})
        assert response.status_code == 200 and response.headers["x-request-id"] == kept


def test_nothing_usable_in_a_sent_id_gets_a_new_one(observed: str) -> None:
    response = httpx2.get(observed + "/v1/models", headers={"x-request-id": "<>!!"})
    assert re.fullmatch(r"[0-9a-f]{32}", response.headers["x-request-id"])


def test_the_access_log_line_has_the_request_id(
    observed: str, double: UpstreamDouble, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="autoparser.serve.http.access")
    double.script("logged", Script(["</think>", "\n\n", "Hi"]))
    httpx2.post(observed + "/v1/chat/completions", json=_ask("logged"), headers={"x-request-id": "trace-77"})
    httpx2.get(observed + "/v1/models%0Afake%20line")

    def access_lines() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == "autoparser.serve.http.access"]

    # The line is written once the reply has gone out, in the server's thread: it may follow the client's return.
    deadline = time.monotonic() + 10
    while not any("/v1/models%0Afake" in x for x in access_lines()) and time.monotonic() < deadline:
        time.sleep(0.01)
    lines = access_lines()
    (line,) = [x for x in lines if "trace-77" in x]
    assert '"POST /v1/chat/completions" 200' in line and line.endswith("request_id=trace-77")
    assert all("\n" not in x for x in lines)
    assert any("/v1/models%0Afake" in x and '" 404 ' in x for x in lines)
