"""Bad input answers a 4xx in OpenAI's format naming the field, never a 500 or a hang: schemas that are not JSON
Schema or that no grammar can express, lone surrogates, deep nesting, out-of-range integers, the request limits
(body size, tools, depth), and a body that stops arriving. In-process (httpx's ASGI transport) against the upstream
double."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest

from autoparser import ChatTemplate
from autoparser.serve import ServeConfig, create_app

from .double import UpstreamDouble

TEMPLATE = "Qwen3.5-4B"
USER = [{"role": "user", "content": "Weather?"}]


def _tool(parameters: Any, name: str = "f") -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def _string_property(**schema: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"a": {"type": "string", **schema}}, "required": ["a"]}


def _format(schema: Any) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """One event loop for the module: the app's upstream connections belong to the loop that opened them."""
    running = asyncio.new_event_loop()
    yield running
    running.close()


@pytest.fixture(scope="module")
def post(double: UpstreamDouble, loop: asyncio.AbstractEventLoop) -> Any:
    config = ServeConfig(
        double.url,  # type: ignore[attr-defined]
        model_name=TEMPLATE,
        max_body_bytes=200_000,
        max_tools=4,
        max_json_depth=20,
        body_timeout=0.5,
    )
    app = create_app(ChatTemplate.load(TEMPLATE), config)

    def send(body: Any, headers: dict[str, str] | None = None) -> httpx2.Response:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()

        async def run() -> httpx2.Response:
            transport = httpx2.ASGITransport(app=app, raise_app_exceptions=False)
            async with httpx2.AsyncClient(transport=transport, base_url="http://localhost") as http:
                sent = {"content-type": "application/json", **(headers or {})}
                return await http.post("/v1/chat/completions", content=raw, headers=sent)

        return loop.run_until_complete(run())

    send.app = app  # type: ignore[attr-defined]
    send.loop = loop  # type: ignore[attr-defined]
    return send


def _error(response: httpx2.Response, status: int = 400) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    return error


SCHEMA_CASES = [
    ({"messages": USER, "tools": [_tool({"type": "x"})]}, "tools[0].function.parameters.type"),
    (
        {"messages": USER, "tools": [_tool(_string_property(pattern="["))]},
        "tools[0].function.parameters.properties.a.pattern",
    ),
    (
        {"messages": USER, "tools": [_tool({"type": "object", "properties": {"a": {"$ref": "https://x.test/s"}}})]},
        "tools[0].function.parameters.properties.a.$ref",
    ),
    ({"messages": USER, "tools": [_tool({"$ref": "#/$defs/missing"})]}, "tools[0].function.parameters.$ref"),
    ({"messages": USER, "tools": [_tool("{not json")]}, "tools[0].function.parameters"),
    (
        {"messages": USER, "tools": [_tool({"type": "object", "required": "a"})]},
        "tools[0].function.parameters.required",
    ),
    (
        {"messages": USER, "tools": [_tool({"type": "string", "minLength": -1})]},
        "tools[0].function.parameters.minLength",
    ),
    ({"messages": USER, "tools": [_tool({}), _tool({}, "g"), _tool([], "h")]}, "tools[2].function.parameters"),
    ({"messages": USER, "tools": [_tool({}), _tool({})]}, "tools[1].function.name"),
    ({"messages": USER, "response_format": _format({"type": "x"})}, "response_format.json_schema.schema.type"),
    ({"messages": USER, "response_format": _format({"anyOf": []})}, "response_format.json_schema.schema.anyOf"),
    # valid JSON Schema that no grammar can express: found when the grammar is written, before the reply
    (
        {
            "messages": USER,
            "tools": [_tool({}, "g"), _tool(_string_property(pattern="^(?=a)b$"))],
            "tool_choice": "required",
        },
        "tools[1].function.parameters.properties.a.pattern",
    ),
    (
        {"messages": USER, "response_format": _format(_string_property(pattern="(?<=a)b"))},
        "response_format.json_schema.schema.properties.a.pattern",
    ),
]


@pytest.mark.parametrize(("body", "param"), SCHEMA_CASES)
def test_a_bad_schema_is_a_400_naming_the_tool_and_keyword(post: Any, body: dict[str, Any], param: str) -> None:
    error = _error(post(body))
    assert error["param"] == param
    assert error["message"].startswith(param)


@pytest.mark.parametrize(
    ("raw", "param"),
    [
        (b'{"messages": [{"role": "user", "content": "a\\ud800b"}]}', "messages[0].content"),
        (
            b'{"messages": [{"role": "user", "content": [{"type": "text", "text": "\\udfff"}]}]}',
            "messages[0].content[0].text",
        ),
        (b'{"messages": [{"role": "user", "content": "x"}], "user": "\\ud83d"}', "user"),
        (b'{"messages": [{"role": "user", "content": "x", "\\ud800": 1}]}', "messages[0]"),
    ],
)
def test_a_lone_surrogate_is_a_400_naming_the_field(post: Any, raw: bytes, param: str) -> None:
    assert _error(post(raw))["param"] == param


def test_a_surrogate_pair_is_text(post: Any) -> None:
    assert post(b'{"messages": [{"role": "user", "content": "\\ud83d\\ude00"}]}').status_code == 200


def test_invalid_utf8_and_non_json_numbers_are_400s(post: Any) -> None:
    assert _error(post(b'{"messages": [{"role": "user", "content": "a\xed\xa0\x80b"}]}'))["code"] == "invalid_json"
    assert (
        _error(post(b'{"messages": [{"role": "user", "content": "x"}], "temperature": NaN}'))["code"] == "invalid_json"
    )


def test_nesting_past_the_limit_is_a_400_naming_where(post: Any) -> None:
    deep: Any = "x"
    for _ in range(30):
        deep = [deep]
    error = _error(post({"messages": USER, "metadata_extra": deep}))
    assert error["param"].startswith("metadata_extra[0]") and "20 levels" in error["message"]
    assert _error(post(b'{"messages": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"))["code"] == "invalid_json"
    within: Any = "x"
    for _ in range(15):
        within = {"k": within}
    assert post({"messages": USER, "tools": [_tool({"type": "object", "x-note": within})]}).status_code == 200


def test_call_arguments_nested_deep_are_a_400_naming_them(post: Any) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "[" * 500 + "]" * 500}}
    messages = [
        *USER,
        {"role": "assistant", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "r"},
    ]
    error = _error(post({"messages": messages, "tools": [_tool({})]}))
    assert error["param"].startswith("messages[1].tool_calls[0].function.arguments")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("seed", 2**63),
        ("seed", -(2**63) - 1),
        ("max_tokens", 2**64),
        ("max_tokens", 0),
        ("max_completion_tokens", 1.5),
        ("n", True),
        ("top_logprobs", 21),
        ("temperature", 2.5),
        ("logprobs", "yes"),
        ("stream", 1),
        ("user", 7),
        ("metadata", {"a": 1}),
        ("modalities", ["audio"]),
        ("audio", {"voice": "x"}),
    ],
)
def test_out_of_range_and_mistyped_values_are_400s(post: Any, field: str, value: Any) -> None:
    assert _error(post({"messages": USER, field: value}))["param"] == field


def test_int64_bounds_and_integral_floats_are_taken(post: Any) -> None:
    assert post({"messages": USER, "seed": 2**63 - 1, "max_tokens": 16.0}).status_code == 200


def test_too_many_tools_is_a_400(post: Any) -> None:
    tools = [_tool({}, f"t{i}") for i in range(5)]
    error = _error(post({"messages": USER, "tools": tools}))
    assert error["param"] == "tools" and "at most 4" in error["message"]
    assert post({"messages": USER, "tools": tools[:4]}).status_code == 200


def test_a_body_past_the_size_limit_is_a_413(post: Any) -> None:
    big = {"messages": [{"role": "user", "content": "x" * 250_000}]}
    error = _error(post(big), 413)
    assert error["code"] == "request_too_large" and "200000 bytes" in error["message"]


def _raw_asgi(post: Any, headers: list[tuple[bytes, bytes]], chunks: list[bytes]) -> tuple[int, dict[str, Any]]:
    """Drive ``app`` by hand: the body ``chunks`` sent, then nothing more (the client neither sends nor leaves)."""
    sent: list[dict[str, Any]] = []

    async def run() -> None:
        queue = list(chunks)

        async def receive() -> dict[str, Any]:
            if queue:
                return {"type": "http.request", "body": queue.pop(0), "more_body": True}
            await anyio.sleep_forever()
            raise AssertionError

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": "/v1/chat/completions",
            "raw_path": b"/v1/chat/completions",
            "query_string": b"",
            "root_path": "",
            "headers": [(b"host", b"localhost"), (b"content-type", b"application/json"), *headers],
            "client": ("127.0.0.1", 1),
            "server": ("test", 80),
        }
        with anyio.fail_after(10):  # the app's own body timeout is 0.5 s: this only stops a hang failing forever
            await post.app(scope, receive, send)

    post.loop.run_until_complete(run())
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], json.loads(body)


def test_a_body_shorter_than_its_content_length_is_a_408_not_a_hang(post: Any) -> None:
    status, body = _raw_asgi(post, [(b"content-length", b"100")], [b'{"messages": '])
    assert status == 408 and body["error"]["code"] == "request_timeout"


def test_a_content_length_past_the_limit_is_refused_before_the_body(post: Any) -> None:
    status, body = _raw_asgi(post, [(b"content-length", b"999999999")], [])
    assert status == 413 and body["error"]["code"] == "request_too_large"


def test_a_content_length_that_is_not_a_number_is_a_400(post: Any) -> None:
    status, body = _raw_asgi(post, [(b"content-length", b"12abc")], [])
    assert status == 400 and body["error"]["type"] == "invalid_request_error"


def test_a_chunked_body_growing_past_the_limit_is_a_413(post: Any) -> None:
    status, _ = _raw_asgi(post, [], [b'{"messages": "' + b"x" * 100_000] * 3)
    assert status == 413


def test_a_model_not_served_is_a_404(post: Any) -> None:
    error = _error(post({"model": "gpt-4o", "messages": USER}), 404)
    assert error["param"] == "model" and error["code"] == "model_not_found" and "gpt-4o" in error["message"]
    assert post({"model": TEMPLATE, "messages": USER}).status_code == 200
    assert post({"messages": USER}).status_code == 200  # no model: the one served (vLLM's rule)
