"""What models write when their template states the format only in prose (or not at all): parsed, streamed, cut off.

The outputs are written the way these models write them (Granite 3.3's ``<|tool_call|>[...]``, Hammer 2.1's JSON
list with or without a code fence, Nemotron-Mini's ``<toolcall>``, Phi-4/Hermes 4/Cogito ``<think>``, MiniCPM3's
``<|thought_start|>``, Apriel 1.5's final-response markers), including
stray whitespace, code blocks in plain answers and truncation. Expected messages are what the model meant.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from autoparser import ChatParams, ChatTemplate

from ..robustness.promises import char_chunks, check_parse, check_stream, marker_cut_chunkings, random_chunks
from ..support.helpers import function_tool

WEATHER = function_tool(
    "get_weather",
    {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    },
)
PING = function_tool("ping")
TOOLS = [WEATHER, PING]
USER = [{"role": "user", "content": "What is the weather in Paris and in Rome?"}]

GRANITE = "ibm-granite-granite-3.3-2B-Instruct"
HAMMER = "MadeAgents-Hammer2.1"
NEMOTRON_MINI = "nvidia-Nemotron-Mini-4B-Instruct"
PHI4 = "microsoft-Phi-4-reasoning"
MINICPM3 = "openbmb-MiniCPM3-4B"
COGITO = "deepcogito-cogito-v1-preview-qwen-14B"
COGITO_LLAMA = "ollama-cogito-3b"  # the Llama-based cogito, as Ollama ships it
FALCON_H1 = "axolotl-falcon_h1"  # "<tool_call>\n{'arguments': <args-dict>, 'name': <function-name>}\n</tool_call>"
SMOLLM3_OLD = "hfjs-HuggingFaceTB-SmolLM3-3B"  # SmolLM3's first revision: the syntax only in the system prompt
HERMES4 = "NousResearch-Hermes-4-14B"
APRIEL = "unsloth-Apriel-1.5"
# Synthetic templates that state the call marker as a bare word before an example (tests/data/templates/).
TEMPLATES = Path(__file__).parent.parent / "data" / "templates"
WORD_GLUED = str(TEMPLATES / "prose-word-glued.jinja")  # "prefix function calls with toolcall marker": toolcall[...]
WORD_KEYWORD = str(TEMPLATES / "prose-word-keyword.jinja")  # "start your reply with the keyword FUNCTION_CALLS"
WORD_OBJECT = str(TEMPLATES / "prose-word-object.jinja")  # "write the word CALL: and then the call as a JSON object"

PARIS = ("get_weather", {"city": "Paris"})
ROME = ("get_weather", {"city": "Rome", "days": 2})


@dataclass(frozen=True)
class Case:
    """An output of ``template`` and the message the model meant."""

    name: str
    template: str
    text: str
    content: str = ""
    reasoning: str = ""
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    tools: bool = True
    kwargs: dict[str, Any] = field(default_factory=dict)
    markers: tuple[str, ...] = ()


CASES = [
    # Granite 3.3: "respond only with <|tool_call|> followed by a JSON list of tools used".
    Case(
        "granite-one-call",
        GRANITE,
        '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
        calls=(PARIS,),
        markers=("<|tool_call|>",),
    ),
    Case(
        "granite-parallel",
        GRANITE,
        '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}, '
        '{"name": "get_weather", "arguments": {"city": "Rome", "days": 2}}]',
        calls=(PARIS, ROME),
        markers=("<|tool_call|>",),
    ),
    Case(
        "granite-spaced",
        GRANITE,
        '<|tool_call|>\n[\n  {"arguments": {"city": "Paris"}, "name": "get_weather"},\n  {"name": "ping", '
        '"arguments": {}}\n]\n',
        calls=(PARIS, ("ping", {})),
        markers=("<|tool_call|>",),
    ),
    Case(
        "granite-thinking",
        GRANITE,
        "<think>The user asks about the weather; I have no live data.</think>"
        "<response>I cannot look up live weather.</response>",
        content="I cannot look up live weather.",
        reasoning="The user asks about the weather; I have no live data.",
        tools=False,
        kwargs={"thinking": True},
        markers=("<think>", "</think>", "<response>", "</response>"),
    ),
    Case(
        "granite-plain",
        GRANITE,
        "Paris is sunny [source 1]; in JSON: [1, 2].",
        content="Paris is sunny [source 1]; in JSON: [1, 2].",
    ),
    # Hammer 2.1: a JSON list, shown in a code fence in the prompt; models write it bare or fenced.
    Case("hammer-bare", HAMMER, '[{"name": "get_weather", "arguments": {"city": "Paris"}}]', calls=(PARIS,)),
    Case(
        "hammer-fenced",
        HAMMER,
        '```\n[\n    {"name": "get_weather", "arguments": {"city": "Paris"}},\n'
        '    {"name": "get_weather", "arguments": {"city": "Rome", "days": 2}}\n]\n```',
        calls=(PARIS, ROME),
        markers=("```",),
    ),
    Case(
        "hammer-json-fence",
        HAMMER,
        '```json\n[{"name": "get_weather", "arguments": {"city": "Rome", "days": 2}}]\n```',
        calls=(ROME,),
        markers=("```json", "```"),
    ),
    Case(
        "hammer-code-answer",
        HAMMER,
        'No tool fits. In Python:\n```python\nprint("sunny")\n```\nand JSON ```json\n{"city": "Paris"}\n```',
        content='No tool fits. In Python:\n```python\nprint("sunny")\n```\nand JSON ```json\n{"city": "Paris"}\n```',
        markers=("```",),
    ),
    # Nemotron-Mini: the template never shows a call; the model writes <toolcall> {json} </toolcall>.
    Case(
        "nemotron-mini-one-call",
        NEMOTRON_MINI,
        '<toolcall> {"name": "get_weather", "arguments": {"city": "Paris"}} </toolcall>',
        calls=(PARIS,),
        markers=("<toolcall>", "</toolcall>"),
    ),
    Case(
        "nemotron-mini-parallel",
        NEMOTRON_MINI,
        '<toolcall> {"name": "get_weather", "arguments": {"city": "Paris"}} </toolcall>\n'
        '<toolcall> {"name": "get_weather", "arguments": {"city": "Rome", "days": 2}} </toolcall>',
        calls=(PARIS, ROME),
        markers=("<toolcall>", "</toolcall>"),
    ),
    Case("nemotron-mini-plain", NEMOTRON_MINI, "It is sunny in Paris.", content="It is sunny in Paris."),
    # Phi-4-reasoning: "<think> {Thought section} </think> {Solution section}".
    Case(
        "phi4-reasoning",
        PHI4,
        "<think>\nParis in June: warm.\n</think>\n\nIt is likely warm in Paris.",
        content="It is likely warm in Paris.",
        reasoning="Paris in June: warm.",
        tools=False,
        markers=("<think>", "</think>"),
    ),
    # MiniCPM3: "<|thought_start|>\n{...}\n<|thought_end|>" in its tool instructions.
    Case(
        "minicpm3-thought",
        MINICPM3,
        "<|thought_start|>\nI can answer without calling a function.\n<|thought_end|>\nParis is in France.",
        content="Paris is in France.",
        reasoning="I can answer without calling a function.",
        markers=("<|thought_start|>", "<|thought_end|>"),
    ),
    # Cogito: "Enable deep thinking subroutine." and the model writes <think>; its calls are rendered (Hermes).
    Case(
        "cogito-thinking-call",
        COGITO,
        '<think>\nI need the weather tool.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": '
        '{"city": "Paris"}}\n</tool_call>',
        reasoning="I need the weather tool.",
        calls=(PARIS,),
        kwargs={"enable_thinking": True},
        markers=("<think>", "</think>", "<tool_call>", "</tool_call>"),
    ),
    # Falcon-H1 states Hermes' syntax with the arguments first, and never renders a call.
    Case(
        "falcon-h1-arguments-first",
        FALCON_H1,
        '<tool_call>\n{"arguments": {"city": "Rome", "days": 2}, "name": "get_weather"}\n</tool_call>',
        calls=(ROME,),
        markers=("<tool_call>", "</tool_call>"),
    ),
    Case(
        "smollm3-first-revision-call",
        SMOLLM3_OLD,
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        calls=(PARIS,),
        markers=("<tool_call>", "</tool_call>"),
    ),
    # The Llama-based cogito: the same switch; its calls are a JSON list.
    Case(
        "cogito-llama-thinking-call",
        COGITO_LLAMA,
        '<think>\nI need the weather tool.\n</think>\n\n[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
        reasoning="I need the weather tool.",
        calls=(PARIS,),
        kwargs={"enable_thinking": True},
        markers=("<think>", "</think>"),
    ),
    # Hermes 4 with thinking=True: "enclose your thoughts ... inside <think> </think> tags".
    Case(
        "hermes4-thinking",
        HERMES4,
        "<think>\nSimple question.\n</think>\nHello! How can I help?",
        content="Hello! How can I help?",
        reasoning="Simple question.",
        kwargs={"thinking": True},
        markers=("<think>", "</think>"),
    ),
    # Apriel 1.5: reasoning, then "[BEGIN FINAL RESPONSE] ... [END FINAL RESPONSE]".
    Case(
        "apriel-final-response",
        APRIEL,
        "Here are my reasoning steps:\nThe user greets me.\n[BEGIN FINAL RESPONSE]\nHello! How can I help?\n"
        "[END FINAL RESPONSE]",
        content="Hello! How can I help?",
        reasoning="Here are my reasoning steps:\nThe user greets me.",
        tools=False,
        markers=("[BEGIN FINAL RESPONSE]", "[END FINAL RESPONSE]"),
    ),
    Case("apriel-plain", APRIEL, "Hello! How can I help?", content="Hello! How can I help?", tools=False),
    # A bare word before the example call, glued to its list: the word is the call marker (issue 19).
    Case(
        "word-glued",
        WORD_GLUED,
        'toolcall[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
        calls=(PARIS,),
        markers=("toolcall",),
    ),
    Case(
        "word-glued-text-first",
        WORD_GLUED,
        'Let me check both.\ntoolcall[{"name": "get_weather", "arguments": {"city": "Paris"}}, '
        '{"name": "get_weather", "arguments": {"city": "Rome", "days": 2}}]',
        content="Let me check both.",
        calls=(PARIS, ROME),
        markers=("toolcall",),
    ),
    Case(
        "word-glued-spaced",
        WORD_GLUED,
        'toolcall [\n  {"name": "get_weather", "arguments": {"city": "Paris"}}\n]\n',
        calls=(PARIS,),
        markers=("toolcall",),
    ),
    Case(
        "word-in-an-answer",
        WORD_GLUED,
        "A toolcall marker starts each call; toolcall is a word here.",
        content="A toolcall marker starts each call; toolcall is a word here.",
    ),
    Case(
        "word-keyword",
        WORD_KEYWORD,
        'FUNCTION_CALLS [{"name": "get_weather", "arguments": {"city": "Rome", "days": 2}}]',
        calls=(ROME,),
        markers=("FUNCTION_CALLS",),
    ),
    Case(
        "word-keyword-next-line",
        WORD_KEYWORD,
        'FUNCTION_CALLS\n[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "ping", "arguments": {}}]',
        calls=(PARIS, ("ping", {})),
        markers=("FUNCTION_CALLS",),
    ),
    Case(
        "word-object",
        WORD_OBJECT,
        'CALL: {"name": "get_weather", "parameters": {"city": "Paris"}}\n'
        'CALL: {"name": "get_weather", "parameters": {"city": "Rome", "days": 2}}',
        calls=(PARIS, ROME),
        markers=("CALL:",),
    ),
    Case(
        "word-object-after-text",
        WORD_OBJECT,
        'I will look it up.\nCALL: {"name": "get_weather", "arguments": {"city": "Paris"}}',
        content="I will look it up.",
        calls=(PARIS,),
        markers=("CALL:",),
    ),
]


def chat(case: Case) -> ChatParams:
    load = ChatTemplate.from_file if case.template.endswith(".jinja") else ChatTemplate.load
    return load(case.template).apply(
        USER, TOOLS if case.tools else None, reasoning_format="auto", chat_template_kwargs=case.kwargs
    )


def _words(case: Case) -> list[str]:
    words = [w for w in case.content.split() + case.reasoning.split() if w.isalpha() and len(w) > 3]
    return words + [name for name, _ in case.calls] + ["Paris", "Rome"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_parse_reads_what_the_model_meant(case: Case) -> None:
    message = chat(case).parse(case.text)
    assert message.warnings == ()
    assert message.content == case.content
    assert message.reasoning_content == case.reasoning
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == list(case.calls)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_stream_ends_equal_to_parse(case: Case) -> None:
    params = chat(case)
    chunkings = [char_chunks(case.text), *(random_chunks(case.text, seed) for seed in range(3))]
    chunkings += marker_cut_chunkings(case.text, case.markers)
    for pieces in chunkings:
        assert check_stream(params, pieces) == [], pieces


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_every_truncation_keeps_the_promises(case: Case) -> None:
    """Cut anywhere, the output parses without loss or silent repair, and a stream of the cut text equals it."""
    params = chat(case)
    for cut in range(1, len(case.text)):
        prefix = case.text[:cut]
        # A code fence left in the content is a code block, not a call marker.
        stray = [m for m in case.markers if not m.startswith("```")]
        message, failures = check_parse(params, prefix, words=_words(case), call_markers=stray)
        assert failures == [], (prefix, failures)
        assert message is not None
        for call in message.tool_calls:
            assert call.name in {name for name, _ in case.calls}
    for cut in range(7, len(case.text), 7):
        assert check_stream(params, char_chunks(case.text[:cut])) == [], case.text[:cut]


def test_truncated_call_keeps_what_was_read() -> None:
    params = ChatTemplate.load(GRANITE).apply(USER, TOOLS)
    message = params.parse('<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Par')
    assert [c.name for c in message.tool_calls] == ["get_weather"]
    assert message.tool_calls[0].arguments == '{"city": "Par"}'  # as far as it got, closed
    assert message.tool_calls[0].status == "cut_off"
    assert message.warnings


def test_hammer_fenced_call_cut_before_the_list_stays_text() -> None:
    params = ChatTemplate.load(HAMMER).apply(USER, TOOLS)
    message = params.parse("```json\n")
    assert message.content == "```json" and message.tool_calls == ()


def test_calls_are_text_without_tools() -> None:
    text = '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]'
    message = ChatTemplate.load(GRANITE).apply(USER).parse(text)
    assert message.content == text and message.tool_calls == ()


def test_reasoning_inline_when_not_extracted() -> None:
    """reasoning_format none keeps the stated reasoning block, markers included, in the content."""
    text = "<think> Warm. </think> Likely warm."
    assert ChatTemplate.load(PHI4).apply(USER, reasoning_format="none").parse(text).content == text


def test_granite_thought_process_phrases() -> None:
    """Granite 3.2's prompt names phrases, not tags (its template is Granite 3.3's with that sentence)."""
    source = ChatTemplate.load(GRANITE).source.replace(
        "Write your thoughts between <think></think> and write your response between <response></response>",
        "Write your thoughts after 'Here is my thought process:' and write your response after 'Here is my "
        "response:'",
    )
    params = ChatTemplate(source, name="granite-3.2.jinja").apply(
        USER, reasoning_format="auto", chat_template_kwargs={"thinking": True}
    )
    text = "Here is my thought process:\nThe user asks about weather.\n\nHere is my response:\nIt is sunny."
    message = params.parse(text)
    assert (message.reasoning_content, message.content) == ("The user asks about weather.", "It is sunny.")
    assert params.parse("It is sunny.").content == "It is sunny."
    for pieces in (char_chunks(text), *marker_cut_chunkings(text, ["Here is my response:"])):
        assert check_stream(params, pieces) == []
