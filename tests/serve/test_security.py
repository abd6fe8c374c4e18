"""Security (issue 25, item 5): the client's API key, the POST media type, CORS only where asked, the Host rule of a
server on loopback (DNS rebinding), the upstream's credentials never shown, and 500s without exception text.

Each test runs an autoparser app of its own on a loopback port (tests/serve/apps.py), in front of the upstream
double or of an upstream that echoes the credentials it got.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx2
import openai
import pytest

from autoparser.serve.http.security import Scrubber, is_loopback, mask_url, split_credentials

from .apps import EchoUpstream, serving
from .double import LoopbackServer, Script, UpstreamDouble

QWEN = "Qwen3.5-4B"
KEY = "sk-client-Zq8"
JSON = {"content-type": "application/json"}


def _ask(key: str) -> dict[str, Any]:
    return {"model": QWEN, "messages": [{"role": "user", "content": f"Hello [{key}]"}]}


def _error(response: httpx2.Response) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}, body
    return body["error"]


@pytest.fixture(scope="module")
def keyed(double: UpstreamDouble) -> Iterator[str]:
    with serving(double.url, api_key=KEY) as (url, _):  # type: ignore[attr-defined]
        yield url


def test_without_the_key_401_in_openais_format(keyed: str, double: UpstreamDouble) -> None:
    double.script("no-key", Script(["</think>", "\n\n", "Hi"]))
    missing = httpx2.post(keyed + "/v1/chat/completions", json=_ask("no-key"))
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    assert _error(missing)["type"] == "invalid_request_error" and "API key" in _error(missing)["message"]
    for header in (f"Bearer {KEY}x", f"Bearer {KEY[:-1]}", "Bearer sk", f"Basic {KEY}", KEY):
        wrong = httpx2.post(keyed + "/v1/chat/completions", json=_ask("no-key"), headers={"authorization": header})
        assert wrong.status_code == 401, header
        assert _error(wrong)["code"] == ("invalid_api_key" if header.startswith("Bearer ") else None), header
    assert httpx2.get(keyed + "/v1/models").status_code == 401
    assert not double.bodies("no-key")  # nothing reached the upstream


def test_with_the_key_the_openai_client_is_served(keyed: str, double: UpstreamDouble) -> None:
    double.script("keyed", Script(["</think>", "\n\n", "Hi", " there"]))
    client = openai.OpenAI(base_url=keyed + "/v1", api_key=KEY, max_retries=0, timeout=30)
    assert client.chat.completions.create(**_ask("keyed")).choices[0].message.content == "Hi there"
    assert (
        "".join(
            c.choices[0].delta.content or ""
            for c in client.chat.completions.create(**_ask("keyed"), stream=True)
            if c.choices
        )
        == "Hi there"
    )
    assert [m.id for m in client.models.list()] == [QWEN]
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=keyed + "/v1", api_key="sk-other", max_retries=0).models.list()


def test_health_and_metrics_stay_open(keyed: str) -> None:
    for path in ("/health", "/health/live", "/metrics"):
        assert httpx2.get(keyed + path).status_code == 200, path


@pytest.fixture(scope="module")
def open_server(double: UpstreamDouble) -> Iterator[str]:
    with serving(double.url) as (url, _):  # type: ignore[attr-defined]
        yield url


@pytest.mark.parametrize("media", [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data"])
def test_a_post_that_is_not_json_is_a_415(media: str | None, open_server: str, double: UpstreamDouble) -> None:
    key = f"media-{media}"
    headers = {"content-type": media} if media else {}
    body = json.dumps(_ask(key)).encode()
    response = httpx2.post(open_server + "/v1/chat/completions", content=body, headers=headers)
    assert response.status_code == 415 and _error(response)["code"] == "unsupported_media_type"
    assert not double.bodies(key)


def test_json_with_a_charset_is_json(open_server: str, double: UpstreamDouble) -> None:
    double.script("charset", Script(["</think>", "\n\n", "Hi"]))
    body = json.dumps(_ask("charset")).encode()
    headers = {"content-type": "Application/JSON; charset=utf-8"}
    response = httpx2.post(open_server + "/v1/chat/completions", content=body, headers=headers)
    assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"] == "Hi"


def test_cors_is_off_unless_asked(open_server: str, double: UpstreamDouble) -> None:
    origin = {"origin": "https://evil.example"}
    preflight = {**origin, "access-control-request-method": "POST", "access-control-request-headers": "content-type"}
    answered = httpx2.options(open_server + "/v1/chat/completions", headers=preflight)
    assert answered.status_code == 405 and "access-control-allow-origin" not in answered.headers
    got = httpx2.get(open_server + "/v1/models", headers=origin)
    assert got.status_code == 200 and "access-control-allow-origin" not in got.headers
    with serving(double.url, allowed_origins=("https://app.example",)) as (url, _):  # type: ignore[attr-defined]
        allowed = {**preflight, "origin": "https://app.example"}
        answered = httpx2.options(url + "/v1/chat/completions", headers=allowed)
        assert answered.status_code == 200
        assert answered.headers["access-control-allow-origin"] == "https://app.example"
        refused = httpx2.options(url + "/v1/chat/completions", headers=preflight)
        assert "access-control-allow-origin" not in refused.headers
        got = httpx2.get(url + "/v1/models", headers={"origin": "https://app.example"})
        assert got.headers["access-control-allow-origin"] == "https://app.example"
        assert "x-request-id" in got.headers["access-control-expose-headers"].lower()


def test_cors_answers_a_preflight_before_the_key_is_asked(double: UpstreamDouble) -> None:
    options = {"api_key": KEY, "allowed_origins": ("*",)}
    with serving(double.url, **options) as (url, _):  # type: ignore[attr-defined]
        preflight = {"origin": "https://a.example", "access-control-request-method": "POST"}
        assert httpx2.options(url + "/v1/chat/completions", headers=preflight).status_code == 200
        assert httpx2.get(url + "/v1/models", headers={"origin": "https://a.example"}).status_code == 401


@pytest.mark.parametrize(
    "host",
    ["evil.example", "evil.example:8000", "127.0.0.1.evil.example", "localhost.evil.example", "10.0.0.1", "[::2]:80"],
)
def test_on_loopback_a_foreign_host_is_refused(host: str, open_server: str, double: UpstreamDouble) -> None:
    key = f"host-{host}"
    for method, path in (("POST", "/v1/chat/completions"), ("GET", "/v1/models"), ("GET", "/health")):
        response = httpx2.request(method, open_server + path, json=_ask(key), headers={"host": host})
        assert response.status_code == 400, (host, path)
        assert _error(response)["code"] == "invalid_host"
    assert not double.bodies(key)


@pytest.mark.parametrize(
    "host", ["localhost", "LOCALHOST:8000", "127.0.0.1", "127.5.6.7:1", "[::1]:8000", "app.localhost"]
)
def test_on_loopback_loopback_names_are_served(host: str, open_server: str) -> None:
    assert httpx2.get(open_server + "/v1/models", headers={"host": host}).status_code == 200


def test_the_host_rule_follows_the_address_and_the_allowed_hosts(double: UpstreamDouble) -> None:
    with serving(double.url, allowed_hosts=("proxy.example",)) as (url, _):  # type: ignore[attr-defined]
        assert httpx2.get(url + "/v1/models", headers={"host": "proxy.example:443"}).status_code == 200
        assert httpx2.get(url + "/v1/models", headers={"host": "other.example"}).status_code == 400
    with serving(double.url, host="0.0.0.0") as (url, _):  # type: ignore[attr-defined]
        assert httpx2.get(url + "/v1/models", headers={"host": "api.example"}).status_code == 200


# --- the upstream's credentials ---------------------------------------------------------------------------------

PASSWORD = "pa:55/w@rd"  # characters a URL must percent-encode
UPSTREAM_KEY = "sk-upstream-Kd93"


@pytest.fixture(scope="module")
def echo() -> Iterator[tuple[EchoUpstream, str]]:
    fake = EchoUpstream()
    with LoopbackServer(fake.app) as running:
        yield fake, running.url


def _secrets() -> list[str]:
    basic = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    return [PASSWORD, quote(PASSWORD, safe=""), basic, UPSTREAM_KEY]


def test_the_upstreams_credentials_never_reach_a_reply_health_metrics_or_the_log(
    echo: tuple[EchoUpstream, str], caplog: pytest.LogCaptureFixture
) -> None:
    fake, upstream = echo
    with_password = upstream.replace("http://", f"http://alice:{quote(PASSWORD, safe='')}@")
    caplog.set_level(logging.DEBUG)
    with serving(with_password, upstream_api_key=UPSTREAM_KEY) as (url, _):
        replies = [
            httpx2.post(url + "/v1/chat/completions", json=_ask("creds")),
            httpx2.post(url + "/v1/chat/completions", json={**_ask("creds"), "stream": True}),
            httpx2.get(url + "/health"),
            httpx2.get(url + "/metrics"),
        ]
    # The credentials did reach the upstream (the URL's win over the key, as httpx had it), and it echoed them
    basic = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    assert fake.authorizations and set(fake.authorizations) == {f"Basic {basic}"}
    assert replies[0].status_code == 400 and "refused" in replies[0].json()["error"]["message"]  # kept: upstream 400
    assert replies[1].status_code == 200 and "refused" in replies[1].text  # the error event that ends the stream
    assert replies[2].status_code == 200
    shown = [r.text for r in replies] + [str(dict(r.headers)) for r in replies] + [caplog.text]
    shown += [r.getMessage() for r in caplog.records]
    assert "refused" in caplog.text
    for secret in _secrets():
        for text in shown:
            assert secret not in text


def test_the_masking_pieces() -> None:
    parts = split_credentials("http://u:p%40ss@h:1/v1?x=1", "sk-k")
    assert parts.url == "http://h:1/v1?x=1"
    assert parts.headers == {"Authorization": "Basic " + base64.b64encode(b"u:p@ss").decode()}
    assert {"p@ss", "p%40ss", "sk-k"} <= set(parts.secrets)
    assert split_credentials("http://h:1", None) == split_credentials("http://h:1")
    assert split_credentials("http://h:1").headers == {}
    assert mask_url("http://u:p@h:1/x") == "http://***@h:1/x" and mask_url("http://h/x") == "http://h/x"
    scrub = Scrubber(parts.secrets)
    assert scrub.text('key "sk-k" and p@ss') == 'key "***" and ***'
    assert scrub.bytes(b"[sk-k]", keep_length=True) == b"[****]"
    assert is_loopback("127.0.0.9") and is_loopback("::1") and is_loopback("a.localhost") and not is_loopback("x.io")


def test_a_500_says_internal_error_and_the_request_id(double: UpstreamDouble, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR)
    with serving(double.url) as (url, app):
        server = app.state.autoparser

        async def broken(*args: Any) -> Any:
            raise RuntimeError("a detail for the log only")

        server.upstream.complete = broken
        response = httpx2.post(url + "/v1/chat/completions", json=_ask("boom"), headers={"x-request-id": "req-500"})
    assert response.status_code == 500 and response.headers["x-request-id"] == "req-500"
    error = _error(response)
    assert error["type"] == "server_error" and error["message"] == "internal error (request id req-500)"
    assert "RuntimeError" not in response.text and "detail" not in response.text
    assert "a detail for the log only" in caplog.text and "req-500" in caplog.text


def test_the_command_line_options(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import autoparser.serve as serve_package
    from autoparser import cli

    runs: list[Any] = []
    monkeypatch.setattr(serve_package, "serve", lambda app, **options: runs.append(app))
    upstream = "http://bob:hunter2@127.0.0.1:8080"
    arguments = ["serve", QWEN, "--upstream", upstream, "--allowed-origins", "https://a.example, https://b.example"]
    assert cli.main([*arguments, "--api-key", "sk-cli", "--allowed-hosts", "proxy.example"]) == 0
    monkeypatch.setenv("AUTOPARSER_API_KEY", "sk-env")
    assert cli.main(arguments) == 0
    guards = []
    for app in runs:
        assert app.state.autoparser.upstream.endpoint == "http://127.0.0.1:8080/completion"
        layer = app.build_middleware_stack()
        while not hasattr(layer, "key"):
            layer = layer.app
        guards.append(layer)
    assert [g.key for g in guards] == [b"sk-cli", b"sk-env"]
    assert guards[0].allowed_hosts == {"proxy.example"} and guards[0].check_host
    err = capsys.readouterr().err
    assert "hunter2" not in err and "http://***@127.0.0.1:8080" in err
