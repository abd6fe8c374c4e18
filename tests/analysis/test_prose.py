"""Formats stated in a template's instructions (analysis/calls/instructions.py, analysis/calls/prose.py) and the known
syntaxes a template only names (analysis/workarounds.py KNOWN_SYNTAX), on the real bundled templates.

Expected markers are quoted from each template's own instruction text (or, for KNOWN_SYNTAX, the model card).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autoparser import ChatTemplate
from autoparser.analysis import needles
from autoparser.analysis.calls.instructions import Instructions, render_instructions
from autoparser.analysis.calls.prose import apply_prose, read_content_and_reasoning, read_markers, read_tool_format
from autoparser.analysis.model import (
    ContentAnalysis,
    ContentMode,
    ReasoningAnalysis,
    ReasoningMode,
    TemplateAnalysis,
    ToolFormat,
    ToolFormatMode,
    ToolsAnalysis,
)
from autoparser.analysis.variants import VariantRenderer
from autoparser.analysis.workarounds import Draft
from autoparser.template.capabilities import probe_capabilities
from autoparser.template.probing import ProbeRenderer
from autoparser.template.switches import probe_switches


def instructions(name: str) -> Instructions:
    template = ChatTemplate.load(name)
    probe = ProbeRenderer(template)
    caps = probe_capabilities(probe)
    probe.switches = probe_switches(probe, template.source)
    return render_instructions(VariantRenderer(probe, caps), caps.supports_system_role, probe.switches)


def analysis(name: str) -> TemplateAnalysis:
    return ChatTemplate.load(name).analysis


# --- reading marker statements ------------------------------------------------------------------------------------


def test_marker_pairs_and_their_kinds() -> None:
    text = (
        "Write your thoughts between <think></think>, then <response>...</response>. Use <|tool_call|> and "
        "<|thought_start|> x <|thought_end|>; [THINK]draft[/THINK]; [BEGIN FINAL RESPONSE] a [END FINAL RESPONSE]; "
        "tools in <tools></tools>; [BEGIN OF TASK INSTRUCTION] t [END OF TASK INSTRUCTION]; <tool_response>r"
        "</tool_response>; <|START_THINKING|>s<|END_THINKING|>"
    )
    found = {(p.open.text, p.close.text if p.close else None): p.kind for p in read_markers(text)}
    assert found == {
        ("<think>", "</think>"): "reasoning",
        ("<response>", "</response>"): "answer",
        ("<|tool_call|>", None): "call",
        ("<|thought_start|>", "<|thought_end|>"): "reasoning",
        ("[THINK]", "[/THINK]"): "reasoning",
        ("[BEGIN FINAL RESPONSE]", "[END FINAL RESPONSE]"): "answer",
        ("<tools>", "</tools>"): "other",
        ("[BEGIN OF TASK INSTRUCTION]", "[END OF TASK INSTRUCTION]"): "other",
        ("<tool_response>", "</tool_response>"): "other",
        ("<|START_THINKING|>", "<|END_THINKING|>"): "reasoning",
    }


def test_an_opener_pairs_only_with_its_own_bracket_style() -> None:
    pairs = read_markers("<think> a [/think] b </think>")
    assert [(p.open.text, p.close.text if p.close else None) for p in pairs] == [("<think>", "</think>")]


def test_hermes_style_statement_is_a_per_call_json_object() -> None:
    text = (
        "For each function call, return a json object with function name and arguments within "
        '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}'
        "\n</tool_call>"
    )
    fmt = read_tool_format(text)
    assert fmt is not None and fmt.mode is ToolFormatMode.JSON_NATIVE
    assert (fmt.per_call_start, fmt.per_call_end) == ("<tool_call>", "</tool_call>")
    assert (fmt.section_start, fmt.tools_array_wrapped) == ("", False)


def test_llama_style_parameters_key_and_a_list_in_markers() -> None:
    text = 'Reply <function_calls>[{"name": function name, "parameters": dict of arguments}]</function_calls>'
    fmt = read_tool_format(text)
    assert fmt is not None
    assert (fmt.section_start, fmt.section_end) == ("<function_calls>", "</function_calls>")
    assert fmt.tools_array_wrapped
    assert (fmt.name_field, fmt.args_field) == ("name", "parameters")


def test_declared_tools_are_not_a_stated_call() -> None:
    function = '{"name": "' + needles.FUN_FIRST + '", "parameters": {}}'
    declared = '<tool> {"type": "function", "function": ' + function + "} </tool>"
    assert read_tool_format(declared) is None


def test_a_pythonic_statement_is_not_read_as_json() -> None:
    # MiniCPM3 states Python calls; another phase reads those from the rendered calls.
    assert read_tool_format(instructions("openbmb-MiniCPM3-4B").tools) is None


# A bare word written right before the example call is its marker (issue 19): glued to the bracket, or on the same
# line where another sentence names the word as a marker.
WORD_MARKERS = [
    (
        "prefix function calls with toolcall marker (no closing marker required)\n* all calls in a single JSON list "
        'formatted as toolcall[{"name": [function name], "arguments": [function arguments as JSON]}, ...]',
        "section_start",
        "toolcall",
    ),
    (
        'Call tools like this: calls[{"name": "tool", "arguments": {}}]',  # glued: no other mention needed
        "section_start",
        "calls",
    ),
    (
        "Start your reply with the keyword FUNCTION_CALLS followed by a JSON array of calls, for example:\n"
        'FUNCTION_CALLS [{"name": "tool_name", "arguments": {"arg": "value"}}]',
        "section_start",
        "FUNCTION_CALLS",
    ),
    (
        "When a tool would help, write the word CALL: and then the call as a JSON object, one call per line:\n"
        'CALL: {"name": "the_tool", "parameters": {"param": "value"}}',
        "per_call_start",
        "CALL:",
    ),
    (
        "Each function call must be preceded by the token <<call>> ... Example: "
        '@call {"name": "f", "arguments": {}}',  # the word before the example is not the one named
        "per_call_start",
        "",
    ),
    ('Return the calls formatted as [{"name": "f", "arguments": {}}]', "section_start", ""),
    ('Reply with JSON like this: [{"name": "f", "arguments": {}}]', "section_start", ""),
    ('Example: {"name": "f", "arguments": {}}', "per_call_start", ""),
    ('Use functions {"name": "f", "arguments": {}} when needed.', "per_call_start", ""),  # never named a marker
]


@pytest.mark.parametrize(("text", "field", "word"), WORD_MARKERS)
def test_word_before_an_example_is_the_call_marker(text: str, field: str, word: str) -> None:
    fmt = read_tool_format(text)
    assert fmt is not None and fmt.mode is ToolFormatMode.JSON_NATIVE
    assert fmt.tools_array_wrapped == (field == "section_start")  # a list: section markers; one object: per call
    if word:
        assert getattr(fmt, field) == word
    assert not {fmt.section_start, fmt.per_call_start} - {word, ""}


TEMPLATES = Path(__file__).parent.parent / "data" / "templates"


@pytest.mark.parametrize(
    ("name", "section", "per_call", "args_key"),
    [
        ("prose-word-glued.jinja", "toolcall", "", "arguments"),
        ("prose-word-keyword.jinja", "FUNCTION_CALLS", "", "arguments"),
        ("prose-word-object.jinja", "", "CALL:", "parameters"),
    ],
)
def test_synthetic_templates_state_a_word_marker(name: str, section: str, per_call: str, args_key: str) -> None:
    result = ChatTemplate.from_file(TEMPLATES / name).analysis
    fmt = result.tools.format
    assert result.prose == ("tools",)
    assert (fmt.mode, fmt.section_start, fmt.per_call_start) == (ToolFormatMode.JSON_NATIVE, section, per_call)
    assert fmt.tools_array_wrapped == bool(section)
    assert fmt.args_field == args_key
    assert result.preserved_tokens == (section or per_call,)


def test_firefunction_renders_the_word_it_states() -> None:
    # Firefunction v2 states "prefix function calls with functools marker" and renders `functools[...]` too.
    result = analysis("fireworks-ai-llama-3-firefunction-v2")
    assert (result.tools.format.section_start, result.prose) == ("functools", ())


def test_answer_markers_after_stated_reasoning_end_the_reasoning() -> None:
    stated = read_content_and_reasoning(
        ["Analyze the problem and present your reasoning. Then answer in [BEGIN FINAL RESPONSE] ... [END FINAL "
         "RESPONSE]."]
    )
    assert stated == (
        ReasoningAnalysis(ReasoningMode.TAG_BASED, "", "[BEGIN FINAL RESPONSE]"),
        ContentAnalysis(ContentMode.END_DELIMITED, "", "[END FINAL RESPONSE]"),
    )
    assert read_content_and_reasoning(["Answer in [BEGIN FINAL RESPONSE] ... [END FINAL RESPONSE]."]) is None


# --- instruction texts of real templates --------------------------------------------------------------------------


def test_instruction_texts_are_what_each_switch_adds() -> None:
    granite = instructions("ibm-granite-granite-3.3-2B-Instruct")
    assert "respond only with <|tool_call|> followed by a JSON list" in granite.tools
    assert "between <think></think>" in granite.thinking  # the template's `thinking` switch, not enable_thinking
    assert needles.USER_MSG not in granite.tools + granite.thinking
    hammer = instructions("MadeAgents-Hammer2.1")
    assert "[BEGIN OF TASK INSTRUCTION]" in hammer.tools and hammer.thinking == ""
    smol = instructions("HuggingFaceTB-SmolLM3-3B")  # "/think" in the system prompt
    assert "<think> Thought section </think>" in smol.thinking


def test_default_system_prompts_state_reasoning() -> None:
    # Ministral's default system prompt: "...must follow the template below:[THINK]Your thoughts...[/THINK]Here,
    # provide a self-contained response." (its renders teach the same markers from thinking blocks).
    ministral = instructions("mistralai-Ministral-3-14B-Reasoning-2512")
    assert read_content_and_reasoning([ministral.prompt]) == (
        ReasoningAnalysis(ReasoningMode.TAG_BASED, "[THINK]", "[/THINK]"),
        ContentAnalysis(),
    )


# --- the analysis of templates that state their format --------------------------------------------------------------


def test_granite_3_3_calls_and_tags() -> None:
    result = analysis("ibm-granite-granite-3.3-2B-Instruct")
    fmt = result.tools.format
    assert (fmt.mode, fmt.section_start, fmt.tools_array_wrapped) == (ToolFormatMode.JSON_NATIVE, "<|tool_call|>", True)
    assert (fmt.name_field, fmt.args_field, fmt.per_call_start) == ("name", "arguments", "")
    assert (result.reasoning.start, result.reasoning.end) == ("<think>", "</think>")
    assert result.content == ContentAnalysis(ContentMode.WRAPPED_WITH_REASONING, "<response>", "</response>")
    assert result.prose == ("reasoning", "content", "tools") and result.workarounds == ()


def test_hammer_fenced_json_list() -> None:
    result = analysis("MadeAgents-Hammer2.1")
    fmt = result.tools.format
    assert (fmt.mode, fmt.section_start, fmt.section_end) == (ToolFormatMode.JSON_NATIVE, "```", "```")
    assert fmt.tools_array_wrapped and (fmt.name_field, fmt.args_field) == ("name", "arguments")
    assert result.prose == ("tools",) and not result.reasoning.enabled


@pytest.mark.parametrize(
    ("name", "start", "end", "mode"),
    [
        ("microsoft-Phi-4-reasoning", "<think>", "</think>", ReasoningMode.TAG_BASED),
        ("openbmb-MiniCPM3-4B", "<|thought_start|>", "<|thought_end|>", ReasoningMode.TAG_BASED),
        ("NousResearch-Hermes-4-14B", "<think>", "</think>", ReasoningMode.TAG_BASED),
        ("unsloth-Apriel-1.5", "", "[BEGIN FINAL RESPONSE]", ReasoningMode.DELIMITER),
    ],
)
def test_reasoning_stated_in_prose(name: str, start: str, end: str, mode: ReasoningMode) -> None:
    result = analysis(name)
    assert (result.reasoning.mode, result.reasoning.start, result.reasoning.end) == (mode, start, end)
    assert "reasoning" in result.prose


def test_apriel_answer_markers() -> None:
    result = analysis("unsloth-Apriel-1.5")
    assert result.content == ContentAnalysis(ContentMode.END_DELIMITED, "", "[END FINAL RESPONSE]")


def test_rendered_calls_win_over_prose() -> None:
    # Apriel 1.5's prose says "within <tool_call></tool_call> XML tags" but renders <tool_calls>[...]</tool_calls>.
    fmt = analysis("unsloth-Apriel-1.5").tools.format
    assert (fmt.section_start, fmt.section_end) == ("<tool_calls>", "</tool_calls>")
    assert "tools" not in analysis("unsloth-Apriel-1.5").prose


def test_prose_fills_only_empty_parts() -> None:
    found = ReasoningAnalysis(ReasoningMode.TAG_BASED, "<seed:think>", "</seed:think>")
    calls = ToolsAnalysis(ToolFormat(ToolFormatMode.JSON_NATIVE, per_call_start="<tool_call>"))
    draft = Draft(found, ContentAnalysis(), calls)
    stated = Instructions(
        tools='Reply with <|tool_call|> followed by a JSON list: [{"name": "f", "arguments": {}}]',
        thinking="Think inside <think></think>, answer inside <response></response>.",
    )
    assert apply_prose(stated, draft) == []
    assert (draft.reasoning, draft.content, draft.tools) == (found, ContentAnalysis(), calls)


def test_templates_without_stated_formats_learn_nothing_from_prose() -> None:
    for name in ("Qwen-Qwen3-0.6B", "meta-llama-Llama-3.1-8B-Instruct", "google-gemma-2-2b-it", "Qwen3-Coder"):
        assert analysis(name).prose == (), name


def test_dedicated_formats_are_left_alone() -> None:
    assert analysis("LFM2-8B-A1B").prose == ()


# --- known syntaxes a template only names ---------------------------------------------------------------------------


def test_cogito_deep_thinking_phrase() -> None:
    result = analysis("deepcogito-cogito-v1-preview-qwen-14B")
    assert "cogito-deep-thinking" in result.workarounds
    assert (result.reasoning.start, result.reasoning.end) == ("<think>", "</think>")
    assert result.tools.format.per_call_start.strip() == "<tool_call>"  # rendered, kept


def test_nemotron_mini_toolcall() -> None:
    result = analysis("nvidia-Nemotron-Mini-4B-Instruct")
    fmt = result.tools.format
    assert "nemotron-mini-toolcall" in result.workarounds
    assert (fmt.mode, fmt.per_call_start, fmt.per_call_end) == (ToolFormatMode.JSON_NATIVE, "<toolcall>", "</toolcall>")


def test_granite_3_2_phrases_are_not_preserved_tokens() -> None:
    source = ChatTemplate.load("ibm-granite-granite-3.3-2B-Instruct").source.replace(
        "Write your thoughts between <think></think> and write your response between <response></response>",
        "Write your thoughts after 'Here is my thought process:' and write your response after 'Here is my response:'",
    )
    result = ChatTemplate(source, name="granite-3.2.jinja").analysis
    assert (result.reasoning.start, result.reasoning.end) == ("Here is my thought process:", "Here is my response:")
    assert "granite-thought-process" in result.workarounds
    assert "Here is my response:" not in result.preserved_tokens
