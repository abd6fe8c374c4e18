"""A small request whose parser, grammar and schemas are cached is prepared on the event loop, in quick mode; one
that needs anything built, one over the quick size, and one whose rendering runs past the quick deadline are
prepared in a worker thread, as before. Either way the server answers the same: the same prompt upstream, the same
message back. (The time saved is a thread's round trip; docs/serving.md has the figures, bench/ measures them.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio.to_thread
import httpx2
import pytest

from autoparser import ChatTemplate
from autoparser.serve import ServeConfig, create_app
from autoparser.serve import replies as replies_module

from .apps import serving
from .double import LoopbackServer, Script, UpstreamDouble

QWEN = "Qwen3.5-4B"
REPLY = ["Sunny", " in", " Paris", "."]


def _tool(name: str) -> dict[str, Any]:
    parameters = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}
    return {"type": "function", "function": {"name": name, "description": "Weather", "parameters": parameters}}


def _ask(key: str, tools: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {"model": QWEN, "messages": [{"role": "user", "content": f"Weather? [{key}]"}], "tools": tools, **fields}


@pytest.fixture
def threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the functions the server ran in worker threads, in order."""
    ran: list[str] = []
    real = anyio.to_thread.run_sync

    async def counted(function: Any, *args: Any, **kwargs: Any) -> Any:
        ran.append(getattr(function, "__name__", repr(function)))
        return await real(function, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
    return ran


@pytest.fixture(scope="module")
def server(double: UpstreamDouble) -> Iterator[str]:
    with serving(double.url) as (url, _):  # type: ignore[attr-defined]
        yield url


def _post(url: str, body: dict[str, Any]) -> httpx2.Response:
    response = httpx2.post(url + "/v1/chat/completions", json=body, timeout=60)
    assert response.status_code == 200, response.text
    return response


@pytest.mark.parametrize("stream", [False, True])
def test_a_request_of_a_shape_seen_before_is_prepared_without_a_thread(
    server: str, double: UpstreamDouble, threads: list[str], stream: bool
) -> None:
    key = f"quick-{stream}"
    double.script(key, Script(REPLY))
    tools = [_tool(f"weather_{key.replace('-', '_')}")]
    first = _post(server, _ask(key, tools, stream=stream))
    assert threads.count("_prepare") == 1  # a new tool list: its parser and grammar are built in a thread
    again = _post(server, _ask(key, tools, stream=stream))
    assert threads.count("_prepare") == 1  # all cached: prepared on the event loop
    prompts = [body["prompt"] for body in double.bodies(key)]
    assert len(prompts) == 2 and prompts[0] == prompts[1]
    if stream:
        assert first.text.count("Sunny") == again.text.count("Sunny") == 1
    else:
        assert first.json()["choices"] == again.json()["choices"]
    _post(server, _ask(key, [*tools, _tool("another_tool")], stream=stream))
    assert threads.count("_prepare") == 2  # a new shape again


def test_a_body_over_the_quick_size_is_prepared_in_a_thread(
    server: str, double: UpstreamDouble, threads: list[str]
) -> None:
    key = "quick-large"
    double.script(key, Script(REPLY))
    tools = [_tool("weather_large")]
    long = "x " * replies_module.QUICK_REQUEST
    for _ in range(2):
        _post(server, {**_ask(key, tools), "messages": [{"role": "user", "content": f"{long} [{key}]"}]})
    assert threads.count("_prepare") == 2


def test_a_rendering_past_the_quick_deadline_is_done_again_in_a_thread(threads: list[str]) -> None:
    # A template whose rendering the request makes slow (a loop of a length it passes): each time, the quick
    # attempt stops at its deadline and the thread renders it whole, within the template's own limits
    source = (
        "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
        "{% for i in range(rounds | default(0)) %}{% for j in range(rounds) %}{% endfor %}{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
    )
    fake = UpstreamDouble()
    fake.script("slow", Script(REPLY))
    with LoopbackServer(fake.app) as upstream:
        app = create_app(ChatTemplate(source, name="slow.jinja"), ServeConfig(upstream.url, model_name="slow"))
        with LoopbackServer(app) as running:
            body = {"model": "slow", "messages": [{"role": "user", "content": "Hi [slow]"}]}
            slow = {**body, "chat_template_kwargs": {"rounds": 1500}}
            for _ in range(2):
                answer = _post(running.url, slow).json()["choices"][0]["message"]["content"]
                assert answer == "Sunny in Paris."
            assert threads.count("_prepare") == 2
            _post(running.url, body)
            _post(running.url, body)
            assert threads.count("_prepare") == 2  # quick: the same parser as the slow ones, and a fast rendering
    assert [b["prompt"] for b in fake.bodies("slow")][-1] == "<user>Hi [slow]<assistant>"
