"""The instruction text a template writes for the model (phase P, rendering half; :mod:`.prose` reads it).

Some templates never render a tool call or a reasoning block, but tell the model the syntax in the system prompt
they inject: "respond only with <|tool_call|> followed by a JSON list", "enclose your thoughts inside <think>
</think> tags". The part of the prompt that carries such a statement is isolated by diffing renders of one user
message: with tools against without (the tool instructions), with a thinking switch on against off (the thinking
instructions), and the whole prompt (a fixed default system prompt).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...template.switches import ReasoningSwitch
from .. import needles
from ..diff import calculate_diff_split
from ..variants import VariantRenderer

__all__ = ["Instructions", "render_instructions"]

# System-prompt switches some templates look for (Nemotron, SmolLM3: "/think" and "/no_think").
_SLASH_SWITCH = ("/no_think", "/think")


@dataclass(frozen=True, slots=True)
class Instructions:
    """Instruction texts: each is only what the template adds, not the messages around it."""

    tools: str = ""  # written only when tools are given
    thinking: str = ""  # written only when a thinking switch is on
    prompt: str = ""  # the whole prompt for one user message, generation prompt included, thinking on


def render_instructions(
    renderer: VariantRenderer, supports_system_role: bool, switches: Sequence[ReasoningSwitch] = ()
) -> Instructions:
    """Render the variants and keep the text each switch adds: thinking off against on (``enable_thinking`` and
    the template's own ``switches``, whatever their names), each effort switch's lowest level against its highest,
    and a ``/no_think`` against a ``/think`` system message."""
    user = [needles.USER]
    plain = renderer.render(user, add_generation_prompt=True) or ""
    with_tools = renderer.render(user, tools=True, add_generation_prompt=True) or ""
    off, on = (
        renderer.render(user, add_generation_prompt=True, enable_thinking=t, switched=True) or "" for t in (False, True)
    )
    thinking = [_added(off, on)]
    for switch in switches:
        if switch.kind == "effort" and len(switch.values) >= 2:
            low, high = ({switch.variable: level} for level in (switch.values[0], switch.values[-1]))
            rendered = (renderer.render(user, add_generation_prompt=True, variables=v) or "" for v in (low, high))
            thinking.append(_added(*rendered))
    if supports_system_role:
        off_msg, on_msg = ({"role": "system", "content": switch} for switch in _SLASH_SWITCH)
        slash_off = renderer.render([off_msg, *user], add_generation_prompt=True) or ""
        slash_on = renderer.render([on_msg, *user], add_generation_prompt=True) or ""
        thinking.append(_added(slash_off, slash_on))
    return Instructions(
        tools=_added(plain, with_tools) if plain and with_tools else "",
        thinking="\n".join(t for t in thinking if t),
        prompt=plain,
    )


def _added(base: str, switched: str) -> str:
    """What ``switched`` writes in place of ``base`` (empty when either render failed)."""
    if not base or not switched or base == switched:
        return ""
    return calculate_diff_split(base, switched).right
