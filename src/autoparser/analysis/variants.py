"""Render pairs of conversation variants and diff them (the primitive every analysis phase builds on)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..template.capabilities import TemplateCapabilities
from ..template.probing import ProbeRenderer
from . import needles
from .diff import DiffSplit, after_prompt, calculate_diff_split, common_prefix_len

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

    __slots__ = ("_caps", "_probe", "_prompts")

    def __init__(self, probe: ProbeRenderer, caps: TemplateCapabilities) -> None:
        self._probe = probe
        self._caps = caps
        self._prompts: tuple[str, ...] | None = None

    def generation_prompt(self, enable_thinking: bool) -> str:
        """What ``add_generation_prompt`` appends after a user turn (thinking on or off through every switch)."""
        without = self.render([needles.USER], enable_thinking=enable_thinking, switched=True) or ""
        with_prompt = (
            self.render([needles.USER], add_generation_prompt=True, enable_thinking=enable_thinking, switched=True)
            or ""
        )
        return with_prompt[common_prefix_len(without, with_prompt) :]

    def after_prompt(self, text: str) -> str:
        """``text``, the start of an assistant turn taken from a diff, without a turn header the generation prompt
        (thinking on or off) writes: the model never writes it (see :func:`.diff.after_prompt`)."""
        if self._prompts is None:
            self._prompts = tuple(p for p in (self.generation_prompt(True), self.generation_prompt(False)) if p)
        return after_prompt(text, self._prompts)

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
        ``thinking`` set every reasoning switch of the template.

        Where a variant with tool calls fails to render, both are rendered again with reasoning in every assistant
        turn: some templates render calls only after the reasoning a model always writes first (Command A Reasoning
        raises on a call turn with neither reasoning nor text). The reasoning is then common to both renders."""
        switched = thinking[0] != thinking[1]

        def both(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]) -> tuple[str | None, str | None]:
            return (
                self.render(
                    a,
                    tools=tools,
                    add_generation_prompt=add_generation_prompt,
                    enable_thinking=thinking[0],
                    switched=switched,
                ),
                self.render(
                    b,
                    tools=tools,
                    add_generation_prompt=add_generation_prompt,
                    enable_thinking=thinking[1],
                    switched=switched,
                ),
            )

        out_a, out_b = both(a, b)
        if (not out_a or not out_b) and any(m.get("tool_calls") for m in (*a, *b)):
            out_a, out_b = both(_with_reasoning(a), _with_reasoning(b))
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


_REASONING_KEYS = ("reasoning_content", "reasoning", "thinking")


def _with_reasoning(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``messages`` with the reasoning needle in every assistant turn that has none."""
    return [
        {**m, "reasoning_content": needles.THINKING}
        if m.get("role") == "assistant" and not any(m.get(k) for k in _REASONING_KEYS)
        else m
        for m in messages
    ]
