"""Whole-output grammars (``full_grammar`` / ``full_lark_grammar``) for engines that cannot wait for a trigger.

For tool_choice auto the grammar must allow a plain answer, reasoning where the template has it, and the calls,
and still reject a malformed call; it describes the model's output from its first token, never the generation
prompt. Judged by the strict GBNF recognizer (llama.cpp's reading) and by llguidance loading the Lark grammar.
"""

from __future__ import annotations

from typing import Any

import pytest

from autoparser import ChatTemplate, bundled_templates
from autoparser.check import known
from autoparser.parser.reasoning import prefill

from ..support.grammar_check import full_verdicts
from ..support.outputs import chat as output_chat
from ..support.outputs import outputs
from ..support.sample import sampled
from .test_grammar_negative import TEMPLATES, TOOLS, USER, _render_call

# Outputs the template itself writes that its grammar (lazy and whole-output alike) does not describe: the
# documented spellings of autoparser.check.known.GRAMMAR. Each is a gap between what the template renders and what a
# constrained model is steered to write, not between the grammar and the parser (tests/grammar/test_grammar_agreement.py
# checks that direction).
TEMPLATE_SPELLINGS = {name: entries[known.ALL] for name, entries in known.GRAMMAR.items()}


def _full_templates() -> list[Any]:
    params = []
    for name in sampled():
        chat = output_chat(name)
        if chat.full_grammar is None:
            continue
        marks = [pytest.mark.xfail(reason=TEMPLATE_SPELLINGS[name], strict=True)] if name in TEMPLATE_SPELLINGS else []
        params.append(pytest.param(name, id=name, marks=marks))
    return params


@pytest.mark.parametrize("name", _full_templates())
def test_every_output_the_template_writes_is_in_the_language(name: str) -> None:
    """Answers, reasoning, one call, parallel calls, text before calls, as the template renders them."""
    chat = output_chat(name)
    rejected = [o.label for o in outputs(name) if not all(full_verdicts(chat, o.text).values())]
    assert not rejected, rejected


def test_most_templates_have_a_whole_output_grammar() -> None:
    with_tools = [n for n in bundled_templates() if output_chat(n).grammar_lazy]
    without = [n for n in with_tools if output_chat(n).full_grammar is None]
    assert len(with_tools) >= 55 and not without, without


@pytest.mark.parametrize("name", TEMPLATES)
def test_a_valid_call_is_accepted_and_invalid_ones_are_not(name: str) -> None:
    tmpl = ChatTemplate.load(name)
    chat = tmpl.apply(USER, tools=TOOLS, enable_thinking=True, parallel_tool_calls=False)
    assert chat.grammar_lazy
    good = _render_call(tmpl, "get_weather", {"city": "Paris", "days": 2})
    assert good is not None and all(full_verdicts(chat, good).values()), full_verdicts(chat, good)
    for tool, arguments in [
        ("launch_rocket", {"city": "Paris", "days": 2}),
        ("get_weather", {"city": "Paris", "days": "two"}),
        ("get_weather", {"city": "Berlin", "days": 2}),
    ]:
        bad = _render_call(tmpl, tool, arguments)
        assert bad is not None
        assert not any(full_verdicts(chat, bad).values()), (tool, arguments, full_verdicts(chat, bad))


@pytest.mark.parametrize(
    ("name", "answer", "accepted"),
    [
        ("NousResearch-Hermes-3-Llama-3.1-8B-tool_use", "It is sunny in Paris.", True),
        ("NousResearch-Hermes-3-Llama-3.1-8B-tool_use", "Calling <tool_call> now", False),  # the marker starts a call
        ("meta-llama-Llama-3.1-8B-Instruct", "It is sunny. {not a call}", True),
        ("meta-llama-Llama-3.1-8B-Instruct", '{"name": "launch", "parameters": {}}', False),  # bare JSON is a call
        ("meta-llama-Llama-3.1-8B-Instruct", "  \n {oops", False),
        ("Qwen3.5-4B", "The user greets me.\n</think>\n\nHello!", True),
        ("Qwen3.5-4B", "Hello!", False),  # the prompt opened a reasoning block: it is closed first
        ("openai-gpt-oss-120b", "<|channel|>final<|message|>Hello!", True),
        (
            "openai-gpt-oss-120b",
            "<|channel|>analysis<|message|>Hm.<|end|><|start|>assistant<|channel|>final<|message|>Hello!<|return|>",
            True,
        ),
        ("openai-gpt-oss-120b", "Hello!", False),
        ("meetkai-functionary-medium-v3.2", "all\nHello!", True),
        ("meetkai-functionary-medium-v3.2", "Hello!", False),
        # Free text holds no markup the parser reports left in content: a reasoning closer no block is open for (in
        # a dedicated format too), a call's name prefix that is no tag, a well-known marker inside the template's own.
        ("deepseek-ai-DeepSeek-V3.2", "Plan.</think>Done.", True),
        ("deepseek-ai-DeepSeek-V3.2", "Plan.</think>Done.</think> Or not.", False),
        ("deepseek-ai-DeepSeek-V4", "Plan.</think>Done.</think> Or not.", False),
        ("llama-cpp-deepseek-r1", "Plan.</think>Call function<｜tool▁sep｜>get_weather now.", False),
        ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", "Plan.</think>Call <｜tool▁call▁begin｜> now.", False),
        ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", "Plan.</think>Done.", True),
    ],
)
def test_free_text_without_a_call(name: str, answer: str, accepted: bool) -> None:
    chat = ChatTemplate.load(name).apply(USER, tools=TOOLS, enable_thinking=True, parallel_tool_calls=False)
    verdict = full_verdicts(chat, answer)
    assert all(v is accepted for v in verdict.values()), verdict


@pytest.mark.parametrize("choice", ["required", {"type": "function", "function": {"name": "get_weather"}}])
def test_other_requests_use_the_grammar_itself(choice: Any) -> None:
    chat = ChatTemplate.load("Qwen3.5-4B").apply(
        USER, tools=TOOLS, tool_choice=choice, enable_thinking=True, parallel_tool_calls=False
    )
    assert not chat.grammar_lazy
    assert chat.full_grammar == chat.grammar and chat.full_lark_grammar == chat.lark_grammar


def test_whole_output_grammars_start_after_the_prompts_prefill() -> None:
    """Qwen3.5's generation prompt ends with ``<think>\\n``: the grammar starts inside that block."""
    chat = ChatTemplate.load("Qwen3.5-4B").apply(
        USER, tools=TOOLS, tool_choice="required", enable_thinking=True, parallel_tool_calls=False
    )
    assert prefill(chat.generation_prompt, ChatTemplate.load("Qwen3.5-4B").analysis.reasoning)
    assert chat.grammar is not None and "<|im_start|>" not in chat.grammar and "<|im_start|>" not in chat.lark_grammar
