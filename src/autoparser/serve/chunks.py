"""The shapes the client receives: ``chat.completion``, ``chat.completion.chunk``, usage, and the SSE framing.

Extension field: ``autoparser_warnings``, a list of ``{"message": str, "position": int | null}`` — what of the reply
did not parse as structure and was kept as content (``position``: its offset in the model's output), and what the
request had to degrade (``position`` null: ``ChatParams.warnings``). Non-streamed it is in
``choices[0].message``; streamed, in ``choices[0].delta`` of the chunk that carries the ``finish_reason``. It is
present only when there is something to say.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from ..message import ChatMessage, MessageDelta, ParseWarning

__all__ = [
    "DONE",
    "REASONING_FIELDS",
    "Reply",
    "Usage",
    "completion",
    "finish_reason",
    "sse",
    "warnings_field",
]

DONE = b"data: [DONE]\n\n"
# Where the reasoning goes in a message or delta: DeepSeek's and older vLLM's `reasoning_content` (the default), or
# newer vLLM's `reasoning`.
REASONING_FIELDS = ("reasoning_content", "reasoning")


@dataclass(frozen=True)
class Usage:
    """Token counts as the upstream reported them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    def to_openai(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }


def finish_reason(upstream_finish: str | None, has_calls: bool) -> str:
    """OpenAI's ``finish_reason``: ``length`` when the upstream hit its token limit, else ``tool_calls`` when the
    reply made calls, else ``stop``."""
    if upstream_finish == "length":
        return "length"
    return "tool_calls" if has_calls else "stop"


def warnings_field(parse_warnings: tuple[ParseWarning, ...], request_warnings: tuple[str, ...]) -> list[dict]:
    return [{"message": w, "position": None} for w in request_warnings] + [
        {"message": w.message, "position": w.position} for w in parse_warnings
    ]


class Reply:
    """One reply's identity (id, creation time, model) and its chunk and response bodies."""

    def __init__(self, model: str, reasoning_field: str = "reasoning_content") -> None:
        self.id = f"chatcmpl-{secrets.token_hex(12)}"
        self.created = int(time.time())
        self.model = model
        self.reasoning_field = reasoning_field
        self._frames: dict[bool, tuple[bytes, bytes]] = {}  # delta_event's envelope, before and after the delta

    def _named(self, fields: dict[str, Any]) -> dict[str, Any]:
        """``fields`` with the reasoning under the server's chosen name."""
        if self.reasoning_field != "reasoning_content" and "reasoning_content" in fields:
            fields = {(self.reasoning_field if k == "reasoning_content" else k): v for k, v in fields.items()}
        return fields

    def _envelope(self, kind: str) -> dict[str, Any]:
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model}

    def chunk(
        self,
        delta: dict[str, Any],
        finish: str | None = None,
        *,
        with_usage_field: bool = False,
    ) -> dict[str, Any]:
        body = self._envelope("chat.completion.chunk")
        body["choices"] = [{"index": 0, "delta": self._named(delta), "logprobs": None, "finish_reason": finish}]
        if with_usage_field:
            body["usage"] = None  # OpenAI: every chunk but the last carries "usage": null with include_usage
        return body

    def delta_event(self, delta: dict[str, Any], with_usage_field: bool = False) -> bytes:
        """``sse(self.chunk(delta, with_usage_field=...))``, the same bytes, made by dumping only the delta into the
        reply's fixed envelope (written once per reply): a streamed reply sends one per upstream read."""
        frame = self._frames.get(with_usage_field)
        if frame is None:
            marker = {"_": 0}
            whole = sse(self.chunk(marker, with_usage_field=with_usage_field))
            frame = self._frames[with_usage_field] = tuple(whole.split(_dumps(marker).encode(), 1))
        if len(delta) == 1:  # a token's delta is most often one text: written without json.dumps' layers
            ((name, value),) = delta.items()
            if type(value) is str:
                if name == "reasoning_content":
                    name = self.reasoning_field
                return frame[0] + f"{{{_string(name)}:{_string(value)}}}".encode() + frame[1]
        return frame[0] + _dumps(self._named(delta)).encode() + frame[1]

    def usage_chunk(self, usage: Usage) -> dict[str, Any]:
        body = self._envelope("chat.completion.chunk")
        body["choices"] = []
        body["usage"] = usage.to_openai()
        return body

    def response(self, message: dict[str, Any], finish: str, usage: Usage | None) -> dict[str, Any]:
        body = self._envelope("chat.completion")
        body["choices"] = [{"index": 0, "message": self._named(message), "logprobs": None, "finish_reason": finish}]
        if usage is not None:
            body["usage"] = usage.to_openai()
        return body


def completion(
    reply: Reply, message: ChatMessage, upstream_finish: str | None, usage: Usage | None, notes: tuple[str, ...]
) -> dict[str, Any]:
    """The ``chat.completion`` body for a parsed reply."""
    body = message.to_openai()
    found = warnings_field(message.warnings, notes)
    if found:
        body["autoparser_warnings"] = found
    return reply.response(body, finish_reason(upstream_finish, bool(message.tool_calls)), usage)


def delta_body(delta: MessageDelta | None) -> dict[str, Any]:
    return delta.to_openai() if delta is not None else {}


# A string as json.dumps(..., ensure_ascii=False) writes it (the same function it calls)
_string = json.encoder.encode_basestring


def _dumps(data: object) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def sse(data: dict[str, Any]) -> bytes:
    """One server-sent event."""
    return b"data: " + _dumps(data).encode() + b"\n\n"
