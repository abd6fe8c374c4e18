"""Template-specific corrections for what differential analysis cannot see.

Some templates hide their model's markup from every render: old Qwen/DeepSeek templates strip ``<think>``
blocks from history, Granite describes its tags only in prose, Functionary 3.1's template renders calls
differently from how the model writes them. Each workaround is triggered by a distinctive substring of the
template source, applies after the generic analysis, and is reported by name in ``TemplateAnalysis.workarounds``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

from .model import (
    ContentAnalysis,
    ContentMode,
    FunctionMarkers,
    ReasoningAnalysis,
    ReasoningMode,
    ToolsAnalysis,
)

__all__ = ["Draft", "apply_workarounds"]


@dataclass(slots=True)
class Draft:
    """The analysis parts a workaround may change."""

    reasoning: ReasoningAnalysis
    content: ContentAnalysis
    tools: ToolsAnalysis
    extra_preserved: list[str] = field(default_factory=list)
    preserved_override: list[str] | None = None


def _think_tags(draft: Draft, start: str = "<think>") -> None:
    draft.reasoning = ReasoningAnalysis(ReasoningMode.TAG_BASED, start, "</think>")


def _old_thinking_templates(source: str, draft: Draft) -> bool:
    """Qwen/DeepSeek templates that split ``</think>`` off history but never render reasoning."""
    if (
        "content.split('</think>')" in source
        and "reasoning_content" not in source
        and "<SPECIAL_12>" not in source
        and draft.reasoning.mode is ReasoningMode.NONE
    ):
        _think_tags(draft)
        draft.extra_preserved += ["<think>", "</think>"]
        return True
    return False


def _laguna(source: str, draft: Draft) -> bool:
    if "laguna_glm_thinking" in source and '{{- "<assistant>\\n" -}}' in source and "{{- '<think>' -}}" in source:
        draft.reasoning = ReasoningAnalysis(ReasoningMode.TAG_BASED, "", "</think>")
        draft.content = ContentAnalysis(ContentMode.END_DELIMITED, "", "</assistant>")
        return True
    return False


def _granite(source: str, draft: Draft) -> bool:
    phrase = "Write your thoughts between <think></think> and write your response between <response></response>"
    if phrase in source:
        _think_tags(draft)
        draft.content = ContentAnalysis(ContentMode.WRAPPED_WITH_REASONING, "<response>", "</response>")
        return True
    return False


def _command_r_plus(source: str, draft: Draft) -> bool:
    if "<|CHATBOT_TOKEN|>" in source and "<|END_OF_TURN_TOKEN|>" in source and not draft.content.start:
        draft.content = ContentAnalysis(ContentMode.ALWAYS_WRAPPED, "<|CHATBOT_TOKEN|>", "<|END_OF_TURN_TOKEN|>")
        return True
    return False


def _functionary_v3_1(source: str, draft: Draft) -> bool:
    trigger = 'set has_code_interpreter = tools | selectattr("type", "equalto", "code_interpreter") | list | length > 0'
    if trigger not in source:
        return False
    draft.content = ContentAnalysis()
    fmt = dataclasses.replace(
        draft.tools.format, section_start="", section_end="", per_call_start="<function=", per_call_end="</function>"
    )
    draft.tools = dataclasses.replace(
        draft.tools, format=fmt, function=dataclasses.replace(draft.tools.function, name_prefix="", close="")
    )
    draft.preserved_override = ["<|eot_id|>", "<|eom_id|>", "<function=", ">", "</function>"]
    return True


def _deepseek_r1_distill(source: str, draft: Draft) -> bool:
    trigger = "{{'<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>'"
    if trigger not in source:
        return False
    fmt = dataclasses.replace(
        draft.tools.format,
        section_start="<｜tool▁calls▁begin｜>",
        section_end="<｜tool▁calls▁end｜>",
        per_call_start="<｜tool▁call▁begin｜>function",
        per_call_end="<｜tool▁call▁end｜>",
    )
    function = FunctionMarkers("<｜tool▁sep｜>", draft.tools.function.name_suffix, "```")
    draft.tools = dataclasses.replace(draft.tools, format=fmt, function=function)
    return True


def _open_pangu(source: str, draft: Draft) -> bool:
    if "<|pangu_text_start|>" in source:
        draft.reasoning = ReasoningAnalysis(ReasoningMode.TAG_BASED, "", "</think>")
        return True
    return False


WORKAROUNDS: tuple[tuple[str, Callable[[str, Draft], bool]], ...] = (
    ("old-thinking-template", _old_thinking_templates),
    ("laguna", _laguna),
    ("granite-3.3", _granite),
    ("command-r-plus", _command_r_plus),
    ("functionary-v3.1", _functionary_v3_1),
    ("deepseek-r1-distill", _deepseek_r1_distill),
    ("openpangu", _open_pangu),
)


def apply_workarounds(source: str, draft: Draft) -> list[str]:
    """Apply every matching workaround in order; the names of those applied."""
    return [name for name, fix in WORKAROUNDS if fix(source, draft)]
