"""autoparser's grammars in a real llama.cpp server (issue 21): ``llama-server`` built from source by
.ci/llama_server.sh, serving a tiny random-weight model made here (tiny_gguf.py) whose vocabulary holds the
template's markers as control tokens. Five formats: Qwen3.5 (tagged XML calls, a reasoning block the prompt
opens), Hermes 3 (JSON in ``<tool_call>``), Mistral Nemo (``[TOOL_CALLS][{...}]``), Ministral 3
(``[TOOL_CALLS]name[ARGS]{...}``) and Llama 3.1 (bare JSON, a ``pattern`` trigger).

The request is what autoparser produces (``ChatTemplate.apply``) sent to ``POST /completion``
(llama_server.completion_body: the prompt, the GBNF grammar, the lazy flag, the triggers in llama.cpp's JSON form,
the preserved tokens plus the template's other control markers, the thinking tags, the end-of-turn markers as
stops), with a fixed seed and temperature:

* ``tool_choice="required"`` and a named tool: the grammar alone makes random weights write a call that
  ``params.parse`` reads, with no warning, as one call of a declared tool (the named one) whose arguments
  validate against its schema (jsonschema), ending with the end-of-generation token; streamed (server-sent
  events, each event's text fed to ``params.stream()``) the text and the calls are the same;
* ``tool_choice="auto"``: the server takes the lazy grammar and its triggers (its ``generation_settings`` echo
  them, a one-token word as a token trigger); with the markers banned plain text comes back as content; left to
  itself the model writes a trigger now and then, and from there the lazy grammar makes a valid call that ends the
  reply; where the prompt opened a reasoning block, the thinking tags keep triggers inside it from firing.

.ci/run runs this in a step of its own, where the binary is built (AUTOPARSER_REQUIRE_LLAMA=1: nothing is
skipped there); elsewhere the module is skipped when the binary is missing.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import pytest

from autoparser import ChatTemplate, merge_deltas
from autoparser.parser.reasoning import WELL_KNOWN_BLOCKS

from .llama_server import TRIGGER_TYPES, LlamaServer, complete, completion_body, preserve_for, server_binary, stream

jsonschema = pytest.importorskip("jsonschema")
pytest.importorskip("gguf")
from .tiny_gguf import TinyModel, write_tiny_gguf  # noqa: E402

BINARY = server_binary()
if BINARY is None:
    if os.environ.get("AUTOPARSER_REQUIRE_LLAMA"):
        raise RuntimeError("AUTOPARSER_REQUIRE_LLAMA is set but there is no llama-server: run .ci/llama_server.sh")
    pytest.skip("no llama-server here; .ci/run builds one (.ci/llama_server.sh) and runs this", allow_module_level=True)

# Small schemas, so random sampling ends quickly: enums and small integer ranges, no free strings.
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the weather forecast for a city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "enum": ["Paris", "Tokyo"]},
                    "days": {"type": "integer", "minimum": 1, "maximum": 3},
                },
                "required": ["city", "days"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "set_alarm",
            "description": "Set an alarm",
            "parameters": {
                "type": "object",
                "properties": {"hour": {"type": "integer", "minimum": 0, "maximum": 9}, "loud": {"type": "boolean"}},
                "required": ["hour", "loud"],
            },
        },
    },
]
SCHEMAS = {tool["function"]["name"]: tool["function"]["parameters"] for tool in TOOLS}
MESSAGES = [{"role": "user", "content": "What is the weather in Paris for the next two days?"}]

# name -> (template, BOS, EOS): the tokens the real model's tokenizer_config gives the template.
FORMATS = {
    "qwen3.5": ("Qwen3.5-4B", "", ""),  # tagged XML calls: <tool_call><function=...><parameter=...>
    "hermes3": ("NousResearch-Hermes-3-Llama-3.1-8B-tool_use", "", ""),  # JSON in <tool_call>
    "mistral-nemo": ("mistralai-Mistral-Nemo-Instruct-2407", "<s>", "</s>"),  # [TOOL_CALLS][{...}]
    "ministral3": ("mistralai-Ministral-3-14B-Reasoning-2512", "<s>", "</s>"),  # [TOOL_CALLS]name[ARGS]{...}
    "llama3.1": ("meta-llama-Llama-3.1-8B-Instruct", "<|begin_of_text|>", "<|eot_id|>"),  # bare JSON: a pattern trigger
}
# Text tokens as likely as a marker: the tool names, and a bare JSON call's opening up to the name (what Llama
# 3.x's pattern trigger waits for), so that a pattern trigger fires as often as a marker does.
WORDS = [*SCHEMAS, *(f'{{"name": "{name}"' for name in SCHEMAS)]
N_PREDICT = 1024  # a bound, never reached by the calls below (they end with the end-of-generation token)
SEED = 7


def template_of(name: str) -> ChatTemplate:
    source, bos, eos = FORMATS[name]
    return ChatTemplate.load(source, bos, eos)


@pytest.fixture(scope="module", params=sorted(FORMATS))
def engine(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A llama-server with the tiny model of one format, and what the tests need of it."""
    name = request.param
    template = template_of(name)
    # The markers of every request the tests make, so their triggers and preserved tokens are single tokens.
    requests = [template.apply(MESSAGES, tools=TOOLS, tool_choice=c) for c in ("auto", "required")]
    extra = [m for p in requests for m in (*p.preserved_tokens, *(t.value for t in p.grammar_triggers))]
    model = write_tiny_gguf(template, tmp_path_factory.mktemp(name) / "tiny.gguf", extra_markers=extra, words=WORDS)
    assert BINARY is not None
    with LlamaServer(BINARY, model.path) as server:
        yield name, template, model, server


def body(params: Any, template: ChatTemplate, *, thinking: bool = True, **fields: Any) -> dict[str, Any]:
    """The request for ``params``, as a serving stack sends it: autoparser's grammar fields, the template's control
    markers preserved besides autoparser's (llama.cpp would drop them from the text the grammar saw; the
    end-of-turn markers end generation and are stops), a fixed seed and temperature, a bounded length."""
    end_of_turn = template.analysis.end_of_turn
    sampling = {
        "n_predict": N_PREDICT,
        "temperature": 1.0,
        "seed": SEED,
        "stop": list(end_of_turn),
        "cache_prompt": False,  # every request computes its prompt afresh: streamed and plain replies match
        **fields,
    }
    preserve = preserve_for(template, params)
    return completion_body(params, preserve=preserve, thinking=thinking, **sampling)


def assert_valid_calls(message: Any, *, name: str | None = None, text: str = "") -> None:
    assert not message.warnings, f"{message.warnings}\n{text!r}"
    assert message.tool_calls, f"no call in {text!r}"
    for call in message.tool_calls:
        assert call.name in SCHEMAS, call
        assert name is None or call.name == name, call
        jsonschema.validate(json.loads(call.arguments), SCHEMAS[call.name])


def streamed_message(params: Any, pieces: list[str]) -> Any:
    """The message the stream parser builds from the server's events, one feed per event."""
    parser = params.stream()
    deltas = [delta for piece in pieces for delta in parser.feed(piece)]
    return merge_deltas([*deltas, *parser.finish()])


def kept_text(template: ChatTemplate, text: str) -> str:
    """``text`` as the parser keeps it when nothing in it is structure: stripped, without the end-of-turn and
    stop markers it ends with (``<|im_start|>``, ``[INST]``: markup where they end an output), and without a
    reasoning end marker it starts with (``[/THINK]``; ``</think>`` where the template shows no reasoning: an empty
    block, docs/parsing.md)."""
    ends = tuple(m for m in (*template.analysis.end_of_turn, *template.analysis.stop_markers) if m)
    reasoning_end = template.analysis.reasoning.end.strip()
    firsts = (reasoning_end,) if reasoning_end else tuple(end for _, end in WELL_KNOWN_BLOCKS)
    text = text.strip()
    for first in firsts:
        text = text.removeprefix(first).lstrip()
    while ends and text.endswith(ends):
        text = text[: -len(next(m for m in ends if text.endswith(m)))].rstrip()
    return text


def trigger_position(params: Any, text: str) -> int | None:
    """Where llama.cpp's lazy grammar took over: the first trigger in the text (a word, or a pattern's first
    group), as its sampler finds it."""
    found = []
    for trigger in params.grammar_triggers:
        if trigger.type == "word" and trigger.value in text:
            found.append(text.index(trigger.value))
        elif trigger.type == "pattern" and (match := re.search(trigger.value, text)):
            found.append(match.start(1) if match.re.groups and match.start(1) >= 0 else match.start())
    return min(found, default=None)


def banned_start_tag(params: Any, model: TinyModel) -> list[list[Any]]:
    """A logit bias banning the thinking start tag: llama.cpp opens a reasoning block at a start tag anywhere in
    the output (and holds triggers back inside it), autoparser's parser only where the reply starts."""
    tag = params.thinking_start_tag
    return [[model.token_id(tag), False]] if tag in model.markers else []


@pytest.mark.parametrize("tool_choice", ["required", "named"])
def test_constrained_call(engine: Any, tool_choice: str) -> None:
    """The whole-output grammar makes random weights write a valid call, and end; streamed the same."""
    _name, template, model, server = engine
    choice: Any = tool_choice
    if tool_choice == "named":
        choice = {"type": "function", "function": {"name": "set_alarm"}}
    params = template.apply(MESSAGES, tools=TOOLS, tool_choice=choice, parallel_tool_calls=False)
    assert params.grammar and not params.grammar_lazy
    request = body(params, template, return_tokens=True)

    plain = complete(server, request)
    assert plain.final["stop_type"] == "eos", f"{plain.final['stop_type']} after {plain.text!r}"
    message = params.parse(plain.text)
    assert_valid_calls(message, name="set_alarm" if tool_choice == "named" else None, text=plain.text)
    assert len(message.tool_calls) == 1
    # Markers came as control tokens (the grammar allows them spelled in pieces too), written into the text
    # because they are preserved.
    written = [m for m in params.preserved_tokens if m in model.markers and m in plain.text]
    assert not written or any(model.token_id(m) in plain.final["tokens"] for m in written), plain.final["tokens"]

    streamed = stream(server, request)
    assert streamed.text == plain.text, "same seed, same prompt: the same reply"
    assert streamed.final["stop_type"] == "eos"
    assert len(streamed.pieces) > 10
    delta = streamed_message(params, streamed.pieces)
    assert [(c.name, c.arguments) for c in delta.tool_calls] == [(c.name, c.arguments) for c in message.tool_calls]
    assert not delta.warnings


def test_auto_plain_text(engine: Any) -> None:
    """The server takes the lazy grammar and its triggers; with every marker and word banned but the
    end-of-generation tokens, the reply is plain text and comes back as content."""
    _name, template, model, server = engine
    params = template.apply(MESSAGES, tools=TOOLS, tool_choice="auto", enable_thinking=False)
    assert params.grammar and params.grammar_lazy and params.grammar_triggers
    banned = [[model.tokens.index(t), False] for t in (*model.markers, *model.words) if t not in model.eog]
    request = body(params, template, n_predict=48, logit_bias=banned)
    for reply in (complete(server, request), stream(server, request)):
        settings = reply.final["generation_settings"]
        assert settings["grammar_lazy"] is True
        assert settings["grammar"] == params.grammar
        echoed = settings["grammar_triggers"]
        for trigger in params.grammar_triggers:
            # A word that is one token in the vocabulary is held as a token trigger (so it must be preserved).
            if trigger.type == "word" and trigger.value in model.markers:
                expected = {
                    "type": TRIGGER_TYPES["token"],
                    "value": trigger.value,
                    "token": model.token_id(trigger.value),
                }
            else:
                expected = {"type": TRIGGER_TYPES[trigger.type], "value": trigger.value}
            assert expected in echoed, echoed
        preserved = {model.token_id(m) for m in params.preserved_tokens if m in model.markers}
        assert preserved <= set(settings["preserved_tokens"])
        message = params.parse(reply.text)
        assert not message.tool_calls and not message.warnings, reply.text
        assert message.content.strip() == kept_text(template, reply.text), (message, reply.text)


def test_auto_lazy_grammar(engine: Any) -> None:
    """Left to itself the model opens a call now and then (its markers and words are likelier than any byte);
    from the trigger on, the lazy grammar makes it a valid call that ends the reply.

    Only what follows the trigger is the grammar's: the text before it is the model's, and random text can hold
    what the parser reacts to (a ``get_weather[ARGS]`` with no ``[TOOL_CALLS]``, a bare ``{"name": "``), which it
    reads with a warning. So the constrained part is parsed on its own; the whole reply must parse."""
    _name, template, model, server = engine
    params = template.apply(MESSAGES, tools=TOOLS, parallel_tool_calls=False, enable_thinking=False)
    triggered = 0
    for seed in range(12):  # about half the replies open a call
        reply = complete(server, body(params, template, seed=seed, logit_bias=banned_start_tag(params, model)))
        message = params.parse(reply.text)
        at = trigger_position(params, reply.text)
        if at is None:
            assert message.content.strip() == kept_text(template, reply.text) or message.warnings, (message, reply.text)
            continue
        triggered += 1
        assert_valid_calls(params.parse(reply.text[at:]), text=reply.text[at:])
        assert reply.final["stop_type"] == "eos", reply.text
        assert message.tool_calls, reply.text
    assert triggered, "no reply wrote a trigger"


@pytest.mark.parametrize("engine", ["qwen3.5"], indirect=True)  # the format whose prompt opens a reasoning block
def test_thinking_holds_triggers_back(engine: Any) -> None:
    """A lazy grammar's trigger inside reasoning does not fire when the request carries the thinking tags
    (llama.cpp's reasoning-budget fields and the generation prompt, which opened the block): the reasoning stays
    free text, and a reply that closes it parses with no warning. Without them the grammar takes over at the
    trigger. (A second closer in the answer is kept as content, with a warning. A reply that never closes its
    reasoning may hold a trigger the parser reads as a call, with a warning: llama.cpp ended the reply inside the
    block.)"""
    name, template, model, server = engine
    params = template.apply(MESSAGES, tools=TOOLS, parallel_tool_calls=False)
    end = params.thinking_end_tag
    assert params.thinking_start_tag and params.generation_prompt.rstrip().endswith(params.thinking_start_tag)
    ban = banned_start_tag(params, model)  # the prompt opened the block: the model has no reason to open one
    held_back = 0
    for seed in range(16):  # about a third write a trigger in their reasoning
        reply = complete(server, body(params, template, seed=seed, logit_bias=ban))
        message = params.parse(reply.text)
        if end in reply.text:
            # A random model may write the closer again in its answer: kept as content, with a warning saying so.
            strays = [w for w in message.warnings if f"'{end}' closes no reasoning block" in w.message]
            assert bool(strays) == (reply.text.count(end) > 1), (message.warnings, reply.text)
            assert len(strays) == len(message.warnings), (message.warnings, reply.text)
            assert (message.content or "").count(end) == reply.text.count(end) - 1, message  # none dropped
            for call in message.tool_calls:
                jsonschema.validate(json.loads(call.arguments), SCHEMAS[call.name])
        reasoning = reply.text.split(end)[0]
        if any(t.value in reasoning for t in params.grammar_triggers):
            held_back += 1
            # The same seed without the tags: identical up to the trigger, then the grammar's.
            bare = complete(server, body(params, template, thinking=False, seed=seed, logit_bias=ban))
            assert bare.text != reply.text, f"{name}: the grammar did not take over at the trigger: {bare.text!r}"
    assert held_back, "no reply wrote a trigger word inside its reasoning"
