"""Reasoning switches (issue 24, 2a): whatever variable a template reads to turn reasoning on or off or to set its
effort is found by probing, named in the analysis with its values and default, and reached by ``apply(enable_thinking=
…)``, ``apply(reasoning_effort=…)``, ``chat_template_kwargs`` and the server's request fields.

Real templates are checked against what their source says (read by hand, not copied from the probe); synthetic ones
spell the switch otherwise: other names, ``"yes"``/``"no"``, an inverted flag whose true value turns reasoning off, a
budget of 0, effort levels, and a flag that changes the prompt but says nothing about reasoning.
"""

from __future__ import annotations

from typing import Any

import pytest

from autoparser import ChatTemplate
from autoparser.errors import TemplateError
from autoparser.template.switches import ReasoningSwitch, switch_candidates

from ..robustness.promises import char_chunks, check_stream
from ..serve.helpers import library_params

USER = [{"role": "user", "content": "What is the capital of France?"}]


def switches(template: ChatTemplate) -> dict[str, ReasoningSwitch]:
    return {s.variable: s for s in template.analysis.switches}


# (template, variable, kind, on, off, default): a toggle's default is whether reasoning is on when it is undefined.
REAL_TOGGLES = [
    ("vllm-tool_chat_template_deepseekv31", "thinking", True, False, False),  # `set thinking = false` if undefined
    ("deepseek-ai-DeepSeek-V3.1", "thinking", True, False, False),
    ("NousResearch-Hermes-4-14B", "thinking", True, False, False),
    ("ibm-granite-granite-3.3-2B-Instruct", "thinking", True, False, False),
    ("hfjs-CohereLabs-command-a-reasoning-08-2025", "reasoning", True, False, True),  # `reasoning ... else true`
    ("Cohere2MoE", "reasoning", True, False, True),
    ("ByteDance-Seed-OSS", "thinking_budget", -1, 0, True),  # 0: "directly start answering"; -1: unlimited
    ("MiniMax-M3", "thinking_mode", "enabled", "disabled", True),
    ("inclusionai-ling-3.0-flash", "thinking_option", "on", "off", True),
    ("llamacpp-Kimi-K3", "thinking", True, False, True),
    ("Qwen-Qwen3-0.6B", "enable_thinking", True, False, True),
    ("vllm-template_minicpmv45", "enable_thinking", True, False, False),  # `enable_thinking | default(false)`
]


@pytest.mark.parametrize(("template", "variable", "on", "off", "default"), REAL_TOGGLES)
def test_real_toggles(template: str, variable: str, on: Any, off: Any, default: bool) -> None:
    switch = switches(ChatTemplate.load(template))[variable]
    assert (switch.kind, switch.on, switch.off, switch.default) == ("toggle", on, off, default)
    assert switch.on in switch.values and switch.off in switch.values


# (template, variable, levels the template distinguishes, default level or None)
REAL_EFFORTS = [
    ("openai-gpt-oss-120b", "reasoning_effort", {"low", "medium", "high"}, "medium"),  # writes "Reasoning: <level>"
    ("llamacpp-Kimi-K3", "thinking_effort", {"low", "medium", "high", "max"}, "max"),
    ("GLM-5.2", "reasoning_effort", {"high", "max"}, "max"),  # 'high' if high else 'max'
    ("upstage-Solar-Open-100B", "reasoning_effort", {"low", "minimal", "high"}, "high"),
    ("deepseek-ai-DeepSeek-V4", "reasoning_effort", {"high", "max"}, None),  # read only while thinking is on
]


@pytest.mark.parametrize(("template", "variable", "levels", "default"), REAL_EFFORTS)
def test_real_efforts(template: str, variable: str, levels: set[str], default: str | None) -> None:
    switch = switches(ChatTemplate.load(template))[variable]
    assert switch.kind == "effort"
    assert levels <= set(switch.values)
    assert switch.default == default


def test_no_switch_in_templates_without_one() -> None:
    for name in ("meta-llama-Llama-3.1-8B-Instruct", "mistralai-Ministral-3-14B-Reasoning-2512", "axolotl-command_a"):
        assert ChatTemplate.load(name).analysis.switches == (), name


def test_the_analysis_reports_the_switch() -> None:
    data = ChatTemplate.load("vllm-tool_chat_template_deepseekv31").analysis.to_dict()
    assert data["switches"] == [
        {"variable": "thinking", "kind": "toggle", "values": [True, False], "on": True, "off": False, "default": False}
    ]


# --- apply() reaches the switch --------------------------------------------------------------------------------------


def test_deepseekv31_thinking() -> None:
    """vLLM's DeepSeek-V3.1 template reads `thinking` (default false): the generation prompt ends `<think>` with it
    on and `</think>` with it off; the learned markers and the parser follow."""
    tmpl = ChatTemplate.load("vllm-tool_chat_template_deepseekv31")
    reasoning = tmpl.analysis.reasoning
    assert (reasoning.start.strip(), reasoning.end.strip()) == ("<think>", "</think>")
    for kwargs, thinking in [
        ({}, False),
        ({"enable_thinking": False}, False),
        ({"enable_thinking": True}, True),
        ({"chat_template_kwargs": {"thinking": True}}, True),
        ({"chat_template_kwargs": {"enable_thinking": True}}, True),
        ({"reasoning_effort": "high"}, True),
        ({"reasoning_effort": "none"}, False),
        ({"reasoning_effort": "high", "enable_thinking": False}, False),
    ]:
        params = tmpl.apply(USER, reasoning_format="auto", **kwargs)
        assert params.enable_thinking is thinking, kwargs
        assert params.generation_prompt.rstrip().endswith("<think>" if thinking else "</think>"), kwargs
    params = tmpl.apply(USER, reasoning_format="auto", enable_thinking=True)
    text = "The capital question.</think>Paris."
    message = params.parse(text)
    assert (message.reasoning_content, message.content, message.warnings) == ("The capital question.", "Paris.", ())
    assert not check_stream(params, char_chunks(text), message)
    off = tmpl.apply(USER, reasoning_format="auto", enable_thinking=False).parse("Paris.")
    assert (off.reasoning_content, off.content) == ("", "Paris.")


def test_params_for_prompt_reads_the_switch() -> None:
    tmpl = ChatTemplate.load("vllm-tool_chat_template_deepseekv31")
    for thinking in (True, False):
        prompt = tmpl.apply(USER, enable_thinking=thinking).prompt
        assert tmpl.params_for_prompt(prompt).enable_thinking is thinking
        via_kwargs = tmpl.params_for_prompt(prompt, chat_template_kwargs={"thinking": thinking})
        assert via_kwargs.enable_thinking is thinking


@pytest.mark.parametrize(
    ("template", "effort", "written"),
    [
        ("openai-gpt-oss-120b", "high", "Reasoning: high"),
        ("llamacpp-Kimi-K3", "low", "Now the system is in"),
        ("GLM-5.2", "high", "Reasoning Effort: High"),
        ("deepseek-ai-DeepSeek-V4", "max", "Reasoning Effort: Beyond maximum"),
    ],
)
def test_reasoning_effort_reaches_the_effort_switch(template: str, effort: str, written: str) -> None:
    tmpl = ChatTemplate.load(template)
    prompt = tmpl.apply(USER, reasoning_effort=effort).prompt
    assert written in prompt
    assert written not in tmpl.apply(USER).prompt or template == "llamacpp-Kimi-K3"


def test_kimi_k3_effort_level_is_written() -> None:
    tmpl = ChatTemplate.load("llamacpp-Kimi-K3")
    low, high = (tmpl.apply(USER, reasoning_effort=level).prompt for level in ("low", "high"))
    assert low != high


@pytest.mark.parametrize(
    ("template", "thinking_off"),
    [
        ("hfjs-CohereLabs-command-a-reasoning-08-2025", "<|START_THINKING|>"),  # absent with reasoning off
        ("MiniMax-M3", "</mm:think>"),
        ("ByteDance-Seed-OSS", "</seed:think>"),
        ("llamacpp-Kimi-K3", "<|open|>response<|sep|>"),
    ],
)
def test_enable_thinking_false_reaches_other_names(template: str, thinking_off: str) -> None:
    tmpl = ChatTemplate.load(template)
    on, off = (tmpl.apply(USER, enable_thinking=t) for t in (True, False))
    assert on.prompt != off.prompt
    assert (on.enable_thinking, off.enable_thinking) == (True, False)
    if template.startswith("hfjs-CohereLabs"):
        assert thinking_off in on.prompt and thinking_off not in off.prompt
    else:
        assert off.generation_prompt.rstrip().endswith(thinking_off)


def test_server_request_fields() -> None:
    """`reasoning_effort` and `chat_template_kwargs` of a chat request reach the template's own switch."""
    base = {"model": "m", "messages": USER}
    cases = [
        ({"reasoning_effort": "medium"}, "<think>"),
        ({"reasoning_effort": "none"}, "</think>"),
        ({"chat_template_kwargs": {"thinking": True}}, "<think>"),
        ({"chat_template_kwargs": {"enable_thinking": True}}, "<think>"),
        ({}, "</think>"),
    ]
    for fields, end in cases:
        params = library_params("vllm-tool_chat_template_deepseekv31", {**base, **fields})
        assert params.generation_prompt.rstrip().endswith(end), fields
    oss = library_params("openai-gpt-oss-120b", {**base, "reasoning_effort": "low"})
    assert "Reasoning: low" in oss.prompt


# --- synthetic templates: other names and spellings -------------------------------------------------------------------

_CHAT = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"


def _template(head: str, prompt: str) -> ChatTemplate:
    source = head + _CHAT + "{% if add_generation_prompt %}<|assistant|>" + prompt + "{% endif %}"
    return ChatTemplate(source, name="synthetic")


SYNTHETIC = [
    # yes/no spelling, the prompt opens or closes the block
    (
        "",
        "{% if deliberate == 'yes' %}<ponder>{% else %}<ponder></ponder>{% endif %}",
        "deliberate",
        "yes",
        "no",
        False,
    ),
    # an inverted flag: true closes the block (the prompt says so, whatever the spelling says)
    ("", "{% if skip_reasoning %}[REASON][/REASON]{% else %}[REASON]{% endif %}", "skip_reasoning", False, True, True),
    # a budget: 0 writes a closed block
    (
        "{% set budget = budget if budget is defined else -1 %}",
        "{% if budget == 0 %}<x:think></x:think>{% endif %}",
        "budget",
        -1,
        0,
        True,
    ),
    # only instruction text, no marker: decided by the spelling
    ("{% if cot is defined and cot %}<|system|>Think step by step.<|end|>{% endif %}", "", "cot", True, False, False),
    # enabled/disabled in another variable name, default enabled
    (
        "{% set mode = mode | default('enabled') %}",
        "{% if mode == 'enabled' %}<|begin_of_thought|>{% elif mode == 'disabled' %}<|begin_of_thought|>"
        "<|end_of_thought|>{% endif %}",
        "mode",
        "enabled",
        "disabled",
        True,
    ),
]


@pytest.mark.parametrize(("head", "prompt", "variable", "on", "off", "default"), SYNTHETIC)
def test_synthetic_toggles(head: str, prompt: str, variable: str, on: Any, off: Any, default: bool) -> None:
    tmpl = _template(head, prompt)
    found = switches(tmpl)
    assert list(found) == [variable]
    switch = found[variable]
    assert (switch.kind, switch.on, switch.off, switch.default) == ("toggle", on, off, default)
    for thinking in (True, False):
        params = tmpl.apply(USER, enable_thinking=thinking)
        assert params.enable_thinking is thinking
        assert params.prompt == tmpl.render(USER, add_generation_prompt=True, **{variable: on if thinking else off})
    assert tmpl.apply(USER).enable_thinking is default


def test_synthetic_switch_reaches_the_parser() -> None:
    """A prompt that opens `<ponder>` only when `deliberate == 'yes'`: thinking on reads the model's `…</ponder>` as
    reasoning; thinking off leaves no block to close."""
    tmpl = _template("", "{% if deliberate == 'yes' %}<ponder>{% else %}<ponder></ponder>{% endif %}")
    reasoning = tmpl.analysis.reasoning
    assert (reasoning.start.strip(), reasoning.end.strip()) == ("<ponder>", "</ponder>")
    on = tmpl.apply(USER, enable_thinking=True, reasoning_format="auto")
    message = on.parse("Capitals.</ponder>Paris.")
    assert (message.reasoning_content, message.content) == ("Capitals.", "Paris.")
    off = tmpl.apply(USER, enable_thinking=False, reasoning_format="auto")
    assert off.parse("Paris.").content == "Paris."


def test_synthetic_effort() -> None:
    head = (
        "{% set effort_level = effort_level if effort_level is defined else 'medium' %}"
        "<|system|>Reasoning depth: {{ effort_level }}<|end|>"
    )
    tmpl = _template(head, "")
    switch = switches(tmpl)["effort_level"]
    assert (switch.kind, switch.default) == ("effort", "medium")
    assert {"low", "medium", "high"} <= set(switch.values)
    assert "Reasoning depth: high" in tmpl.apply(USER, reasoning_effort="high").prompt
    assert "Reasoning depth: medium" in tmpl.apply(USER).prompt


def test_a_flag_that_says_nothing_about_reasoning_is_no_switch() -> None:
    tmpl = _template("{% if formal %}<|system|>Answer formally.<|end|>{% endif %}", "")
    assert [c.variable for c in switch_candidates(tmpl.source)] == ["formal"]
    assert tmpl.analysis.switches == ()


def test_a_switch_that_breaks_the_conversation_falls_back_loudly() -> None:
    """Hermes 4 splits every history answer at `</think>` when its `thinking` is on; an OpenAI client sends answers
    without one. Turned on for the request (not by it), the switch falls back to the template's default, with a
    warning, instead of failing the request; named by the caller, the template's error stands."""
    tmpl = ChatTemplate.load("NousResearch-Hermes-4-14B")
    history = [*USER, {"role": "assistant", "content": "Paris."}, {"role": "user", "content": "And Spain?"}]
    params = tmpl.apply(history, enable_thinking=True)
    assert params.enable_thinking is False
    assert any("thinking=True" in w for w in params.warnings)
    assert "deep thinking" in tmpl.apply(USER, enable_thinking=True).prompt  # a conversation it can render
    with pytest.raises(TemplateError):
        tmpl.apply(history, chat_template_kwargs={"thinking": True})


def test_an_effort_in_chat_template_kwargs_reaches_another_name() -> None:
    """vLLM's clients put `reasoning_effort` among the kwargs: Kimi K3 calls its effort switch `thinking_effort`."""
    tmpl = ChatTemplate.load("llamacpp-Kimi-K3")
    via_kwargs = tmpl.apply(USER, chat_template_kwargs={"reasoning_effort": "low"}).prompt
    assert via_kwargs == tmpl.apply(USER, reasoning_effort="low").prompt != tmpl.apply(USER).prompt
