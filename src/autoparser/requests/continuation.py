"""``continue_final_message``: the prompt ends inside the final assistant message, so the model continues it.

vLLM and transformers take the flag the same way: the conversation is rendered without a generation prompt, and
the prompt is cut right after the final message's text, dropping whatever the template writes after it (its end
of turn). The final message must be the assistant's and hold text: without text there is nothing to cut at, and a
prompt that ended with the closed turn would have the model start a new one instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import RequestError

__all__ = ["continued_prompt", "final_text"]


def final_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """The text the prompt must end with: the final message's content (its last text part, for parts). Raises
    :class:`RequestError` where there is no assistant message with text to continue."""
    if not messages:
        raise RequestError("messages", "continue_final_message needs a final assistant message to continue")
    last = messages[-1]
    where = f"messages[{len(messages) - 1}]"
    if last.get("role") != "assistant":
        raise RequestError(f"{where}.role", "continue_final_message needs the final message to be the assistant's")
    content = last.get("content")
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, Mapping) and p.get("type") == "text"]
        content = next((t for t in reversed(texts) if isinstance(t, str) and t.strip()), None)
    if not isinstance(content, str) or not content.strip():
        raise RequestError(f"{where}.content", "continue_final_message needs text in the final message to continue")
    return content


def continued_prompt(prompt: str, text: str) -> str:
    """``prompt`` (rendered without a generation prompt) cut right after the last place it shows ``text``: with
    the text's trailing whitespace where the template kept it, else without (a template that trims the content).
    Raises :class:`RequestError` when the prompt does not show the text at all."""
    core = text.strip()
    at = prompt.rfind(core)
    if at < 0:
        raise RequestError(
            "messages", "continue_final_message: the template does not show the final message's text in the prompt"
        )
    whole = text.lstrip()
    end = at + (len(whole) if prompt.startswith(whole, at) else len(core))
    return prompt[:end]
