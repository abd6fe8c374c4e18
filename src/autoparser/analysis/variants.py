"""Render pairs of conversation variants and diff them (the primitive every analysis phase builds on)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..template.capabilities import TemplateCapabilities
from ..template.probing import ProbeRenderer
from . import needles
from .diff import DiffSplit, calculate_diff_split

__all__ = ["Comparison", "VariantRenderer"]


@dataclass(frozen=True, slots=True)
class Comparison:
    """Two renders and their diff: ``a = prefix + left + suffix``, ``b = prefix + right + suffix``."""

    diff: DiffSplit
    a: str
    b: str


class VariantRenderer:
    """Renders probe conversations the way analysis needs them.

    Tool-call arguments are passed as objects or JSON strings depending on what the template reads
    (``supports_object_arguments``), and tools are the two dummy functions from :mod:`.needles`.
    """

    __slots__ = ("_caps", "_probe")

    def __init__(self, probe: ProbeRenderer, caps: TemplateCapabilities) -> None:
        self._probe = probe
        self._caps = caps

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: bool = False,
        add_generation_prompt: bool = False,
        enable_thinking: bool = True,
        variables: Mapping[str, Any] | None = None,
        switched: bool = False,
    ) -> str | None:
        """``switched``: thinking on or off through every reasoning switch of the template, not only
        ``enable_thinking`` (see :meth:`ProbeRenderer.render`)."""
        prepared = [self._prepare(m) for m in messages]
        return self._probe.render(
            prepared,
            needles.TOOLS if tools else None,
            add_generation_prompt=add_generation_prompt,
            enable_thinking=enable_thinking,
            variables=variables,
            switched=switched,
        )

    def compare(
        self,
        a: Sequence[Mapping[str, Any]],
        b: Sequence[Mapping[str, Any]],
        *,
        tools: bool = False,
        add_generation_prompt: bool = False,
        thinking: tuple[bool, bool] = (True, True),
    ) -> Comparison | None:
        """Render both variants; ``None`` when either render fails or comes out empty. Variants that differ in
        ``thinking`` set every reasoning switch of the template."""
        switched = thinking[0] != thinking[1]
        out_a, out_b = (
            self.render(
                m, tools=tools, add_generation_prompt=add_generation_prompt, enable_thinking=t, switched=switched
            )
            for m, t in ((a, thinking[0]), (b, thinking[1]))
        )
        if not out_a or not out_b:
            return None
        return Comparison(calculate_diff_split(out_a, out_b), out_a, out_b)

    def _prepare(self, message: Mapping[str, Any]) -> Mapping[str, Any]:
        calls = message.get("tool_calls")
        if not calls or self._caps.supports_object_arguments:
            return message
        converted = []
        for call in calls:
            function = dict(call["function"])
            if not isinstance(function["arguments"], str):
                function["arguments"] = json.dumps(function["arguments"], ensure_ascii=False)
            converted.append({**call, "function": function})
        return {**message, "tool_calls": converted}
