"""What each upstream kind is sent, field by field (the app and the double in one process, over httpx's ASGI
transport), and the BOS rule."""

from __future__ import annotations

import dataclasses
from typing import Any

import anyio
import httpx2
import pytest

from autoparser import ChatTemplate
from autoparser.serve import ServeConfig, create_app
from autoparser.serve.upstream import _TRIGGER_TYPES, llama_cpp_grammar

from .double import UpstreamDouble

# A template that writes BOS and EOS, as Llama- and Mistral-style templates do.
SOURCE = (
    "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% if m.role == 'assistant' %}"
    "{{ eos_token }}{% endif %}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}"
)
TEMPLATE = ChatTemplate(SOURCE, bos_token="<s>", eos_token="</s>", name="bos-template")
ASK = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 5}


def _exchange(config: ServeConfig, double: UpstreamDouble, bodies: list[dict[str, Any]]) -> list[httpx2.Response]:
    """Send ``bodies`` to an app for TEMPLATE whose upstream is ``double`` (both in process)."""

    async def run() -> list[httpx2.Response]:
        # the double in process, through httpx: streamed replies too (direct_streams=False)
        config_ = dataclasses.replace(config, direct_streams=False)
        upstream = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=double.app))
        app = create_app(TEMPLATE, config_, client=upstream)
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://localhost") as client:
            return [await client.post("/v1/chat/completions", json=body) for body in bodies]

    return anyio.run(run)


@pytest.mark.parametrize(
    ("kind", "bos", "adds_bos", "stripped", "probes"),
    [
        ("llama.cpp", "auto", True, True, 1),
        ("llama.cpp", "auto", False, False, 1),
        ("llama.cpp", "strip", False, True, 0),
        ("llama.cpp", "keep", True, False, 0),
        ("openai", "auto", True, True, 0),
        ("openai", "keep", True, False, 0),
    ],
)
def test_the_bos_text_goes_where_the_engine_adds_bos(
    kind: str, bos: str, adds_bos: bool, stripped: bool, probes: int
) -> None:
    double = UpstreamDouble(adds_bos=adds_bos)
    config = ServeConfig("http://upstream", upstream_kind=kind, bos=bos)
    responses = _exchange(config, double, [ASK, {**ASK, "stream": True}])
    assert [r.status_code for r in responses] == [200, 200]
    prompts = [body["prompt"] for path, body in double.requests if path != "/tokenize"]
    assert prompts == ["[user]Hi[assistant]" if stripped else "<s>[user]Hi[assistant]"] * 2
    assert sum(path == "/tokenize" for path, _ in double.requests) == probes  # asked once, then remembered


def test_llama_cpp_request_fields() -> None:
    double = UpstreamDouble()
    config = ServeConfig("http://upstream", upstream_extra={"cache_prompt": False, "top_k": 5})
    _exchange(config, double, [{**ASK, "stop": "END", "seed": 3}])
    (_, body), *_ = [(p, b) for p, b in double.requests if p == "/completion"]
    assert body == {
        "prompt": "[user]Hi[assistant]",
        "stream": False,
        "n_predict": 5,
        "seed": 3,
        "stop": ["END", "</s>"],  # the client's stop, then the template's end of turn (its EOS)
        "preserved_tokens": ["</s>", "[user]"],  # the turn markers: a control token is written, not dropped
        "cache_prompt": False,  # --upstream-extra
        "top_k": 5,
    }


def test_openai_request_fields() -> None:
    double = UpstreamDouble(models=("served-model", "other"))
    config = ServeConfig("http://upstream/v1/", upstream_kind="openai", default_max_tokens=99)
    _exchange(
        config,
        double,
        [{"messages": ASK["messages"], "temperature": 0.0, "stream": True, "stream_options": {"include_usage": True}}],
    )
    (_, body), *_ = [(p, b) for p, b in double.requests if p == "/v1/completions"]
    assert body == {
        "model": "served-model",  # the first the upstream lists
        "prompt": "[user]Hi[assistant]",
        "stream": True,
        "max_tokens": 99,  # --default-max-tokens for a request without a limit
        "temperature": 0.0,
        "stop": ["</s>"],
        "stream_options": {"include_usage": True},
    }
    double = UpstreamDouble()
    config = ServeConfig("http://upstream", upstream_kind="openai", upstream_model="chosen")
    _exchange(config, double, [ASK])
    assert [b["model"] for p, b in double.requests if p == "/v1/completions"] == ["chosen"]
    assert not [p for p, _ in double.requests if p == "/v1/models"]


def test_trigger_encoding_follows_llama_cpp() -> None:
    """``common_grammar_trigger_type``: WORD 1, PATTERN 2, PATTERN_FULL 3; a pattern trigger (Llama 3.x bare JSON
    calls) goes as written."""
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    params = ChatTemplate.load("meta-llama-Llama-3.1-8B-Instruct").apply([{"role": "user", "content": "x"}], tools)
    fields = llama_cpp_grammar(params)
    assert params.grammar_triggers and all(t.type == "pattern" for t in params.grammar_triggers)
    assert fields["grammar_triggers"] == [{"type": 2, "value": t.value} for t in params.grammar_triggers]
    assert fields["grammar_lazy"] is True and fields["grammar"] == params.grammar
    assert "reasoning_budget_start_tag" not in fields  # no reasoning markers
    assert _TRIGGER_TYPES == {"word": 1, "pattern": 2, "pattern_full": 3}


def test_the_upstream_kinds_and_options_are_checked() -> None:
    with pytest.raises(ValueError, match="upstream kind"):
        create_app(TEMPLATE, ServeConfig("http://x", upstream_kind="tgi"))
    with pytest.raises(ValueError, match="grammar_field"):
        create_app(TEMPLATE, ServeConfig("http://x", upstream_kind="openai", grammar_field="outlines"))
    with pytest.raises(ValueError, match="--grammar-field"):
        create_app(TEMPLATE, ServeConfig("http://x", grammar_field="vllm-lark"))
    with pytest.raises(ValueError, match="bos"):
        create_app(TEMPLATE, ServeConfig("http://x", bos="drop"))


def test_thinking_tags_go_to_llama_cpp_only_while_reasoning_can_be_open() -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    tmpl = ChatTemplate.load("Qwen3.5-4B")
    ask = [{"role": "user", "content": "x"}]
    thinking = llama_cpp_grammar(tmpl.apply(ask, tools, enable_thinking=True))
    assert thinking["reasoning_budget_start_tag"] == "<think>" and thinking["reasoning_budget_end_tags"] == ["</think>"]
    assert thinking["generation_prompt"].endswith("<think>\n")
    # thinking off: the prompt closed the block; a <think> the model writes later is content, and triggers fire
    assert "reasoning_budget_start_tag" not in llama_cpp_grammar(tmpl.apply(ask, tools, enable_thinking=False))
