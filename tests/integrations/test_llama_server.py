"""autoparser's grammars in a real llama.cpp server (issue 21): ``llama-server`` built from source by
.ci/llama_server.sh, serving a tiny random-weight model made here (tiny_gguf.py) whose vocabulary holds the
template's markers as control tokens.

For each format, the request is what autoparser produces (``ChatTemplate.apply``) sent to ``POST /completion``
(llama_server.completion_body: the prompt, GBNF grammar, lazy flag, triggers in llama.cpp's JSON form, preserved
tokens, the end-of-turn markers as stops), with a fixed seed and temperature:

* ``tool_choice="required"`` and a named tool: the grammar alone makes random weights write a call that
  ``params.parse`` reads, with no warning, as a call of a declared tool whose arguments validate against its
  schema (jsonschema), ending with the end-of-generation token; the same streamed (server-sent events, each
  event's text fed to ``params.stream()``), with the same text;
* ``tool_choice="auto"``: the server takes the lazy grammar and its triggers (its ``generation_settings`` echo
  them, a one-token word as a token trigger), and with the markers banned plain text comes back as content; left
  to itself the model writes a trigger now and then and the lazy grammar makes what follows a valid call; where
  the prompt opened a reasoning block (Qwen3.5), the thinking tags keep triggers inside reasoning from firing.

.ci/run runs this in a step of its own, where the binary is built (AUTOPARSER_REQUIRE_LLAMA=1: nothing is
skipped there); elsewhere the module is skipped when the binary is missing.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from autoparser import ChatTemplate, merge_deltas

from .llama_server import TRIGGER_TYPES, LlamaServer, complete, completion_body, server_binary, stream

jsonschema = pytest.importorskip("jsonschema")
pytest.importorskip("gguf")
from .tiny_gguf import write_tiny_gguf  # noqa: E402

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


def sampling(template: ChatTemplate, **fields: Any) -> dict[str, Any]:
    return {
        "n_predict": N_PREDICT,
        "temperature": 1.0,
        "seed": SEED,
        "stop": list(template.analysis.end_of_turn),
        "cache_prompt": False,  # every request computes its prompt afresh: streamed and plain replies match
        **fields,
    }


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


@pytest.mark.parametrize("tool_choice", ["required", "named"])
def test_constrained_call(engine: Any, tool_choice: str) -> None:
    _name, template, model, server = engine
    choice: Any = tool_choice
    if tool_choice == "named":
        choice = {"type": "function", "function": {"name": "set_alarm"}}
    params = template.apply(MESSAGES, tools=TOOLS, tool_choice=choice, parallel_tool_calls=False)
    assert params.grammar and not params.grammar_lazy
    body = completion_body(params, **sampling(template, return_tokens=True))

    plain = complete(server, body)
    assert plain.final["stop_type"] == "eos", f"{plain.final['stop_type']} after {plain.text!r}"
    message = params.parse(plain.text)
    assert_valid_calls(message, name="set_alarm" if tool_choice == "named" else None, text=plain.text)
    assert len(message.tool_calls) == 1
    # Markers came as control tokens (the grammar allows them spelled in pieces too), written into the text
    # because they are preserved.
    written = [m for m in params.preserved_tokens if m in model.markers and m in plain.text]
    assert not written or any(model.token_id(m) in plain.final["tokens"] for m in written), plain.final["tokens"]

    streamed = stream(server, body)
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
    body = completion_body(params, **sampling(template, n_predict=48, logit_bias=banned))
    for reply in (complete(server, body), stream(server, body)):
        settings = reply.final["generation_settings"]
        assert settings["grammar_lazy"] is True
        assert settings["grammar"] == params.grammar
        words = [t.value for t in params.grammar_triggers if t.type == "word"]
        echoed = settings["grammar_triggers"]
        for word in words:
            # A word that is one token in the vocabulary is held as a token trigger (so it must be preserved).
            one_token = word in model.markers
            expected = (
                {"type": TRIGGER_TYPES["token"], "value": word, "token": model.token_id(word)}
                if one_token
                else {"type": TRIGGER_TYPES["word"], "value": word}
            )
            assert expected in echoed, echoed
        preserved = {model.token_id(m) for m in params.preserved_tokens if m in model.markers}
        assert preserved <= set(settings["preserved_tokens"])
        message = params.parse(reply.text)
        assert not message.tool_calls and not message.warnings, reply.text
        assert message.content == reply.text.strip() or message.content == reply.text, (message, reply.text)


def test_auto_lazy_grammar(engine: Any) -> None:
    """Left to itself the model opens a call now and then (its markers and words are likelier than any byte);
    from the trigger on, the lazy grammar makes it a valid call. A reply without a call is content, all of it
    (free text before a trigger is the model's: text that only looks like a call's start, such as a bare
    ``{"name": "`` with no tool name after it, is content with a warning)."""
    _name, template, model, server = engine
    params = template.apply(MESSAGES, tools=TOOLS, parallel_tool_calls=False, enable_thinking=False)
    # No reasoning here (test_thinking_holds_triggers_back has it): a start tag written in the middle of the
    # content opens a block for llama.cpp, which then holds the triggers back, but not for the parser.
    banned = [[model.token_id(params.thinking_start_tag), False]] if params.thinking_start_tag in model.markers else []
    calls = 0
    for seed in range(8):
        reply = complete(server, completion_body(params, **sampling(template, seed=seed, logit_bias=banned)))
        message = params.parse(reply.text)
        if message.tool_calls:
            calls += 1
            assert_valid_calls(message, text=reply.text)
            assert reply.final["stop_type"] == "eos", reply.text
        else:
            assert message.content.strip() == reply.text.strip(), reply.text
            assert all("did not start a valid tool call" in w.message for w in message.warnings), message.warnings
    assert calls, "no reply opened a call"


@pytest.mark.parametrize("engine", ["qwen3.5"], indirect=True)  # the format whose prompt opens a reasoning block
def test_thinking_holds_triggers_back(engine: Any) -> None:
    """A lazy grammar's trigger inside reasoning does not fire when the request carries the thinking tags
    (llama.cpp's reasoning-budget fields and the generation prompt, which opened the block): the reasoning stays
    free text and the reply parses with no warning. Without them the grammar takes over at the trigger."""
    name, template, model, server = engine
    params = template.apply(MESSAGES, tools=TOOLS, parallel_tool_calls=False)
    assert params.thinking_start_tag and params.generation_prompt.rstrip().endswith(params.thinking_start_tag)
    # The prompt opened the block, so the model has no reason to write the start tag; banned, because llama.cpp
    # would open a block again at one written later in the content, where the parser reads content.
    start = [[model.token_id(params.thinking_start_tag), False]]
    held_back = 0
    for seed in range(8):
        reply = complete(server, completion_body(params, **sampling(template, seed=seed, logit_bias=start)))
        message = params.parse(reply.text)
        assert not message.warnings, (message.warnings, reply.text)
        for call in message.tool_calls:
            jsonschema.validate(json.loads(call.arguments), SCHEMAS[call.name])
        if any(t.value in message.reasoning_content for t in params.grammar_triggers):
            held_back += 1
            # The same seed without the tags: identical up to the trigger, then the grammar's.
            bare = complete(
                server, completion_body(params, thinking=False, **sampling(template, seed=seed, logit_bias=start))
            )
            assert bare.text != reply.text, f"{name}: the grammar did not take over at the trigger: {bare.text!r}"
    assert held_back, "no reply wrote a trigger word inside its reasoning"
