"""Which content shape a chat template expects: one string per message, or OpenAI's list of typed parts.

Serving stacks must decide before rendering whether ``[{"type": "text", "text": ...}, ...]`` reaches the template
as it is or joined into one string. vLLM decides from the template's syntax tree — a template that loops over a
message's ``content`` reads parts ("openai"), any other reads a string ("string") — and autoparser decides the same
way, so that its prompts match the ones vLLM renders. The walk (:mod:`autoparser.template.content_loops`) runs on the
tree the template is compiled from, so the source is parsed once for both.

The syntax tree says what a template *can* read, not that every role reads it: :mod:`.profile` checks per role by
rendering.
"""

from __future__ import annotations

from typing import Literal

import jinja2

from ..template.environment import loops_over_message_content
from ..template.limits import LimitExceeded

__all__ = ["ContentFormat", "content_format"]

ContentFormat = Literal["string", "openai"]


def content_format(source: str) -> ContentFormat:
    """``"openai"`` if the template iterates over a message's content parts, else ``"string"`` (also for a
    template that does not compile: it will fail to render anyway, with its own error)."""
    try:
        return "openai" if loops_over_message_content(source) else "string"
    except (jinja2.TemplateError, LimitExceeded, RecursionError, MemoryError):
        return "string"
