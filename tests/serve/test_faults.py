"""Faults: an upstream that refuses, cannot be reached or breaks off a reply; clients that go away; concurrent streams.

An upstream that refuses or cannot be reached is an error with its message and a status that keeps its meaning
(test_upstream_errors.py has the whole mapping). One that fails mid-stream ends the stream
with an error event, after the text the parser held back (nothing the model wrote is lost). A client that
disconnects cancels the upstream request, streamed or not (the double records the abandoned reply). Concurrent
streams each get their own reply.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2
import openai
import pytest

from autoparser import ChatTemplate
from autoparser.serve import ServeConfig, create_app

from .double import LoopbackServer, Script, UpstreamDouble, tokens
from .helpers import accumulate, from_completion

QWEN = "Qwen3.5-4B"
KINDS = ["llama.cpp", "openai"]


def _ask(key: str) -> dict[str, Any]:
    return {"model": QWEN, "messages": [{"role": "user", "content": f"Hello [{key}]"}]}


def _wait_for(condition: Any, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("status", [400, 500, 503])
def test_an_upstream_that_refuses_is_an_error_with_its_message(
    kind: str, status: int, client: Any, double: UpstreamDouble
) -> None:
    key = f"refuse-{kind}-{status}"
    double.script(key, Script(status=status, error=f"the engine says no ({status})"))
    for stream in (False, True):
        with pytest.raises(openai.APIStatusError) as caught:
            reply = client(QWEN, kind).chat.completions.create(**_ask(key), stream=stream)
            list(reply) if stream else None
        error = caught.value
        assert error.status_code == {400: 400, 500: 502, 503: 503}[status]
        assert f"the engine says no ({status})" in error.message and f"answered {status}" in error.message
        assert error.type == ("invalid_request_error" if status == 400 else "upstream_error")
        assert error.code == "upstream_status"


@pytest.mark.parametrize("kind", KINDS)
def test_an_unreachable_upstream_is_a_503(kind: str) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = create_app(
        ChatTemplate.load(QWEN), ServeConfig(f"http://127.0.0.1:{port}", upstream_kind=kind, upstream_model="m")
    )
    with LoopbackServer(app) as server:
        api = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
        for stream in (False, True):
            with pytest.raises(openai.APIStatusError) as caught:
                reply = api.chat.completions.create(**_ask("unreachable"), stream=stream)
                list(reply) if stream else None
            assert caught.value.status_code == 503
            assert "unreachable" in caught.value.message and str(port) in caught.value.message


FAILURES = {
    "event": "scripted failure",
    "drop": "broke off the reply",
    "truncate": "closed the stream before the reply ended",
}


@pytest.mark.parametrize("reader", ["direct", "httpx"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("failure", list(FAILURES))
def test_a_stream_that_breaks_off_ends_with_an_error_after_what_was_written(
    kind: str, failure: str, reader: str, double: UpstreamDouble, base_url: Any
) -> None:
    """The client gets every chunk so far, then what the parser held back, then an error event (no ``[DONE]``);
    the openai client raises it. Whether the reply is read straight off its connection (.direct) or through httpx
    (``direct_streams=False``, as behind a proxy)."""
    key = f"break-{kind}-{failure}"
    reply = "</think>\n\nPartly <b>sunny</b> with a <"  # the parser holds a trailing "<" until it knows more
    pieces = tokens(reply)
    double.script(key, Script([*pieces, "never", "sent"], fail_after=len(pieces), failure=failure))
    if reader == "direct":
        _breaks_off(base_url(QWEN, kind), key, failure)
    else:
        config = ServeConfig(double.url, upstream_kind=kind, model_name=QWEN, direct_streams=False)  # type: ignore[attr-defined]
        with LoopbackServer(create_app(ChatTemplate.load(QWEN), config)) as server:
            _breaks_off(server.url + "/v1", key, failure)


def _breaks_off(url: str, key: str, failure: str) -> None:
    response = httpx2.post(url + "/chat/completions", json={**_ask(key), "stream": True}, timeout=30)
    assert response.status_code == 200
    events = [json.loads(b[len("data: ") :]) for b in response.text.split("\n\n") if b.startswith("data: ")]
    assert "[DONE]" not in response.text
    error = events[-1]["error"]
    assert error["type"] == "upstream_error" and FAILURES[failure] in error["message"]
    content = "".join(e["choices"][0]["delta"].get("content", "") for e in events[:-1] if e.get("choices"))
    assert content == "Partly <b>sunny</b> with a <"
    with pytest.raises(openai.APIError, match=FAILURES[failure]):
        list(openai.OpenAI(base_url=url, api_key="x", max_retries=0).chat.completions.create(**_ask(key), stream=True))


@pytest.mark.parametrize("kind", KINDS)
def test_a_client_that_disconnects_mid_stream_cancels_the_upstream_request(
    kind: str, client: Any, double: UpstreamDouble
) -> None:
    key = f"leave-stream-{kind}"
    double.script(key, Script(["</think>", "\n\n"] + ["word "] * 400, delay=0.02))
    stream = client(QWEN, kind).chat.completions.create(**_ask(key), stream=True)
    seen = 0
    for chunk in stream:
        seen += bool(chunk.choices and chunk.choices[0].delta.content)
        if seen == 3:
            break
    stream.close()
    assert _wait_for(lambda: key in double.cancelled), "the upstream request was not cancelled"
    assert key not in double.finished


@pytest.mark.parametrize("kind", KINDS)
def test_a_client_that_disconnects_before_a_whole_reply_cancels_the_upstream_request(
    kind: str, base_url: Any, double: UpstreamDouble
) -> None:
    key = f"leave-whole-{kind}"
    double.script(key, Script(["word "] * 200, delay=0.02))
    with pytest.raises(httpx2.ReadTimeout):
        httpx2.post(base_url(QWEN, kind) + "/chat/completions", json=_ask(key), timeout=0.5)
    assert _wait_for(lambda: key in double.cancelled), "the upstream request was not cancelled"
    assert key not in double.finished


@pytest.mark.parametrize("kind", KINDS)
def test_concurrent_streams_do_not_interfere(kind: str, client: Any, double: UpstreamDouble) -> None:
    """24 streams at once, each with its own reply (answers, reasoning, calls of different tools), interleaved
    token by token: each client gets exactly its own message."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": f"tool_{i}",
                "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
            },
        }
        for i in range(24)
    ]
    replies = {}
    for i in range(24):
        key = f"together-{kind}-{i}"
        if i % 3 == 0:
            text = f"Thinking {i}.\n</think>\n\nAnswer number {i}."
        else:
            text = (
                f"Think {i}\n</think>\n\n<tool_call>\n<function=tool_{i}>\n<parameter=n>\n{i}\n</parameter>\n"
                "</function>\n</tool_call>"
            )
        replies[key] = text
        double.script(key, Script(tokens(text, ["<tool_call>", "</think>"]), delay=0.003 * (i % 4)))
    barrier = threading.Barrier(24)

    def run(key: str) -> Any:
        barrier.wait()
        chunks = client(QWEN, kind).chat.completions.create(**_ask(key), tools=tools, stream=True)
        return accumulate(chunks)[0]

    with ThreadPoolExecutor(24) as pool:
        results = dict(zip(replies, pool.map(run, replies), strict=True))
    for i, message in enumerate(results.values()):
        if i % 3 == 0:
            assert (message.reasoning_content, message.content) == (f"Thinking {i}.", f"Answer number {i}.")
            assert not message.tool_calls
        else:
            assert message.reasoning_content == f"Think {i}" and not message.content
            assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [(f"tool_{i}", {"n": i})]


def test_model_and_grammar_fields_of_an_openai_style_upstream(
    client: Any, double: UpstreamDouble, dispatcher: Any
) -> None:
    """The model comes from the upstream's /v1/models; a grammar field puts the whole-output grammar where the
    engine reads it, and asks for special tokens as text."""
    weather = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
    expected = {
        "none": lambda b: not {"structured_outputs", "ebnf", "response_format", "skip_special_tokens"} & set(b),
        "vllm-lark": lambda b: b["structured_outputs"]["grammar"].startswith("%llguidance"),
        "vllm-structural-tag": lambda b: (
            json.loads(b["structured_outputs"]["structural_tag"])["type"] == "structural_tag"
        ),
        "sglang-ebnf": lambda b: "root ::=" in b["ebnf"],
        "sglang-structural-tag": lambda b: b["response_format"]["type"] == "structural_tag",
    }
    for field, check in expected.items():
        key = f"field-{field}"
        client(QWEN, "openai", field).chat.completions.create(**_ask(key), tools=[weather])
        sent = double.bodies(key, "/v1/completions")[-1]
        assert sent["model"] == "double-model" and sent["max_tokens"] is None
        assert check(sent), (field, sorted(sent))
        assert sent.get("skip_special_tokens", True) is (field == "none")
    # required: no structural tag; the tag options fall back to the grammar
    client(QWEN, "openai", "vllm-structural-tag").chat.completions.create(
        **_ask("field-required"), tools=[weather], tool_choice="required"
    )
    assert "grammar" in double.bodies("field-required", "/v1/completions")[-1]["structured_outputs"]
    client(QWEN, "openai", "sglang-structural-tag").chat.completions.create(
        **_ask("field-required-sgl"), tools=[weather], tool_choice="required"
    )
    assert "ebnf" in double.bodies("field-required-sgl", "/v1/completions")[-1]


def test_the_message_survives_an_upstream_that_sends_one_character_per_event(
    client: Any, double: UpstreamDouble
) -> None:
    text = (
        "Hmm <b>.\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    double.script("chars", Script(list(text)))
    weather = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
    whole = from_completion(client(QWEN).chat.completions.create(**_ask("chars"), tools=[weather]))
    streamed, finish, _ = accumulate(
        client(QWEN).chat.completions.create(**_ask("chars"), tools=[weather], stream=True)
    )
    assert finish == "tool_calls"
    assert (
        (streamed.reasoning_content, streamed.content) == (whole.reasoning_content, whole.content) == ("Hmm <b>.", "")
    )
    assert [(c.name, c.arguments) for c in streamed.tool_calls] == [(c.name, c.arguments) for c in whole.tool_calls]


@pytest.mark.parametrize("direct", [None, False])
def test_an_upstream_that_stalls_past_the_timeout(direct: bool | None, double: UpstreamDouble) -> None:
    """``--upstream-timeout``: a whole reply that does not come in time is a 504; a stream that stalls ends with
    an error event after what it had sent (read straight off the connection, or through httpx)."""
    double.script("stall", Script(["</think>", "\n\n", "slow", " words", " here"], delay=0.4))
    config = ServeConfig(double.url, upstream_timeout=0.2, direct_streams=direct)  # type: ignore[attr-defined]
    app = create_app(ChatTemplate.load(QWEN), config)
    with LoopbackServer(app) as server:
        api = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
        with pytest.raises(openai.APIStatusError) as caught:
            api.chat.completions.create(**_ask("stall"))
        assert caught.value.status_code == 504 and "ReadTimeout" in caught.value.message
        response = httpx2.post(server.url + "/v1/chat/completions", json={**_ask("stall"), "stream": True}, timeout=30)
        assert response.status_code == 200 and "ReadTimeout" in response.text and "[DONE]" not in response.text
