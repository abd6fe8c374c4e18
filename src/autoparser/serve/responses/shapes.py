"""The Responses API's objects as this server writes them: ids, output items, usage, the ``response`` itself.

Ids are random, with OpenAI's prefixes: ``resp_`` for the response, ``rs_``, ``msg_`` and ``fc_`` for its output
items. A function call's ``call_id`` is not one of them: it is the call's id as the chat endpoint gives it (the one
the model wrote, else one in the format the template accepts), so that the next turn renders.

The response repeats the request (``Translation.echo``: tools, tool_choice, text, reasoning...), says
``store: false`` (nothing is kept), and carries ``autoparser_warnings`` (:func:`~..chunks.warnings_field`) when
there is something to say.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from ..chunks import Usage

__all__ = ["Envelope", "function_call", "message", "new_id", "reasoning", "usage"]


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(24)}"


def reasoning(item_id: str, text: str | None, status: str) -> dict[str, Any]:
    """A reasoning item: the model's reasoning as ``reasoning_text`` content (no summary: none is written)."""
    content = [] if text is None else [{"type": "reasoning_text", "text": text}]
    return {"id": item_id, "type": "reasoning", "summary": [], "content": content, "status": status}


def output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def message(item_id: str, text: str | None, status: str) -> dict[str, Any]:
    content = [] if text is None else [output_text(text)]
    return {"id": item_id, "type": "message", "role": "assistant", "status": status, "content": content}


def function_call(item_id: str, call_id: str, name: str, arguments: str, status: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "function_call",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": status,
    }


def usage(counts: Usage | None) -> dict[str, Any] | None:
    """The upstream's counts in the Responses form (cached and reasoning tokens are not counted apart: 0)."""
    if counts is None:
        return None
    return {
        "input_tokens": counts.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": counts.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": counts.prompt_tokens + counts.completion_tokens,
    }


class Envelope:
    """One response's identity (id, creation time, model) and what it repeats of the request."""

    def __init__(self, model: str, echo: dict[str, Any]) -> None:
        self.id = new_id("resp")
        self.created = int(time.time())
        self.model = model
        self.echo = echo

    def response(
        self,
        status: str,
        output: list[dict[str, Any]],
        counts: Usage | None = None,
        *,
        error: dict[str, Any] | None = None,
        incomplete: str | None = None,
        warnings: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "background": False,
            "error": error,
            "incomplete_details": {"reason": incomplete} if incomplete else None,
            "model": self.model,
            "output": output,
            **self.echo,
            "usage": usage(counts),
        }
        if status == "completed":
            body["completed_at"] = int(time.time())
        if warnings:
            body["autoparser_warnings"] = warnings
        return body
