"""Template-specific corrections for what differential analysis cannot see.

Some templates hide their model's markup from every render: old Qwen/DeepSeek templates strip ``<think>``
blocks from history, Functionary 3.1's template renders calls differently from how the model writes them. Each
workaround is triggered by a distinctive substring of the template source, applies after the generic analysis,
and is reported by name in ``TemplateAnalysis.workarounds``.

Syntax a template states in its instructions with markers is read generically (:mod:`.calls.prose`). What a template
only *names* — a phrase that switches thinking on, a call tag known from the model card — is data in
:data:`KNOWN_SYNTAX`, applied where the analysis found nothing.
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
    ToolFormat,
    ToolFormatMode,
    ToolsAnalysis,
)

__all__ = ["KNOWN_SYNTAX", "Draft", "KnownSyntax", "apply_workarounds"]


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
    ("command-r-plus", _command_r_plus),
    ("functionary-v3.1", _functionary_v3_1),
    ("deepseek-r1-distill", _deepseek_r1_distill),
    ("openpangu", _open_pangu),
)


@dataclass(frozen=True, slots=True)
class KnownSyntax:
    """What a model writes although its template neither renders it nor states it with markers.

    ``triggers``: substrings that must all occur in the template source. ``reasoning``: start and end of the
    reasoning block (a phrase is a marker too). ``json_call``: the markers around each JSON call object.
    Each part applies only where the analysis found nothing.
    """

    name: str
    triggers: tuple[str, ...]
    reasoning: tuple[str, str] | None = None
    json_call: tuple[str, str] | None = None


KNOWN_SYNTAX: tuple[KnownSyntax, ...] = (
    # Cogito: "Enable deep thinking subroutine." in the system prompt; the model then writes <think>...</think>.
    KnownSyntax("cogito-deep-thinking", ("Enable deep thinking subroutine.",), reasoning=("<think>", "</think>")),
    # Granite 3.2 names two phrases: "Write your thoughts after 'Here is my thought process:' and write your
    # response after 'Here is my response:'" (3.3 states <think>/<response> tags instead, read from prose).
    KnownSyntax(
        "granite-thought-process",
        ("Here is my thought process:", "Here is my response:"),
        reasoning=("Here is my thought process:", "Here is my response:"),
    ),
    # Nemotron-Mini declares tools as <tool> {json} </tool> and never shows a call; its card (and the model)
    # writes <toolcall> {"name": ..., "arguments": {...}} </toolcall>.
    KnownSyntax(
        "nemotron-mini-toolcall",
        ("<extra_id_0>System", "<tool> ' + tool|tojson + ' </tool>"),
        json_call=("<toolcall>", "</toolcall>"),
    ),
)


def _apply_known(entry: KnownSyntax, draft: Draft) -> bool:
    applied = False
    if entry.reasoning is not None and not draft.reasoning.enabled:
        draft.reasoning = ReasoningAnalysis(ReasoningMode.TAG_BASED, *entry.reasoning)
        applied = True
    if entry.json_call is not None and draft.tools.format.mode is ToolFormatMode.NONE:
        start, end = entry.json_call
        fmt = ToolFormat(ToolFormatMode.JSON_NATIVE, per_call_start=start, per_call_end=end)
        draft.tools = ToolsAnalysis(dataclasses.replace(fmt, parameter_order=(fmt.name_field, fmt.args_field)))
        applied = True
    return applied


def apply_workarounds(source: str, draft: Draft) -> list[str]:
    """Apply every matching workaround in order, then the known syntaxes; the names of those applied."""
    applied = [name for name, fix in WORKAROUNDS if fix(source, draft)]
    for entry in KNOWN_SYNTAX:
        if all(trigger in source for trigger in entry.triggers) and _apply_known(entry, draft):
            applied.append(entry.name)
    return applied
