"""Upstream errors keep their meaning (issue 25, item 4): a refusal reaches the client with its status and message,
429 with its ``Retry-After``, a failure of the upstream as 502/503/504, and nothing a client should not retry as a
5xx — checked with the real openai client, which retries 5xx and not 4xx. No reply, log or event shows the
upstream's credentials.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import httpx2
import openai
import pytest

from autoparser import ChatTemplate
from autoparser.serve import ServeConfig, create_app

from .double import LoopbackServer, Script, UpstreamDouble, tokens

QWEN = "Qwen3.5-4B"
KINDS = ["llama.cpp", "openai"]
# upstream status -> what the client gets
STATUSES = {
    400: 400,
    404: 404,
    413: 413,
    422: 422,
    401: 502,  # the server's own credentials for the upstream were refused: nothing the client sent
    403: 502,
    429: 429,
    500: 502,
    502: 502,
    503: 503,
    504: 504,
}


def _ask(key: str) -> dict[str, Any]:
    return {"model": QWEN, "messages": [{"role": "user", "content": f"Hello [{key}]"}]}


def _post(url: str, key: str, stream: bool) -> httpx2.Response:
    return httpx2.post(url + "/chat/completions", json={**_ask(key), "stream": stream}, timeout=30)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("upstream", "expected"), list(STATUSES.items()))
def test_an_upstream_status_keeps_its_meaning(
    kind: str, upstream: int, expected: int, double: UpstreamDouble, base_url: Any
) -> None:
    key = f"status-{kind}-{upstream}"
    double.script(key, Script(status=upstream, error=f"engine refusal {upstream}"))
    for stream in (False, True):  # a stream refused before its first byte answers with the status too
        response = _post(base_url(QWEN, kind), key, stream)
        assert response.status_code == expected, (stream, response.text)
        error = response.json()["error"]
        assert f"engine refusal {upstream}" in error["message"]
        assert error["code"] == "upstream_status"
        assert (error["type"] == "upstream_error") is (expected >= 500)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("upstream", [429, 503])
def test_retry_after_is_passed_on(kind: str, upstream: int, double: UpstreamDouble, base_url: Any) -> None:
    key = f"retry-after-{kind}-{upstream}"
    double.script(key, Script(status=upstream, error="slow down", headers={"Retry-After": "7"}))
    for stream in (False, True):
        response = _post(base_url(QWEN, kind), key, stream)
        assert response.status_code == upstream
        assert response.headers.get("retry-after") == "7"
        assert "slow down" in response.json()["error"]["message"]


def test_a_retry_after_a_header_cannot_hold_is_dropped(double: UpstreamDouble, base_url: Any) -> None:
    double.script("retry-after-odd", Script(status=429, headers={"Retry-After": "x" * 100}))
    response = _post(base_url(QWEN), "retry-after-odd", False)
    assert response.status_code == 429 and "retry-after" not in response.headers


@pytest.mark.parametrize("kind", KINDS)
def test_the_openai_client_does_not_retry_a_refusal_but_retries_a_failure(
    kind: str, double: UpstreamDouble, base_url: Any
) -> None:
    """With its default two retries: an upstream 400 is one upstream request and a ``BadRequestError``; an
    upstream 500 (a 502 here) is three — the client retries what is worth retrying, and only that."""
    api = openai.OpenAI(base_url=base_url(QWEN, kind), api_key="unused", max_retries=2, timeout=30)
    path = "/completion" if kind == "llama.cpp" else "/v1/completions"
    refused, failed = f"refused-once-{kind}", f"failed-thrice-{kind}"
    double.script(refused, Script(status=400, error="bad grammar"))
    double.script(failed, Script(status=500, error="engine crashed"))
    with pytest.raises(openai.BadRequestError, match="bad grammar"):
        api.chat.completions.create(**_ask(refused))
    assert len(double.bodies(refused, path)) == 1
    with pytest.raises(openai.InternalServerError, match="engine crashed"):
        api.chat.completions.create(**_ask(failed))
    assert len(double.bodies(failed, path)) == 3


@pytest.mark.parametrize("kind", KINDS)
def test_a_rate_limit_is_a_rate_limit_error_for_the_openai_client(
    kind: str, double: UpstreamDouble, client: Any
) -> None:
    double.script(f"limited-{kind}", Script(status=429, error="too many requests"))
    with pytest.raises(openai.RateLimitError, match="too many requests"):
        client(QWEN, kind).chat.completions.create(**_ask(f"limited-{kind}"))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_upstream_that_times_out_is_a_504_and_its_event_says_so(double: UpstreamDouble) -> None:
    double.script("late", Script(["</think>", "\n\n", "slow", " words"], delay=0.4))
    app = create_app(ChatTemplate.load(QWEN), ServeConfig(double.url, upstream_timeout=0.2))  # type: ignore[attr-defined]
    with LoopbackServer(app) as server:
        whole = _post(server.url + "/v1", "late", False)
        assert whole.status_code == 504 and whole.json()["error"]["code"] == "upstream_timeout"
        streamed = _post(server.url + "/v1", "late", True)
    assert streamed.status_code == 200  # the upstream's headers came in time: the stream had begun
    events = [json.loads(b[6:]) for b in streamed.text.split("\n\n") if b.startswith("data: ")]
    assert events[-1]["error"]["code"] == "upstream_timeout"


@pytest.mark.parametrize("kind", KINDS)
def test_a_stream_broken_off_names_the_kind_in_its_error_event(
    kind: str, double: UpstreamDouble, base_url: Any
) -> None:
    expected = {"event": "upstream_error", "drop": "upstream_broken", "truncate": "upstream_broken"}
    for failure, code in expected.items():
        key = f"kind-{kind}-{failure}"
        pieces = tokens("</think>\n\nSome words")
        double.script(key, Script([*pieces, "more"], fail_after=len(pieces), failure=failure))
        response = _post(base_url(QWEN, kind), key, True)
        events = [json.loads(b[6:]) for b in response.text.split("\n\n") if b.startswith("data: ")]
        assert response.status_code == 200 and events[-1]["error"]["code"] == code, failure


PASSWORD, KEY = "pw-Zq81/x", "sk-upstream-0c7f"
IN_URL = "pw-Zq81%2Fx"  # the password as a URL holds it


@pytest.mark.parametrize("kind", KINDS)
def test_no_reply_shows_the_upstreams_credentials(
    kind: str, double: UpstreamDouble, caplog: pytest.LogCaptureFixture
) -> None:
    """An upstream that echoes the key and the URL's password in its errors (refusals and stream error events),
    and an unreachable upstream whose URL holds a password: neither secret reaches the client or the log."""
    host = double.url.removeprefix("http://")  # type: ignore[attr-defined]
    echo = f"bad key {KEY}, url http://admin:{IN_URL}@{host} (decoded {PASSWORD})"
    double.script(f"echo-{kind}", Script(status=400, error=echo))
    double.script(f"echo-event-{kind}", Script(["Hi"], fail_after=1, error=echo))
    seen: list[str] = []
    for url in (f"http://admin:{IN_URL}@{host}", f"http://admin:{IN_URL}@127.0.0.1:{_free_port()}"):
        config = ServeConfig(url, upstream_kind=kind, upstream_api_key=KEY, upstream_model="m")
        with LoopbackServer(create_app(ChatTemplate.load(QWEN), config)) as server:
            for key, stream in ((f"echo-{kind}", False), (f"echo-{kind}", True), (f"echo-event-{kind}", True)):
                response = _post(server.url + "/v1", key, stream)
                assert response.status_code >= 400 or '"error"' in response.text
                seen.append(response.text)
    seen += [record.getMessage() for record in caplog.records]
    everything = "\n".join(seen)
    assert "bad key ***" in everything and "unreachable" in everything and "admin:***@" in everything
    assert PASSWORD not in everything and KEY not in everything and IN_URL not in everything


def test_an_invalid_upstream_url_is_refused_at_start_without_its_password() -> None:
    """A password with a bare ``/`` makes the rest of the URL a bad port: refused when the app is made (the CLI
    says so and exits) instead of answering every request with an error; the message masks the password."""
    with pytest.raises(ValueError, match="not valid") as caught:
        create_app(ChatTemplate.load(QWEN), ServeConfig("http://admin:pw-Zq81/x@127.0.0.1:8080"))
    assert "pw-Zq81" not in str(caught.value)
