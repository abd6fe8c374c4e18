"""The instruction text a template writes for the model (phase P, rendering half; :mod:`.prose` reads it).

Some templates never render a tool call or a reasoning block, but tell the model the syntax in the system prompt
they inject: "respond only with <|tool_call|> followed by a JSON list", "enclose your thoughts inside <think>
</think> tags". The part of the prompt that carries such a statement is isolated by diffing renders of one user
message: with tools against without (the tool instructions), with a thinking switch on against off (the thinking
instructions), and the whole prompt (a fixed default system prompt).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .. import needles
from ..diff import calculate_diff_split
from ..variants import VariantRenderer

__all__ = ["THINKING_SWITCHES", "Instructions", "render_instructions"]

# Template variables that switch thinking on, with an "off" and an "on" value. ``enable_thinking`` is passed on
# every render; the others are read by some templates only (Granite and Hermes 4 ``thinking``, MiniMax
# ``thinking_mode``, reasoning-effort levels).
THINKING_SWITCHES: tuple[tuple[str, Any, Any], ...] = (
    ("enable_thinking", False, True),
    ("thinking", False, True),
    ("thinking_mode", "disabled", "enabled"),
    ("reasoning_effort", "low", "high"),
)
# System-prompt switches some templates look for (Nemotron, SmolLM3: "/think" and "/no_think").
_SLASH_SWITCH = ("/no_think", "/think")


@dataclass(frozen=True, slots=True)
class Instructions:
    """Instruction texts: each is only what the template adds, not the messages around it."""

    tools: str = ""  # written only when tools are given
    thinking: str = ""  # written only when a thinking switch is on
    prompt: str = ""  # the whole prompt for one user message, generation prompt included, thinking on


def render_instructions(
    renderer: VariantRenderer, supports_system_role: bool, variables: frozenset[str] | None = None
) -> Instructions:
    """Render the variants and keep the text each switch adds. ``variables``: the names the template reads (a
    switch it never reads is not rendered); None renders every switch."""
    user = [needles.USER]
    plain = renderer.render(user, add_generation_prompt=True) or ""
    with_tools = renderer.render(user, tools=True, add_generation_prompt=True) or ""
    thinking: list[str] = []
    for name, off, on in THINKING_SWITCHES:
        if variables is None or name in variables:
            thinking.append(_added(_render_with(renderer, user, name, off), _render_with(renderer, user, name, on)))
    if supports_system_role:
        off_msg, on_msg = ({"role": "system", "content": switch} for switch in _SLASH_SWITCH)
        off = renderer.render([off_msg, *user], add_generation_prompt=True) or ""
        on = renderer.render([on_msg, *user], add_generation_prompt=True) or ""
        thinking.append(_added(off, on))
    return Instructions(
        tools=_added(plain, with_tools) if plain and with_tools else "",
        thinking="\n".join(t for t in thinking if t),
        prompt=plain,
    )


def _render_with(renderer: VariantRenderer, messages: list[Mapping[str, Any]], name: str, value: Any) -> str:
    if name == "enable_thinking":
        return renderer.render(messages, add_generation_prompt=True, enable_thinking=value) or ""
    return renderer.render(messages, add_generation_prompt=True, variables={name: value}) or ""


def _added(base: str, switched: str) -> str:
    """What ``switched`` writes in place of ``base`` (empty when either render failed)."""
    if not base or not switched or base == switched:
        return ""
    return calculate_diff_split(base, switched).right
