"""Template analysis on real templates (beyond the golden comparison) and on synthetic edge cases."""

from __future__ import annotations

import json

import pytest

from autoparser import ChatTemplate, bundled_templates
from autoparser.analysis.analyzer import analyze_template
from autoparser.analysis.formats import DEDICATED_FORMATS, GENERIC
from autoparser.analysis.model import ContentMode, ReasoningMode, ToolFormatMode
from autoparser.errors import TemplateError

ALL = bundled_templates()


@pytest.mark.parametrize("name", ALL)
def test_every_bundled_template_analyzes(name: str) -> None:
    analysis = ChatTemplate.load(name).analysis
    data = analysis.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["format"] in {GENERIC, *(n for n, _ in DEDICATED_FORMATS)}
    assert data["template"] == f"{name}.jinja"
    # Preserved tokens are exactly the non-empty trimmed markers, each once.
    assert len(set(analysis.preserved_tokens)) == len(analysis.preserved_tokens)
    assert all(t == t.strip() and t for t in analysis.preserved_tokens)


def test_analysis_is_computed_once_per_template_source() -> None:
    first = ChatTemplate.load("Qwen3-Coder").analysis
    assert ChatTemplate.load("Qwen3-Coder").analysis is first
    assert ChatTemplate.load("Qwen3-Coder", bos_token="<s>").analysis is not first


@pytest.mark.parametrize(
    ("name", "mode", "start", "end"),
    [
        # Thinking on opens <think> in the prompt, thinking off closes the block: FORCED_CLOSED.
        ("Qwen3.5-4B", ReasoningMode.FORCED_CLOSED, "<think>\n", "\n</think>\n\n"),
        ("GLM-4.7-Flash", ReasoningMode.FORCED_CLOSED, "<think>", "</think>"),
        # The prompt always opens the block: FORCED_OPEN.
        ("StepFun3.5-Flash", ReasoningMode.FORCED_OPEN, "<think>\n", "\n</think>\n"),
        (
            "Apriel-1.6-15b-Thinker-fixed",
            ReasoningMode.FORCED_OPEN,
            "<|begin_assistant|>\n",
            "\n[BEGIN FINAL RESPONSE]\n",
        ),
        # The model opens the block itself.
        ("Qwen-Qwen3-0.6B", ReasoningMode.TAG_BASED, "<think>\n", "\n</think>\n\n"),
        # Reasoning is rendered only next to tool calls.
        (
            "CohereForAI-c4ai-command-r7b-12-2024-tool_use",
            ReasoningMode.TOOLS_ONLY,
            "<|START_THINKING|>",
            "<|END_THINKING|>",
        ),
        ("Qwen3-Coder", ReasoningMode.NONE, "", ""),
        # Only typed {"type": "thinking"} content blocks carry reasoning in this template.
        ("mistralai-Ministral-3-14B-Reasoning-2512", ReasoningMode.TAG_BASED, "[THINK]", "[/THINK]"),
    ],
)
def test_reasoning_modes(name: str, mode: ReasoningMode, start: str, end: str) -> None:
    reasoning = ChatTemplate.load(name).analysis.reasoning
    assert (reasoning.mode, reasoning.start, reasoning.end) == (mode, start, end)


def test_minimax_m2_tagged_xml_calls() -> None:
    # Not in the reference's golden file: checked by hand against the template.
    analysis = ChatTemplate.load("MiniMax-M2").analysis
    tools = analysis.tools
    assert analysis.format == GENERIC
    assert tools.format.mode is ToolFormatMode.TAG_WITH_TAGGED
    assert (tools.format.section_start, tools.format.section_end) == ("<minimax:tool_call>\n", "</minimax:tool_call>")
    assert (tools.function.name_prefix, tools.function.name_suffix, tools.function.close) == (
        '<invoke name="',
        '">\n',
        "</invoke>\n",
    )
    assert (tools.arguments.name_prefix, tools.arguments.name_suffix, tools.arguments.value_suffix) == (
        '<parameter name="',
        '">',
        "</parameter>\n",
    )


@pytest.mark.parametrize(
    ("name", "per_call_start", "name_suffix"),
    [
        ("unsloth-mistral-Devstral-Small-2507", "[TOOL_CALLS]", "[ARGS]"),
        ("mistralai-Ministral-3-14B-Reasoning-2512", "[TOOL_CALLS]", "[ARGS]"),
    ],
)
def test_mistral_name_args_calls_are_generic(name: str, per_call_start: str, name_suffix: str) -> None:
    analysis = ChatTemplate.load(name).analysis
    assert analysis.format == GENERIC
    assert analysis.tools.format.mode is ToolFormatMode.TAG_WITH_JSON
    assert analysis.tools.format.per_call_start == per_call_start
    assert analysis.tools.function.name_suffix == name_suffix


def test_call_id_section_is_not_part_of_the_name_suffix() -> None:
    tools = ChatTemplate.load("Mistral-Small-3.2-24B-Instruct-2506").analysis.tools
    assert tools.function.name_suffix == ""
    assert (tools.call_id.position.value, tools.call_id.prefix, tools.call_id.suffix) == (
        "BETWEEN_FUNC_AND_ARGS",
        "[CALL_ID]",
        "[ARGS]",
    )


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("openai-gpt-oss-120b", "gpt-oss"),
        ("meetkai-functionary-medium-v3.2", "functionary-v3.2"),
        ("moonshotai-Kimi-K2", "kimi-k2"),
        ("Kimi-K2-Instruct", "kimi-k2"),
        ("Kimi-K2-Thinking", "kimi-k2"),
        ("MiroThinker", "mirothinker"),
        ("LFM2-8B-A1B", "lfm2"),
        ("LFM2.5-Instruct", "lfm2.5"),
        ("deepseek-ai-DeepSeek-V3.2", "deepseek-dsml"),
        ("deepseek-ai-DeepSeek-V4", "deepseek-dsml"),
        ("google-gemma-4-31B-it", "gemma4"),
        ("google-gemma-4-31B-it-interleaved", "gemma4"),
        ("Cohere2MoE", GENERIC),
        ("GigaChat3-10B-A1.8B", GENERIC),
        ("Qwen3-Coder", GENERIC),
    ],
)
def test_dedicated_format_detection(name: str, fmt: str) -> None:
    assert ChatTemplate.load(name).analysis.format == fmt


def test_cohere2_is_covered_by_the_generic_markers() -> None:
    analysis = ChatTemplate.load("Cohere2MoE").analysis
    # The prompt opens <|START_THINKING|>; with its `reasoning` switch off it writes the block closed.
    assert analysis.reasoning.mode is ReasoningMode.FORCED_CLOSED
    assert (analysis.content.mode, analysis.content.start, analysis.content.end) == (
        ContentMode.ALWAYS_WRAPPED,
        "<|START_TEXT|>",
        "<|END_TEXT|>",
    )
    fmt = analysis.tools.format
    assert (fmt.mode, fmt.section_start, fmt.section_end, fmt.tools_array_wrapped) == (
        ToolFormatMode.JSON_NATIVE,
        "<|START_ACTION|>",
        "<|END_ACTION|>",
        True,
    )
    assert (fmt.name_field, fmt.args_field, fmt.gen_id_field) == ("tool_name", "parameters", "tool_call_id")


# --- synthetic templates -------------------------------------------------------------------------------------

DELIMITED = """{%- for m in messages -%}
{%- if m.role == 'user' -%}USER: {{ m.content }}
{% else -%}ASSISTANT: {% if m.reasoning_content %}{{ m.reasoning_content }}
[END OF THOUGHTS]
{% endif %}{{ m.content }}
{% endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}ASSISTANT: {% endif -%}"""


def test_delimiter_reasoning_has_only_an_end_marker() -> None:
    reasoning = ChatTemplate(DELIMITED, name="delimited.jinja").analysis.reasoning
    assert reasoning.mode is ReasoningMode.DELIMITER
    assert (reasoning.start, reasoning.end) == ("", "[END OF THOUGHTS]\n")  # leading whitespace is optional


def test_template_that_always_raises_yields_an_empty_analysis() -> None:
    analysis = ChatTemplate("{{ raise_exception('no') }}", name="raises.jinja").analysis
    assert analysis.reasoning.mode is ReasoningMode.NONE
    assert analysis.tools.format.mode is ToolFormatMode.NONE
    assert not analysis.capabilities.supports_tool_calls and not analysis.capabilities.supports_string_content


def test_syntax_error_is_a_template_error_with_line() -> None:
    with pytest.raises(TemplateError) as info:
        analyze_template(ChatTemplate("ok\n{% if %}", name="bad.jinja"), "bad.jinja")
    assert info.value.line == 2 and "bad.jinja" in str(info.value)


def test_sandbox_escape_attempt_does_not_run() -> None:
    source = "{{ ''.__class__.__mro__[1].__subclasses__() }}{% for m in messages %}{{ m.content }}{% endfor %}"
    analysis = ChatTemplate(source, name="evil.jinja").analysis
    assert not analysis.capabilities.supports_string_content


def test_granite_tags_come_from_its_prose() -> None:
    # "Write your thoughts between <think></think> and write your response between <response></response>"
    analysis = ChatTemplate.load("ibm-granite-granite-3.3-2B-Instruct").analysis
    assert "granite-3.3" not in analysis.workarounds and "reasoning" in analysis.prose
    assert analysis.content.mode is ContentMode.WRAPPED_WITH_REASONING
    assert (analysis.reasoning.start, analysis.reasoning.end) == ("<think>", "</think>")


def test_laguna_workaround_on_its_trigger_strings() -> None:
    source = (
        "{# laguna_glm_thinking #}{% for m in messages %}{{ m.content }}{% endfor %}"
        "{% if add_generation_prompt %}{{- \"<assistant>\\n\" -}}{{- '<think>' -}}{% endif %}"
    )
    analysis = ChatTemplate(source, name="laguna.jinja").analysis
    assert analysis.workarounds == ("laguna",)
    assert (analysis.content.mode, analysis.content.end) == (ContentMode.END_DELIMITED, "</assistant>")
    assert analysis.reasoning.mode is ReasoningMode.DELIMITER


def test_object_arguments_render_as_objects() -> None:
    tmpl = ChatTemplate.load("Qwen3-Coder")
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"city": "Paris"}'}}
    out = tmpl.render([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "", "tool_calls": [call]}])
    assert "<parameter=city>\nParis\n</parameter>" in out
