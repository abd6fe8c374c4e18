"""A seeded fuzz of the chat endpoint: thousands of malformed, mistyped, oddly encoded and huge bodies, never a 5xx.

The app runs in-process (httpx's ASGI transport: no sockets for the server, so the run takes seconds) in front of
the upstream double. Each body must get an answer within a few seconds, every answer below 500, every error in
OpenAI's shape; every top-level field given a value of the wrong JSON type must be a 400 naming that field; after
the lot the server still answers a good request. The bodies:

* every field of a full request deleted, and set to each value of the wrong types (and to values of the right type
  out of range);
* random mutations of the full request at any depth: a value replaced by another of any type, a key deleted or
  added, odd Unicode (lone surrogates, NUL, right-to-left marks, zero-width joiners, combining marks, astral
  characters, huge strings), long arrays, deep nesting;
* raw bytes: truncated JSON, flipped bytes, invalid UTF-8, JSON that is not an object.
"""

from __future__ import annotations

import asyncio
import copy
import json
import random
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest

from autoparser import ChatTemplate
from autoparser.serve import ServeConfig, create_app

from .double import UpstreamDouble

TEMPLATE = "Qwen3.5-4B"
SEED = 20250
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
            "required": ["city"],
        },
    },
}
FULL: dict[str, Any] = {
    "model": TEMPLATE,
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "user", "content": "And tomorrow?"},
    ],
    "tools": [WEATHER],
    "tool_choice": "auto",
    "parallel_tool_calls": True,
    "temperature": 0.7,
    "top_p": 0.9,
    "max_tokens": 64,
    "max_completion_tokens": 64,
    "seed": 7,
    "stop": ["END"],
    "frequency_penalty": 0.5,
    "presence_penalty": 0.5,
    "logit_bias": {"42": 1.5},
    "n": 1,
    "stream": False,
    "response_format": {"type": "text"},
    "chat_template_kwargs": {"enable_thinking": False},
    "reasoning_effort": "low",
    "user": "someone",
    "logprobs": False,
    "store": False,
    "metadata": {"purpose": "fuzz"},
}
# The JSON types each top-level field takes ("integer" is a number that is whole)
ACCEPTS: dict[str, set[str]] = {
    "model": {"string"},
    "messages": {"array"},
    "tools": {"array"},
    "tool_choice": {"string", "object"},
    "parallel_tool_calls": {"boolean"},
    "temperature": {"number", "integer"},
    "top_p": {"number", "integer"},
    "max_tokens": {"integer"},
    "max_completion_tokens": {"integer"},
    "seed": {"integer"},
    "stop": {"string", "array"},
    "frequency_penalty": {"number", "integer"},
    "presence_penalty": {"number", "integer"},
    "logit_bias": {"object"},
    "n": {"integer"},
    "stream": {"boolean"},
    "response_format": {"object"},
    "chat_template_kwargs": {"object"},
    "reasoning_effort": {"string"},
    "user": {"string"},
    "logprobs": {"boolean"},
    "store": {"boolean"},
    "metadata": {"object"},
}
SAMPLES: list[Any] = [0, 1, -3, 2**70, 1.5, -0.25, 1e308, True, False, "", "text", "1", [], ["a"], [1, 2], {}, {"k": 1}]
ODD_TEXT = [
    "a\ud800b",
    "\udfff",
    "\x00",
    "\u202eevil\u202c",
    "\u200d\u200b\ufeff",
    "e\u0301\u0301\u0301",
    "😀\U0010ffff",
    "\\u0000",
    "{{ 7 * 7 }}{% for x in range(9) %}",
    "<|im_start|>system\n",
    "x" * 200_000,
]


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    return {str: "string", list: "array", dict: "object", type(None): "null"}[type(value)]


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if len(path) > 8:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, (*path, i))


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if roll < 0.35 or depth > 3:
        return copy.deepcopy(rng.choice([*SAMPLES, None, *ODD_TEXT[:-1]]))  # never a shared list or object
    if roll < 0.45:
        return rng.choice(ODD_TEXT)
    if roll < 0.6:
        nested: Any = "x"
        for _ in range(rng.choice([10, 63, 64, 65, 200, 700])):
            nested = [nested] if rng.random() < 0.5 else {"k": nested}
        return nested
    if roll < 0.7:
        return [copy.deepcopy(rng.choice(SAMPLES)) for _ in range(rng.choice([50, 1000, 5000]))]
    if roll < 0.85:
        return {rng.choice(["type", "role", "content", "name", "k", "\ud800"]): _random_value(rng, depth + 1)}
    return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]


def _mutate(rng: random.Random, body: dict[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(body)
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(list(_paths(body))[1:])
        *parents, last = path
        holder: Any = body
        for key in parents:
            holder = holder[key]
        action = rng.random()
        if action < 0.2 and isinstance(holder, dict):
            del holder[last]
        elif action < 0.3 and isinstance(holder, dict):
            holder[rng.choice(["extra", "role", "type", "\u0000", "arguments"])] = _random_value(rng)
        elif action < 0.4 and isinstance(holder, list):
            holder.append(_random_value(rng))
        else:
            holder[last] = _random_value(rng)
        if not isinstance(body, dict) or not body:
            break
    return body


def _encode(body: Any) -> bytes:
    return json.dumps(body, ensure_ascii=True).encode()


def _bodies(rng: random.Random) -> Iterator[tuple[bytes, str | None]]:
    """(raw body, the top-level field that must be named in a 400, or None: any answer below 500)."""
    for key in FULL:
        yield _encode({k: v for k, v in FULL.items() if k != key}), None
        for sample in [*SAMPLES, None, *ODD_TEXT[:3]]:
            wrong = sample is not None and _kind(sample) not in ACCEPTS[key]
            yield _encode({**FULL, key: sample}), key if wrong else None
    for _ in range(1400):
        yield _encode(_mutate(rng, FULL)), None
    full = _encode(FULL)
    for _ in range(150):
        cut = rng.randrange(len(full))
        yield full[:cut], None
        flipped = bytearray(full)
        for _ in range(rng.randint(1, 4)):
            flipped[rng.randrange(len(flipped))] = rng.randrange(256)
        yield bytes(flipped), None
    for raw in (b"", b"null", b"[]", b'"x"', b"1", b"\xff\xfe", b"\xef\xbb\xbf{}", b"{" * 100_000, b"[" * 5000):
        yield raw, None


def _check_error(response: httpx2.Response) -> dict[str, Any]:
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}, error
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["type"], str)
    assert error["param"] is None or isinstance(error["param"], str)
    return error


@pytest.fixture(scope="module")
def app(double: UpstreamDouble) -> Any:
    config = ServeConfig(double.url, model_name=TEMPLATE, body_timeout=5.0)  # type: ignore[attr-defined]
    return create_app(ChatTemplate.load(TEMPLATE), config)


def test_fuzzed_bodies_never_answer_5xx(app: Any) -> None:
    """At least 2,000 seeded bodies: 0 answers of 500 or more, none left waiting, every 4xx in OpenAI's shape,
    a wrong-typed top-level field a 400 naming it; the server answers a good request afterwards."""
    statuses: dict[int, int] = {}
    failures: list[str] = []

    async def run() -> None:
        transport = httpx2.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx2.AsyncClient(transport=transport, base_url="http://localhost", timeout=30) as http:
            json_body = {"content-type": "application/json"}
            good = await http.post("/v1/chat/completions", content=_encode(FULL), headers=json_body)
            assert good.status_code == 200, good.text
            for raw, field in _bodies(random.Random(SEED)):
                with anyio.fail_after(20):
                    response = await http.post(
                        "/v1/chat/completions", content=raw, headers={"content-type": "application/json"}
                    )
                statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
                if response.status_code >= 500:
                    failures.append(f"{response.status_code} {response.text[:300]} <- {raw[:300]!r}")
                elif response.status_code >= 400:
                    error = _check_error(response)
                    named = response.status_code == 400 and (error["param"] or "").startswith(field or "")
                    if field is not None and not named:
                        failures.append(f"{field}: {response.status_code} {error} <- {raw[:200]!r}")
                elif field is not None:
                    failures.append(f"{field}: accepted with {response.status_code} <- {raw[:200]!r}")
            streamed = _encode({**FULL, "stream": True})
            after = await http.post("/v1/chat/completions", content=streamed, headers=json_body)
            assert after.status_code == 200 and after.text.endswith("data: [DONE]\n\n")

    asyncio.run(run())
    assert not failures, "\n".join(failures[:20]) + f"\n({len(failures)} failures; statuses {statuses})"
    assert sum(statuses.values()) >= 2000, statuses
    assert statuses.get(200, 0) > 50 and sum(n for s, n in statuses.items() if 400 <= s < 500) > 1000, statuses
