"""Batch rows whose results can be checked: bundled templates' own renderings of assistant turns (the cases of
``autoparser check``, tests/support/outputs.py), each with the message that went into the rendering, and helpers
to compare messages that carry generated call ids (fresh on every parse) or came back through Parquet (absent
fields as nulls)."""

from __future__ import annotations

import json
from typing import Any

from autoparser import ChatParams
from autoparser.batch import BatchParser

from ..support import outputs
from ..support.corpus import canonical_json

# Four families: tagged calls (Qwen3-Coder), reasoning and tagged calls (Qwen3.5), JSON calls (Llama 3.3), a dedicated
# format with channels (gpt-oss)
TEMPLATES = ("Qwen3-Coder", "Qwen3.5-4B", "meta-llama-Llama-3.3-70B-Instruct", "openai-gpt-oss-120b")


def parser(template: str, **options: Any) -> BatchParser:
    """A batch parser for the request every case of ``template`` answers (as outputs.chat(template) applies it)."""
    return BatchParser(
        template,
        messages=outputs.conversation(template),
        tools=outputs.request_tools(template),
        parallel_tool_calls=True,
        enable_thinking=True,
        **options,
    )


def params(template: str) -> ChatParams:
    return outputs.chat(template)


def rows(template: str) -> list[dict[str, Any]]:
    """One row per case of ``template``: ``id`` (the case's key) and ``text`` (the template's own rendering)."""
    return [{"id": case.key, "text": case.text} for case in outputs.outputs(template)]


def expected(template: str) -> dict[str, dict[str, Any]]:
    """Each case's key → what went into its rendering: content, reasoning, calls (name, canonical arguments)."""
    return {
        case.key: {
            "content": case.content,
            "reasoning": case.reasoning,
            "calls": [(call.name, canonical_json(json.dumps(call.arguments))) for call in case.calls],
        }
        for case in outputs.outputs(template)
    }


def judged(message: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI message as the cases judge it."""
    calls = message.get("tool_calls") or []
    return {
        "content": message.get("content") or "",
        "reasoning": message.get("reasoning_content") or "",
        "calls": [(c["function"]["name"], canonical_json(c["function"]["arguments"])) for c in calls],
    }


def canonical(message: dict[str, Any] | None, text: str) -> dict[str, Any] | None:
    """``message`` with generated call ids (not in the reply ``text``) blanked, and the null fields a Parquet
    struct gives an absent key dropped (``content`` stays: null there is the OpenAI form of no content)."""
    if message is None:
        return None
    out = {k: v for k, v in message.items() if v is not None or k == "content"}
    if out.get("tool_calls"):
        out["tool_calls"] = [{**c, "id": c["id"] if c["id"] in text else ""} for c in out["tool_calls"]]
    return out
