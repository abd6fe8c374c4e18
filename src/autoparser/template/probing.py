"""Rendering for analysis: probe conversations through a template without failing on its quirks.

Analysis renders dozens of synthetic conversations. Unlike a user's render, a probe must not fail just because
the template insists on inputs the probe does not care about, so :class:`ProbeRenderer`

* returns ``None`` instead of raising when the template raises (the probe then learns nothing);
* retries a render without tools with ``tools=[]`` (some tool-use templates iterate ``tools`` unconditionally);
* fills the date variables the serving stacks pass (``datetime``, ``date_string``) with a fixed date, and a
  ``functions`` JSON string for templates that read tools under that name (FireFunction);
* can wrap the inputs in access-tracking wrappers so the caller learns what the template read.

Renders are memoized per renderer: the analysis phases render the same base conversation many times.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ..errors import TemplateError
from .chat_template import with_reasoning_aliases
from .environment import variables_read
from .tracking import AccessLog, track

__all__ = ["ProbeRenderer", "RenderableTemplate"]

_FIXED_DATES = {"datetime": "Jan 01 2026", "date_string": "01 Jan 2026"}


class RenderableTemplate(Protocol):
    source: str
    bos_token: str
    eos_token: str

    def render_context(self, context: Mapping[str, Any]) -> str: ...

    def check_syntax(self) -> None: ...


class ProbeRenderer:
    """Renders probe conversations through one template (see the module docstring)."""

    __slots__ = ("_cache", "_needs_functions", "_template")

    def __init__(self, template: RenderableTemplate) -> None:
        template.check_syntax()
        self._template = template
        self._needs_functions = "functions" in variables_read(template.source)
        self._cache: dict[str, str | None] = {}

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        add_generation_prompt: bool = False,
        enable_thinking: bool = True,
        log: AccessLog | None = None,
    ) -> str | None:
        """The rendered text, or ``None`` if the template raised. With ``log``, inputs are tracked (no caching)."""
        key = ""
        if log is None:
            key = json.dumps([messages, tools, add_generation_prompt, enable_thinking], sort_keys=True, default=str)
            if key in self._cache:
                return self._cache[key]
        result = self._render(messages, tools, add_generation_prompt, enable_thinking, log)
        if result is None and not tools:
            result = self._render(messages, [], add_generation_prompt, enable_thinking, log)
        if log is None:
            self._cache[key] = result
        return result

    def _render(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        add_generation_prompt: bool,
        enable_thinking: bool,
        log: AccessLog | None,
    ) -> str | None:
        prepared: Any = with_reasoning_aliases(messages)
        tool_list: Any = [dict(t) for t in tools] if tools is not None else None
        context: dict[str, Any] = {
            "bos_token": self._template.bos_token,
            "eos_token": self._template.eos_token,
            "documents": None,
            **_FIXED_DATES,
            "add_generation_prompt": add_generation_prompt,
            "enable_thinking": enable_thinking,
        }
        if self._needs_functions:
            context["functions"] = json.dumps([t.get("function", t) for t in tools or []], indent=4)
        if log is not None:
            prepared = track(prepared, "messages", log)
            tool_list = track(tool_list, "tools", log) if tool_list is not None else None
        context["messages"] = prepared
        context["tools"] = tool_list
        try:
            return self._template.render_context(context)
        except TemplateError:
            return None
