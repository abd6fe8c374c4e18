"""Rendering for analysis: probe conversations through a template without failing on its quirks.

Analysis renders dozens of synthetic conversations. Unlike a user's render, a probe must not fail just because
the template insists on inputs the probe does not care about, so :class:`ProbeRenderer`

* returns ``None`` instead of raising when the template raises (the probe then learns nothing);
* retries a render without tools with ``tools=[]`` (some tool-use templates iterate ``tools`` unconditionally);
* fills the date variables the serving stacks pass (``datetime``, ``date_string``) with a fixed date, and a
  ``functions`` JSON string for templates that read tools under that name (FireFunction);
* can wrap the inputs in access-tracking wrappers so the caller learns what the template read.

Renders are memoized per renderer: the analysis phases render the same base conversation many times, and
variants that differ only in variables the template never reads (``tools``, ``enable_thinking``, a switch) once.

Limits are the exception to "a failed probe learns nothing": a render that runs past its time or size limit
(:class:`~autoparser.errors.RenderLimitError`) says the template is hostile or broken, not that it dislikes the
probe, so it propagates and ends the analysis. All renders of one renderer also share a single time budget —
the template's ``limits.analysis_timeout``, counted from the renderer's creation — so a template that is merely
slow on every probe cannot make analysis take dozens of timeouts either.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from ..errors import RenderLimitError, TemplateError
from .chat_template import with_reasoning_aliases
from .environment import variables_read
from .limits import RenderLimits
from .switches import ReasoningSwitch, switch_context
from .tracking import AccessLog, track

__all__ = ["ProbeRenderer", "RenderableTemplate"]

_FIXED_DATES = {"datetime": "Jan 01 2026", "date_string": "01 Jan 2026"}


class RenderableTemplate(Protocol):
    source: str
    bos_token: str
    eos_token: str
    name: str
    limits: RenderLimits

    def render_context(self, context: Mapping[str, Any], *, limits: RenderLimits | None = None) -> str: ...

    def check_syntax(self) -> None: ...


class ProbeRenderer:
    """Renders probe conversations through one template (see the module docstring)."""

    __slots__ = ("_cache", "_deadline", "_needs_functions", "_reads", "_template", "switches")

    def __init__(self, template: RenderableTemplate) -> None:
        template.check_syntax()
        self._template = template
        self._reads = variables_read(template.source)
        self._needs_functions = "functions" in self._reads
        self._cache: dict[str, str | None] = {}
        budget = template.limits.analysis_timeout
        self._deadline = None if budget is None else time.monotonic() + budget
        # The template's reasoning switches once probed (:mod:`.switches`): a ``switched`` render with thinking on
        # or off sets them to match, whatever the template calls them.
        self.switches: tuple[ReasoningSwitch, ...] = ()

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        add_generation_prompt: bool = False,
        enable_thinking: bool | None = True,
        log: AccessLog | None = None,
        variables: Mapping[str, Any] | None = None,
        switched: bool = False,
    ) -> str | None:
        """The rendered text, or ``None`` if the template raised. With ``log``, inputs are tracked (no caching).

        ``enable_thinking=None`` leaves the variable undefined. With ``switched``, the template's other reasoning
        switches (:attr:`switches`) are set to match ``enable_thinking`` too (renders that compare thinking on and
        off; other renders leave them at the template's default, which history turns may depend on: Hermes 4 splits
        every answer at ``</think>`` when its ``thinking`` is on). ``variables`` are further template variables
        (they win)."""
        key = ""
        extra = {**(switch_context(self.switches, enable_thinking) if switched else {}), **(variables or {})}
        if log is None:
            key = self._key(messages, tools, add_generation_prompt, enable_thinking, extra)
            if key in self._cache:
                return self._cache[key]
        result = self._render(messages, tools, add_generation_prompt, enable_thinking, log, extra)
        if result is None and not tools:
            result = self._render(messages, [], add_generation_prompt, enable_thinking, log, extra)
        if log is None:
            self._cache[key] = result
        return result

    def _key(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        add_generation_prompt: bool,
        enable_thinking: bool | None,
        extra: dict[str, Any],
    ) -> str:
        """The memo key of a render: its inputs, less the variables the template never reads (a Jinja template
        reads its context only through names in its source: one that never names ``tools`` renders the same with
        any tools, and the analysis asks for such variants). Dropping them keys equal renders alike."""
        reads = self._reads
        return json.dumps(
            [
                messages,
                tools if "tools" in reads or self._needs_functions else None,
                add_generation_prompt if "add_generation_prompt" in reads else None,
                enable_thinking if "enable_thinking" in reads else None,
                {name: value for name, value in extra.items() if name in reads},
            ],
            sort_keys=True,
            default=str,
        )

    def _render(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        add_generation_prompt: bool,
        enable_thinking: bool | None,
        log: AccessLog | None,
        extra: dict[str, Any],
    ) -> str | None:
        prepared: Any = with_reasoning_aliases(messages)
        tool_list: Any = [dict(t) for t in tools] if tools is not None else None
        context: dict[str, Any] = {
            "bos_token": self._template.bos_token,
            "eos_token": self._template.eos_token,
            "documents": None,
            **_FIXED_DATES,
            **extra,
            "add_generation_prompt": add_generation_prompt,
        }
        if enable_thinking is not None:
            context["enable_thinking"] = enable_thinking
        if self._needs_functions:
            context["functions"] = json.dumps([t.get("function", t) for t in tools or []], indent=4)
        if log is not None:
            prepared = track(prepared, "messages", log)
            tool_list = track(tool_list, "tools", log) if tool_list is not None else None
        context["messages"] = prepared
        context["tools"] = tool_list
        limits = self._remaining_limits()
        try:
            return self._template.render_context(context, limits=limits)
        except RenderLimitError as err:
            if limits is not self._template.limits and err.limit == "timeout":
                raise self._out_of_time(err.line) from err  # the shared budget ran out, not the template's timeout
            raise
        except TemplateError:
            return None

    def _remaining_limits(self) -> RenderLimits:
        """The template's limits, with the timeout cut down to what is left of the shared analysis budget."""
        limits = self._template.limits
        if self._deadline is None:
            return limits
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise self._out_of_time(None)
        if limits.timeout is not None and limits.timeout <= remaining:
            return limits  # the template's own per-render timeout is the tighter bound
        return replace(limits, timeout=remaining)

    def _out_of_time(self, line: int | None) -> RenderLimitError:
        return RenderLimitError(
            self._template.name,
            f"analysis took longer than its time limit of {self._template.limits.analysis_timeout:g} s "
            "(raise it with limits=RenderLimits(analysis_timeout=...) if the template is trusted)",
            line,
            limit="analysis_timeout",
        )
