"""vLLM's request extensions the server honours: ``add_generation_prompt`` and ``continue_final_message`` (the
prompt the upstream gets ends inside the final assistant message, and the reply continues it); and the name of the
reasoning field (``--reasoning-field``)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2

from autoparser import ChatTemplate
from autoparser.serve import ServeConfig, create_app
from autoparser.serve.chunks import REASONING_FIELDS

from .double import Script, UpstreamDouble, tokens

QWEN = "Qwen3.5-4B"
JSON = {"content-type": "application/json"}


def _post(base_url: Any, body: dict[str, Any]) -> httpx2.Response:
    return httpx2.post(f"{base_url(QWEN)}/chat/completions", json=body, headers=JSON, timeout=60)


def _prompt(double: UpstreamDouble, key: str) -> str:
    bodies = double.bodies(key)
    assert bodies, f"the upstream got no request for {key}"
    return str(bodies[-1]["prompt"])


def test_continue_final_message_ends_the_prompt_inside_the_message(base_url: Any, double: UpstreamDouble) -> None:
    key = "[continue]"
    double.script(key, Script(tokens(" gently falling")))
    messages = [
        {"role": "user", "content": f"A haiku about autumn {key}"},
        {"role": "assistant", "content": "Crimson maple leaves"},
    ]
    reply = _post(base_url, {"model": QWEN, "messages": messages, "continue_final_message": True})
    assert reply.status_code == 200, reply.text
    prompt = _prompt(double, key)
    assert prompt.endswith("Crimson maple leaves")  # no end of turn, no new assistant turn after it
    assert prompt.count("<|im_start|>assistant") == 1
    assert reply.json()["choices"][0]["message"]["content"].strip() == "gently falling"


def test_add_generation_prompt_false_leaves_the_assistant_turn_unopened(base_url: Any, double: UpstreamDouble) -> None:
    key = "[no-generation-prompt]"
    messages = [{"role": "user", "content": f"Hello {key}"}]
    assert _post(base_url, {"model": QWEN, "messages": messages, "add_generation_prompt": False}).status_code == 200
    assert _prompt(double, key).endswith("<|im_end|>\n")
    key = "[generation-prompt]"
    messages = [{"role": "user", "content": f"Hello {key}"}]
    assert _post(base_url, {"model": QWEN, "messages": messages}).status_code == 200
    assert "<|im_start|>assistant\n" in _prompt(double, key).rsplit("<|im_end|>", 1)[1]


def test_what_cannot_be_continued_is_a_400(base_url: Any) -> None:
    user = {"role": "user", "content": "Hello"}
    assistant = {"role": "assistant", "content": "Hi"}
    cases = [
        ({"messages": [user], "continue_final_message": True}, "messages[0].role"),
        ({"messages": [user, assistant], "continue_final_message": True, "add_generation_prompt": True},
         "continue_final_message"),
        ({"messages": [user, {"role": "assistant", "content": ""}], "continue_final_message": True},
         "messages[1].content"),
        ({"messages": [user], "continue_final_message": "yes"}, "continue_final_message"),
        ({"messages": [user], "add_generation_prompt": 1}, "add_generation_prompt"),
    ]
    for body, param in cases:
        reply = _post(base_url, {"model": QWEN, **body})
        assert reply.status_code == 400, (body, reply.text)
        assert reply.json()["error"]["param"] == param, (body, reply.text)


def test_the_reasoning_field_is_the_servers_choice(double: UpstreamDouble) -> None:
    """``--reasoning-field reasoning`` (newer vLLM's name): the reasoning arrives under it, whole and streamed, and
    ``reasoning_content`` is not sent; the default keeps ``reasoning_content``."""
    key = "[reasoning-field]"
    double.script(key, Script(tokens("Thinking it over.\n</think>\n\nHello!")))
    body = {"model": QWEN, "messages": [{"role": "user", "content": f"Hi {key}"}]}
    for field in REASONING_FIELDS:
        app = create_app(ChatTemplate.load(QWEN), ServeConfig(double.url, model_name=QWEN, reasoning_field=field))

        async def ask(app: Any = app) -> tuple[dict[str, Any], str]:
            transport = httpx2.ASGITransport(app=app)
            async with httpx2.AsyncClient(transport=transport, base_url="http://localhost", headers=JSON) as http:
                whole = (await http.post("/v1/chat/completions", json=body)).json()
                streamed = (await http.post("/v1/chat/completions", json={**body, "stream": True})).text
            return whole, streamed

        whole, streamed = anyio.run(ask)
        message = whole["choices"][0]["message"]
        assert message[field].strip() == "Thinking it over." and message["content"] == "Hello!"
        other = next(f for f in REASONING_FIELDS if f != field)
        assert other not in message
        events = [json.loads(b[6:]) for b in streamed.split("\n\n") if b.startswith("data: {")]
        deltas = [e["choices"][0]["delta"] for e in events if e.get("choices")]
        assert "".join(d.get(field) or "" for d in deltas).strip() == "Thinking it over."
        assert not any(other in d for d in deltas)


def test_vllms_sampling_extensions_reach_both_kinds(base_url: Any, double: UpstreamDouble) -> None:
    """``top_k``, ``min_p`` and ``repetition_penalty`` reach the engine: under vLLM's names for an OpenAI-style one,
    and llama.cpp's ``repeat_penalty``; out of range, they are a 400 naming the field."""
    fields = {"top_k": 40, "min_p": 0.05, "repetition_penalty": 1.1}
    for kind, path, names in [
        ("llama.cpp", "/completion", {"top_k": "top_k", "min_p": "min_p", "repetition_penalty": "repeat_penalty"}),
        ("openai", "/v1/completions", {"top_k": "top_k", "min_p": "min_p", "repetition_penalty": "repetition_penalty"}),
    ]:
        key = f"[extensions-{kind}]"
        body = {"model": QWEN, "messages": [{"role": "user", "content": f"Hello {key}"}], **fields}
        url = base_url(QWEN, kind)
        reply = httpx2.post(f"{url}/chat/completions", json=body, headers=JSON, timeout=60)
        assert reply.status_code == 200, reply.text
        (sent,) = double.bodies(key, path)
        assert {names[k]: sent.get(names[k]) for k in fields} == {names[k]: v for k, v in fields.items()}
    for field, value in [("top_k", -2), ("top_k", 1.5), ("min_p", 1.5), ("repetition_penalty", 0), ("min_p", "x")]:
        body = {"model": QWEN, "messages": [{"role": "user", "content": "Hello"}], field: value}
        reply = httpx2.post(f"{base_url(QWEN)}/chat/completions", json=body, headers=JSON, timeout=60)
        assert reply.status_code == 400 and reply.json()["error"]["param"] == field, (field, value, reply.text)
