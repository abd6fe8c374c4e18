"""The test oracle for the request side: a request normalised the way vLLM 0.32's chat serving normalises it, rendered
by transformers' own ``render_jinja_template``.

This mirrors vLLM's ``parse_chat_messages`` (content to parts or a joined string by the template's content format;
``content: null`` to an empty list or string; tool results' text parts joined; ``reasoning_content`` renamed to
``reasoning`` and both passed), ``_postprocess_messages`` (JSON-string arguments to objects, unparsable ones to ``{}``,
empty ``tool_calls`` dropped) and ``safe_apply_chat_template`` (developer to system where the template does not name
the developer role, then system messages merged). It is written independently of ``autoparser.requests`` on purpose
— it is what autoparser is compared with. Tools go in as sent (vLLM's own ``model_dump`` adds ``None`` fields, which
templates print; tests/integrations/test_vllm_requests.py compares with vLLM itself, that quirk included). Media parts
become ``{"type": "image"}`` for templates that read parts (text-only templates are where vLLM inserts a model's own
placeholder; no template here has one, so such requests have no oracle).

The content format comes from ``autoparser.requests.content_format``, which the vLLM environment checks against
vLLM's own detector on every bundled template.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from transformers.utils.chat_template_utils import render_jinja_template

from autoparser.requests import content_format

__all__ = ["NoOracle", "render", "vllm_messages"]

_TEXT_TYPES = {
    "text": "text",
    "input_text": "text",
    "output_text": "text",
    "refusal": "refusal",
    "thinking": "thinking",
}
_MEDIA = {
    "image_url": "image",
    "input_image": "image",
    "audio_url": "audio",
    "input_audio": "audio",
    "video_url": "video",
}


class NoOracle(Exception):
    """vLLM would render this request with placeholders of a real multimodal model: nothing to compare with."""


def _parts(content: Any, wrap: bool) -> list[Any]:
    if content is None:
        return []
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    out: list[Any] = []
    for part in content:
        kind = part.get("type")
        if kind in _TEXT_TYPES:
            text = part.get(_TEXT_TYPES[kind])
            if text is not None:
                out.append({"type": "text", "text": text} if wrap else text)
        elif kind in _MEDIA:
            if not wrap:
                raise NoOracle(f"a {kind} part for a string-format template")
            out.append({"type": _MEDIA[kind]})
        else:
            raise NoOracle(f"part type {kind!r}")
    return out


def vllm_messages(messages: list[dict[str, Any]], source: str) -> list[dict[str, Any]]:
    """``messages`` as vLLM hands them to the template whose source is ``source``."""
    wrap = content_format(source) == "openai"
    conversation: list[dict[str, Any]] = []
    for message in copy.deepcopy(messages):
        if message.get("reasoning_content") is not None and message.get("reasoning") is None:
            message["reasoning"] = message.pop("reasoning_content")
        message.pop("reasoning_content", None)
        role = message["role"]
        parts = _parts(message.get("content"), wrap)
        item: dict[str, Any] = {"role": role, "content": parts if wrap else "\n".join(parts)}
        if role == "assistant":
            if message.get("tool_calls") is not None:
                item["tool_calls"] = list(message["tool_calls"])
            if message.get("reasoning") is not None:
                item["reasoning"] = item["reasoning_content"] = message["reasoning"]
        elif role == "tool":
            if "tool_call_id" in message:
                item["tool_call_id"] = message["tool_call_id"]
            if isinstance(item["content"], list) and all(p.get("type") == "text" for p in item["content"]):
                item["content"] = "\n".join(p["text"] for p in item["content"])
        if isinstance(message.get("name"), str):
            item["name"] = message["name"]
        conversation.append(item)
    for item in conversation:
        calls = item.get("tool_calls")
        if item["role"] != "assistant" or calls is None:
            continue
        if not calls:
            del item["tool_calls"]
            continue
        for call in calls:
            function = call["function"]
            arguments = function.get("arguments")
            if not arguments:
                function["arguments"] = {}
            elif isinstance(arguments, str):
                try:
                    parsed = json.loads(arguments)
                except ValueError:
                    parsed = {}
                function["arguments"] = parsed if isinstance(parsed, dict) else {}
    if any(m["role"] == "developer" for m in conversation) and not ('"developer"' in source or "'developer'" in source):
        conversation = [{**m, "role": "system"} if m["role"] == "developer" else m for m in conversation]
        conversation = _consolidate(conversation)
    return conversation


def _consolidate(conversation: list[dict[str, Any]]) -> list[dict[str, Any]]:
    systems = [i for i, m in enumerate(conversation) if m["role"] == "system"]
    if systems in ([], [0]):
        return conversation
    texts = []
    for i in systems:
        content = conversation[i]["content"]
        if isinstance(content, list):
            content = "\n".join(p["text"] for p in content if "text" in p)
        if content:
            texts.append(content)
    return [{"role": "system", "content": "\n\n".join(texts)}, *(m for m in conversation if m["role"] != "system")]


def render(source: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, **context: Any) -> str:
    """transformers' rendering (with a generation prompt and empty special tokens, as autoparser's bundled templates
    have them)."""
    rendered, _ = render_jinja_template(
        [messages],
        tools=copy.deepcopy(tools),
        chat_template=source,
        add_generation_prompt=True,
        bos_token="",
        eos_token="",
        **context,
    )
    return rendered[0]
