"""Call shapes as the rendering shows them (issue 24, capability 2d) and answer wrappers (2f), in the analysis.

Each synthetic template (tests/data/templates/shape-*.jinja, wrapper-reply.jinja) spells one idea its own way: key
order and key names of JSON calls, section markers around per-call markers, a section closed only after several
calls, indentation leaking into every render, a call turn whose header differs from the generation prompt's, calls
rendered only after reasoning. The bundled templates that showed each idea first are checked alongside. What the
parser makes of them is in tests/parser/test_call_shapes.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from autoparser import ChatTemplate
from autoparser.analysis.diff import after_prompt

TEMPLATES = Path(__file__).parent.parent / "data" / "templates"

# template -> fields of analysis.tools.format that must hold (other fields: whatever the template implies).
FORMATS: dict[str, dict[str, Any]] = {
    "shape-args-first": {
        "mode": "JSON_NATIVE",
        "per_call_start": "<tool_call>",
        "per_call_end": "</tool_call>",
        "name_field": "name",
        "args_field": "arguments",
        "parameter_order": ["arguments", "name"],
    },
    "shape-function-args": {
        "mode": "JSON_NATIVE",
        "per_call_start": "<call>",
        "name_field": "function",
        "args_field": "args",
        "parameter_order": ["function", "args"],
    },
    "shape-bare-tool-name": {
        "mode": "JSON_NATIVE",
        "section_start": "",
        "per_call_start": "",
        "name_field": "tool_name",
        "args_field": "inputs",
    },
    "shape-bare-list": {
        "mode": "JSON_NATIVE",
        "section_start": "",
        "tools_array_wrapped": True,
        "name_field": "function",
        "args_field": "parameters",
        "parameter_order": ["parameters", "function"],
    },
    # JSON calls: the section's markers and each call's apart (T2: the second call repeats only the inner ones).
    "shape-json-section": {
        "mode": "JSON_NATIVE",
        "section_start": "<|calls|>",
        "section_end": "<|/calls|>",
        "per_call_start": "<|call|>",
        "per_call_end": "<|/call|>",
        "name_field": "function",
    },
    "shape-tagged-section": {
        "mode": "TAG_WITH_JSON",
        "section_start": "[CALLS]",
        "section_end": "[/CALLS]",
        "per_call_start": "[CALL]",
        "per_call_end": "[/CALL]",
    },
    # The section's closer, written only after several calls: optional (implied_end), not the convention's guess.
    "shape-lone-unclosed": {
        "mode": "TAG_WITH_JSON",
        "section_start": "<｜calls▁begin｜>",
        "section_end": "",
        "per_call_start": "<｜call▁begin｜>",
        "implied_end": "<｜calls▁end｜>",
    },
    "shape-lone-unclosed-json": {
        "mode": "JSON_NATIVE",
        "section_start": "<calls>",
        "section_end": "",
        "per_call_start": "<call>",
        "per_call_end": "</call>",
        "implied_end": "<done>",
    },
    "shape-indented": {"mode": "TAG_WITH_JSON", "section_end": "</calls>", "per_call_start": "<call>"},
    "shape-indented-json": {
        "mode": "JSON_NATIVE",
        "per_call_end": "</tool>",
        "name_field": "tool",
        "args_field": "args",
    },
    # The header the call turn repeats is the prompt's, not a section marker.
    "shape-header": {"mode": "JSON_NATIVE", "section_start": "", "per_call_start": "", "name_field": "tool"},
    "shape-calls-after-plan": {
        "mode": "JSON_NATIVE",
        "section_start": "<|BEGIN_CALLS|>",
        "section_end": "<|END_CALLS|>",
        "tools_array_wrapped": True,
        "name_field": "tool",
        "args_field": "input",
        "gen_id_field": "id",
    },
    "vllm-tool_chat_template_llama4_json": {
        "mode": "JSON_NATIVE",
        "section_start": "",
        "per_call_start": "",
        "name_field": "name",
        "args_field": "parameters",
    },
    "vllm-tool_chat_template_deepseekv31": {
        "mode": "TAG_WITH_JSON",
        "section_start": "<｜tool▁calls▁begin｜>",
        "section_end": "<｜tool▁calls▁end｜>",
        "per_call_start": "<｜tool▁call▁begin｜>",
        "per_call_end": "<｜tool▁call▁end｜>",
    },
    "hfjs-CohereLabs-command-a-reasoning-08-2025": {
        "mode": "JSON_NATIVE",
        "section_start": "<|START_ACTION|>",
        "section_end": "<|END_ACTION|>",
        "tools_array_wrapped": True,
        "name_field": "tool_name",
        "args_field": "parameters",
        "gen_id_field": "tool_call_id",
    },
}

# template -> (content mode, start, end): no turn header read as an answer wrapper; a real wrapper keeps its closer.
CONTENT: dict[str, tuple[str, str, str]] = {
    "shape-header": ("PLAIN", "", ""),
    "shape-calls-after-plan": ("ALWAYS_WRAPPED", "<|BEGIN_ANSWER|>", "<|END_ANSWER|>"),
    "wrapper-reply": ("ALWAYS_WRAPPED", "<|reply|>", ""),  # no call turn: the closer is read as the end of turn
    "vllm-tool_chat_template_llama4_json": ("PLAIN", "", ""),
    "vllm-tool_chat_template_deepseekv31": ("PLAIN", "", ""),
    "hfjs-CohereLabs-command-a-reasoning-08-2025": ("ALWAYS_WRAPPED", "<|START_RESPONSE|>", "<|END_RESPONSE|>"),
}


def load(name: str) -> ChatTemplate:
    """A synthetic template of tests/data/templates, or a bundled one."""
    path = TEMPLATES / f"{name}.jinja"
    return ChatTemplate.from_file(str(path)) if path.exists() else ChatTemplate.load(name)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_the_call_shape_is_learned(name: str) -> None:
    analysis = load(name).analysis
    assert analysis.capabilities.supports_tool_calls
    found = analysis.to_dict()["tools"]["format"]
    assert {k: found[k] for k in FORMATS[name]} == FORMATS[name]


@pytest.mark.parametrize("name", sorted(CONTENT))
def test_the_answer_wrapper_is_learned(name: str) -> None:
    content = load(name).analysis.content
    assert (content.mode.value, content.start, content.end) == CONTENT[name]


def test_calls_rendered_only_after_reasoning_are_probed_with_it() -> None:
    """The template raises on a call turn without reasoning: the capabilities and every comparison try again with
    reasoning in both turns, so its calls are found (and the reasoning is not read as part of the call)."""
    for name in ("shape-calls-after-plan", "hfjs-CohereLabs-command-a-reasoning-08-2025"):
        caps = load(name).capabilities
        assert caps.supports_tool_calls and caps.supports_parallel_tool_calls and caps.supports_object_arguments
    analysis = load("shape-calls-after-plan").analysis
    assert (analysis.reasoning.start, analysis.reasoning.end) == ("<|BEGIN_PLAN|>", "<|END_PLAN|>")
    assert "<|BEGIN_CALLS|>" in analysis.preserved_tokens


@pytest.mark.parametrize(
    ("text", "prompts", "rest"),
    [
        # The whole header, spaced otherwise (a line break more, indentation leaked or missing).
        ("<|turn|>bot<|sep|>\n\n{", ("\n<|turn|>bot<|sep|>\n\n",), "{"),
        ("      <|A|></think>          <calls>", ("  <|A|>    </think>",), "          <calls>"),
        # Only its end: the rest of the header is in the diff's common prefix.
        ("</think>  <calls>", ("<|A|></think>",), "  <calls>"),
        # Either prompt (thinking on or off); the longer cut wins.
        ("<think>\n\n</think>\n\nhello", ("[|a|]\n<think>\n", "[|a|]\n<think>\n\n</think>\n\n"), "hello"),
        # Nothing of the prompt: unchanged.
        ("<calls>x", ("<|A|>",), "<calls>x"),
        ("</thinking>x", ("<|A|></think>",), "</thinking>x"),  # a marker is cut whole or not at all
        # A prompt that opens a block: the turn continues inside it (reasoning or wrapper: not a header).
        ("<think>\n\nanswer", ("<|A|>\n<think>\n\n",), "<think>\n\nanswer"),
    ],
)
def test_after_prompt(text: str, prompts: tuple[str, ...], rest: str) -> None:
    assert after_prompt(text, prompts) == rest
