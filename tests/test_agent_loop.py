"""The agent loop on every bundled template that renders tool calls: render -> reply -> parse -> send back -> render.

A client renders turn 1 with ``apply(USER, tools=TOOLS)``, the model replies with calls, ``params.parse(reply)``
reads them, and the client appends ``msg.to_openai()`` exactly as it came (arguments as JSON text, ``content``
None next to calls, the ids parse() gave) plus one ``{"role": "tool", "tool_call_id": id, ...}`` result per call,
then maybe a follow-up question, and renders turn 2 with ``apply()`` again.

The replies are the templates' own renderings (tests/support/outputs.py): every call output of a template (one call
with every JSON type, two and three parallel calls, content + call, reasoning + call where the template renders
them). Turn 2 must render; it must hold the first turn as the template renders it, i.e. the stretch of the
template's own rendering of the conversation with the message the reply was rendered from (``tmpl.render``,
arguments as objects) that runs from the assistant turn's start to the first tool result; it must hold every tool
result; and it must start with turn 1's prompt up to the generation prompt (where the assistant turn begins),
except on the templates of :data:`PREFIX_UNSTABLE`, which state how turn 2 rewrites turn 1 (checked).
Streamed, in random chunks, the reply must rebuild (OpenAI-style, from the deltas) a message that renders turn 2
exactly as the parsed one does (up to the generated ids). Templates that check call ids get only ids they accept.

A client may also send the tool results as lists of text parts (OpenAI's API allows it): turn 2 must then be the
one with the same texts as strings.

The tools are tests/support/outputs.py's (with descriptions and parameters, every JSON type): the replies call them.
Which templates take part is decided by rendering a call, not by a list: a template whose history shows no call
(SmolLM3, Gemma 2, ...) has no agent loop to test; one whose call rendering raises must be in :data:`CANNOT`, with
the error checked, and the test fails when a listed template starts rendering calls. The other lists
(:data:`ARGUMENTS_AS_TEXT`, :data:`NO_FOLLOW_UP`, :data:`PREFIX_UNSTABLE`) are checked the same way. Nothing here
is an expected failure: a template that does not loop fails.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from autoparser import ChatMessage, ChatParams, ChatTemplate, bundled_templates, merge_deltas
from autoparser.analysis.diff import common_prefix_len
from autoparser.errors import TemplateError
from autoparser.message import apply_deltas
from autoparser.requests import request_profile
from autoparser.requests.json_data import as_json_data
from autoparser.template.chat_template import JinjaChatTemplate
from autoparser.template.environment import variables_read

from .robustness.promises import random_chunks
from .support.ids import ID_SHAPES, generated_ids_ok
from .support.outputs import CALL_IDS, USER, Output, call_message, outputs, request_tools, source_message
from .support.sample import sampled

FOLLOW_UP = {"role": "user", "content": "Thanks! And what about tomorrow?"}
ENDINGS = ("results", "follow-up")  # turn 2 right after the tool results, or after a further user question
SEEDS = (1, 2, 3)  # random chunkings of each streamed reply
ALNUM9 = re.compile(r"[A-Za-z0-9]{9}")
OPENAI_STYLE_ID = "call_a1B2c3D4e5F6g7H8i9J0k1L2"

# Templates whose call rendering raises, whatever the arguments: (a text of the error, why).
CANNOT: dict[str, tuple[str, str]] = {
    "Kimi-K2-Instruct": (
        "access to attribute 'append' of 'list' object is unsafe",
        "rendering any assistant turn with calls raises: the template calls list.append, which the sandbox "
        "refuses (as transformers' does)",
    ),
    "Kimi-K2-Thinking": (
        "access to attribute 'append' of 'list' object is unsafe",
        "rendering any assistant turn with calls raises: the template calls list.append, which the sandbox "
        "refuses (as transformers' does)",
    ),
    "MiroThinker": (
        "cannot assign attribute on non-namespace object",
        "rendering any assistant turn raises: the template sets attributes on messages (`set message.x`), which "
        "only llama.cpp's engine allows; it cannot render a tool list either (apply() leaves the tools out)",
    ),
    "hfjs-CohereForAI-c4ai-command-r-v01": (
        "'NoneType' object is not iterable",
        "renders tools only in Cohere's own format (`parameter_definitions`): OpenAI tools, and a conversation "
        "without them, raise",
    ),
    "ollama-shieldgemma-27b": (
        "'guideline' is undefined",
        "a classifier prompt: it renders no conversation without a system message holding its policy, and no "
        "assistant turn after it",
    ),
    "trl-idefics3": (
        "has no element 0",
        "reads every message's first content part: a turn with calls and no text has none",
    ),
}

# Templates that read call arguments only as JSON text: given objects (what the reference passes), they raise.
ARGUMENTS_AS_TEXT: dict[str, str] = {
    "meetkai-functionary-medium-v3.2": "concatenates the arguments to a string with `+` (objects raise TypeError)",
    "ollama-r1-1776-671b": "concatenates the arguments to a string with `+` (objects raise TypeError)",
    "hfjs-meetkai-functionary-medium-v2.2": "concatenates the arguments to a string with `+` (objects raise TypeError)",
}

# Templates that refuse a user message right after tool results: (a text of the error, why).
NO_FOLLOW_UP: dict[str, tuple[str, str]] = {
    name: (
        "conversation roles must alternate user",
        "roles must alternate user/assistant (tool turns aside): a user message right after the tool results "
        "raises; the loop goes on with the assistant's answer first",
    )
    for name in (
        "Mistral-Small-3.2-24B-Instruct-2506",
        "mistralai-Ministral-3-14B-Reasoning-2512",
        "mistralai-Mistral-Nemo-Instruct-2407",
        "hfjs-mistralai-Mistral-Nemo-Instruct-2407-old",
        "vllm-tool_chat_template_mistral_parallel",
    )
}

# Templates whose turn 2 does not start with turn 1's prompt up to its generation prompt: why (checked: the text
# of turn 1 from where the prompts part is in turn 2 after the last tool result).
PREFIX_UNSTABLE: dict[str, str] = {
    "CohereForAI-c4ai-command-r-plus-tool_use": "writes its tool-use instructions (a system turn) after the last "
    "message: turn 1's prompt has them before the generation prompt, turn 2's after the tool results",
    "mistralrs-mistral_nemo_tool_call": "writes the tool list before the last user message: after a follow-up "
    "question it moves there, after the results",
    "vllm-tool_chat_template_mistral3": "writes the tool list before the last user message: after a follow-up "
    "question it moves there, after the results",
}

# Templates whose turn 2 leaves out a stretch of turn 1's prompt altogether: why (checked: the stretch is gone).
PREFIX_DROPPED: dict[str, str] = {
    "vllm-tool_chat_template_mistral_parallel": "writes its tool-use instructions into the last user message only "
    "when it is the conversation's last message: after the tool results they are gone",
}

# Templates whose turn 2 renders the calling turn's content otherwise than its own rendering of the message (as
# strings): why. apply() hands that content over as text parts, as vLLM does for templates that loop over parts.
CONTENT_AS_PARTS: dict[str, str] = {
    "ollama-cogito-3b": "writes a blank line after a text part before the calls, none after a string",
}

# Templates whose turn 2 is rendered with their reasoning switch at its default (apply() says so in a warning):
# the switch turned on for turn 1 makes the template raise on this history. Their turn 2 starts otherwise.
SWITCH_FALLBACK: dict[str, str] = {
    "NousResearch-Hermes-4-14B": "with `thinking` on it splits every past answer at `</think>` and raises on one "
    "without it (an answer next to calls, sent back without its reasoning)",
}


# --- which templates render calls -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CallRendering:
    kind: str  # "renders", "raises" or "no calls"
    error: str = ""  # the first line of the error, for "raises"


def _tmpl(template: str) -> ChatTemplate:
    return ChatTemplate.load(template)


def _first_line(error: BaseException) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def _context(tmpl: ChatTemplate, tools: Sequence[Mapping[str, Any]] | None) -> dict[str, Any]:
    """What serving stacks pass besides the messages, for the templates that cannot do without it (FireFunction
    reads ``functions``, the tools as JSON text, and ``datetime``)."""
    context = {
        "functions": json.dumps([t.get("function", t) for t in tools or []], indent=4),
        "datetime": "Jan 01 2025",
        "date_string": "01 Jan 2025",
    }
    read = variables_read(tmpl.source)
    return {name: value for name, value in context.items() if name in read}


@functools.cache
def renderable_tools(template: str) -> list[dict[str, Any]] | None:
    """The request's tools, or None for a template that cannot render them (as apply() then renders it)."""
    tools = request_tools(template)
    tmpl = _tmpl(template)
    try:
        JinjaChatTemplate.render(tmpl, USER, tools, **_context(tmpl, tools))
    except TemplateError:
        return None
    return tools


def _render(tmpl: ChatTemplate, messages: Sequence[Mapping[str, Any]], generation: bool = False) -> str:
    """The template's own rendering, as transformers' (none of apply()'s adaptations of OpenAI messages)."""
    tools = renderable_tools(tmpl.name)
    context = _context(tmpl, tools)
    return JinjaChatTemplate.render(
        tmpl, messages, tools, add_generation_prompt=generation, enable_thinking=True, **context
    )


@functools.cache
def call_rendering(template: str) -> CallRendering:
    """Whether the template renders an assistant turn with a call (arguments as objects, else as JSON text; with no
    reasoning, else after some: Command A Reasoning renders calls only after the reasoning its model writes)."""
    tmpl = ChatTemplate.load(template)
    errors = []
    for objects, reasoning in ((True, ""), (False, ""), (True, "Let me look."), (False, "Let me look.")):
        message = call_message([("get_weather", {"city": "Oslo"})], reasoning=reasoning, objects=objects)
        try:
            base, full = _render(tmpl, USER), _render(tmpl, [*USER, message])
        except TemplateError as error:
            errors.append(_first_line(error))
            continue
        turn = full[common_prefix_len(base, full) :]
        named = "get_weather" in turn or tmpl.analysis.id_format == "named"  # (Kimi's ids: the name arrives in them)
        return CallRendering("renders" if named and "Oslo" in turn else "no calls")
    return CallRendering("raises", errors[0])


def _loop(templates: Iterable[str]) -> list[str]:
    """The templates of ``templates`` that render calls."""
    return [t for t in templates if call_rendering(t).kind == "renders"]


TEMPLATES = bundled_templates()
LOOP = _loop(sampled())  # the per-template cases: the sample's templates (tests/support/sample.py)


def test_every_template_is_accounted_for() -> None:
    """Templates whose call rendering raises are the listed ones (and a listed one that renders is stale); the
    templates that render calls are the ones with call outputs to loop over (those that render none have none);
    most templates render calls."""
    loop = _loop(TEMPLATES)
    without_calls = [t for t in TEMPLATES if call_rendering(t).kind == "no calls"]
    raising = {t for t in TEMPLATES if call_rendering(t).kind == "raises"}
    assert raising == set(CANNOT), f"unlisted: {sorted(raising - set(CANNOT))}; stale: {sorted(set(CANNOT) - raising)}"
    with_outputs = {t for t in TEMPLATES if any(o.calls for o in outputs(t))}
    assert with_outputs == set(loop), f"{sorted(set(loop) - with_outputs)} / {sorted(with_outputs - set(loop))}"
    assert len(loop) + len(without_calls) + len(CANNOT) == len(TEMPLATES)
    assert len(loop) >= 55, len(loop)
    stale = set(ARGUMENTS_AS_TEXT) | set(NO_FOLLOW_UP) | set(PREFIX_UNSTABLE) | set(CONTENT_AS_PARTS)
    stale |= set(SWITCH_FALLBACK) | set(PREFIX_DROPPED)
    assert stale <= set(loop), f"listed but not in the loop: {sorted(stale - set(loop))}"


@pytest.mark.parametrize("template", sorted(CANNOT))
def test_listed_templates_cannot_render_calls(template: str) -> None:
    expected, reason = CANNOT[template]
    found = call_rendering(template)
    assert found.kind == "raises", f"{template} renders calls now ({found.kind}): remove it from CANNOT ({reason})"
    assert expected in found.error, f"{template} raises otherwise than stated ({reason}): {found.error}"


def test_mirothinker_cannot_render_tools() -> None:
    """Nor a tool list: apply() renders its prompt without them, with a warning."""
    tmpl = _tmpl("MiroThinker")
    with pytest.raises(TemplateError, match="'tool' is undefined"):
        tmpl.render(USER, request_tools("MiroThinker"))
    params = tmpl.apply(USER, tools=request_tools("MiroThinker"))
    assert any("cannot render a tool list" in w for w in params.warnings), params.warnings


@pytest.mark.parametrize("template", sorted(ARGUMENTS_AS_TEXT))
def test_listed_templates_read_arguments_as_text(template: str) -> None:
    tmpl = ChatTemplate.load(template)
    as_text = _render(tmpl, [*USER, call_message([("get", {"city": "Oslo"})])])
    assert "Oslo" in as_text
    with pytest.raises(TemplateError):
        _render(tmpl, [*USER, call_message([("get", {"city": "Oslo"})], objects=True)])


# --- one loop -------------------------------------------------------------------------------------------------------


@functools.cache
def turn_one(template: str) -> ChatParams:
    """Turn 1: the user's question with the tools (the request every output of the template answers)."""
    return _tmpl(template).apply(
        USER, tools=request_tools(template), reasoning_format="auto", parallel_tool_calls=True, enable_thinking=True
    )


def tool_results(message: ChatMessage | Mapping[str, Any]) -> list[dict[str, Any]]:
    """One result per call, referencing the call's id."""
    calls = message.to_openai()["tool_calls"] if isinstance(message, ChatMessage) else message["tool_calls"]
    return [
        {"role": "tool", "tool_call_id": call["id"], "content": f"tool result {i + 1}: 21C and a light wind"}
        for i, call in enumerate(calls)
    ]


def conversation(assistant: Mapping[str, Any], ending: str) -> list[dict[str, Any]]:
    return [*USER, dict(assistant), *tool_results(assistant), *([FOLLOW_UP] if ending == "follow-up" else [])]


def render_turn_two(template: str, message: ChatMessage, ending: str) -> tuple[list[dict[str, Any]], ChatParams]:
    """What the client sends back, and turn 2 (a render error propagates)."""
    messages = json.loads(json.dumps(conversation(message.to_openai(), ending)))  # as the client sends it
    sent = copy.deepcopy(messages)
    params = _tmpl(template).apply(
        messages, tools=request_tools(template), reasoning_format="auto", enable_thinking=True
    )
    assert messages == sent, "apply() changed the client's messages"
    return messages, params


@dataclass(frozen=True)
class Loop:
    output: Output
    ending: str
    message: ChatMessage | None  # None if the reply's calls did not parse
    prompt: str = ""  # turn 2
    error: str = ""  # why there is no turn 2
    warnings: tuple[str, ...] = ()  # what apply() said of turn 2


@functools.cache
def loop(template: str, label: str, ending: str) -> Loop:
    output = next(o for o in outputs(template) if o.label == label)
    message = turn_one(template).parse(output.text)
    if [c.name for c in message.tool_calls] != [c.name for c in output.calls]:
        return Loop(output, ending, None, error=f"parsed calls {[c.name for c in message.tool_calls]}")
    try:
        _, params = render_turn_two(template, message, ending)
    except Exception as error:  # reported by the test, with the exception
        return Loop(output, ending, message, error=f"turn 2 raises {type(error).__name__}: {_first_line(error)}")
    return Loop(output, ending, message, params.prompt, warnings=tuple(params.warnings))


def loop_wire(found: Loop) -> dict[str, Any]:
    assert found.message is not None
    return json.loads(json.dumps(found.message.to_openai()))


def cases(template: str) -> list[tuple[str, str]]:
    """(output label, ending) of every loop the template takes part in."""
    labels = [o.label for o in outputs(template) if o.calls]
    endings = [e for e in ENDINGS if e != "follow-up" or template not in NO_FOLLOW_UP]
    return [(label, ending) for label in labels for ending in endings]


# --- what turn 2 must hold ------------------------------------------------------------------------------------------


def reference(template: str, output: Output, message: ChatMessage, ending: str) -> tuple[str, str]:
    """The template's own rendering of turn 2 (the reply's source message, arguments as objects unless the template
    reads them as text, with the ids the client got), and the stretch of it from the assistant turn's start to the
    first tool result's text: the first turn as the template renders it in history."""
    tmpl = _tmpl(template)
    ids = [call.id for call in message.tool_calls]
    source = source_message(output, ids, objects=template not in ARGUMENTS_AS_TEXT)
    if not source["content"]:
        source["content"] = calls_only_content(template)
    # (request data prints as JSON where a template prints it, as apply() hands it over: never a Python repr)
    messages = conversation(source, ending)
    first_result = messages[2]["content"]
    if tmpl.capabilities.needs_tool_result_name:  # a result names its function for the template (as apply() does)
        names = {call["id"]: call["function"]["name"] for call in source["tool_calls"]}
        messages = [m | {"name": names[m["tool_call_id"]]} if m["role"] == "tool" else m for m in messages]
    if request_profile(tmpl).tool_result_list:  # a result in a list where a string would be split (as apply() does)
        messages = [m | {"content": [m["content"]]} if m["role"] == "tool" else m for m in messages]
    messages = as_json_data(messages)
    rendered = _render(tmpl, messages, generation=True)
    before = _render(tmpl, USER)
    start = len(before) if rendered.startswith(before) else common_prefix_len(before, rendered)
    end = rendered.find(first_result, start)
    assert end >= 0, f"the template's own rendering holds no tool result: {rendered[start:]!r:.300}"
    return rendered, rendered[start:end]


@functools.cache
def calls_only_content(template: str) -> str | None:
    """The content of a turn with calls and nothing else as the template takes it: None, as OpenAI clients send it,
    unless the template raises on None or prints it ("None"); then ""."""
    tmpl = _tmpl(template)
    output = next(o for o in outputs(template) if o.calls)  # (Command A Reasoning renders calls after reasoning only)
    rendered = []
    for content in ("", None):
        source = source_message(output, objects=template not in ARGUMENTS_AS_TEXT) | {"content": content}
        try:
            rendered.append(_render(tmpl, conversation(source, "results"), generation=True))
        except TemplateError:
            return ""
    return None if rendered[1].count("None") == rendered[0].count("None") else ""


def _where_it_parts(expected: str, prompt: str) -> str:
    """Where ``expected`` stops matching ``prompt`` (its longest start found in it)."""
    low, high = 0, len(expected)
    while low < high:  # the longest k with expected[:k] in prompt (containment of prefixes is monotone)
        mid = (low + high + 1) // 2
        low, high = (mid, high) if expected[:mid] in prompt else (low, mid - 1)
    at = prompt.find(expected[:low]) + low
    return (
        f"matches up to {low}/{len(expected)}: expected …{expected[max(low - 40, 0) : low + 60]!r}, "
        f"turn 2 has …{prompt[max(at - 40, 0) : at + 60]!r}"
    )


def _moved_span(head: str, prompt: str) -> str:
    """The stretch of ``head`` (turn 1's prompt) that turn 2 does not have where ``head`` has it: from where they
    part to where ``head`` goes on as turn 2 does (a tool list moved elsewhere), or to its end."""
    start = common_prefix_len(head, prompt)
    for end in range(start + 1, len(head)):
        rest = head[end:]
        if len(rest) >= 16 and prompt.startswith(rest[:16], start):
            return head[start:end]
    return head[start:]


def loop_problems(template: str, label: str, ending: str) -> list[str]:
    found = loop(template, label, ending)
    where = f"{template}:{label} ({ending})"
    if found.message is None or not found.prompt:
        return [f"{where}: {found.error}"]
    problems = []
    params, message, prompt = turn_one(template), found.message, found.prompt
    if not generated_ids_ok(message, template):
        problems.append(f"{where}: ids {[c.id for c in message.tool_calls]} (generated ones must be the template's)")
    if checks_ids(template) and not all(ALNUM9.fullmatch(c.id) for c in message.tool_calls):
        problems.append(f"{where}: the template takes only 9-alphanumeric ids: {[c.id for c in message.tool_calls]}")
    wire = loop_wire(found)
    if any(not isinstance(json.loads(c["function"]["arguments"]), dict) for c in wire["tool_calls"]):
        problems.append(f"{where}: arguments that are not a JSON object: {wire['tool_calls']}")
    if (wire["content"] is None) != (not message.content):
        problems.append(f"{where}: content {wire['content']!r} for a reply with content {message.content!r}")
    _, turn = reference(template, found.output, message, ending)
    assert all(c.name in turn for c in message.tool_calls), f"{where}: no turn found in the reference: {turn!r}"
    if turn not in prompt and template not in CONTENT_AS_PARTS:
        problems.append(f"{where}: turn 2 lacks the first turn as rendered in history: {_where_it_parts(turn, prompt)}")
    results = [r["content"] for r in tool_results(message)]
    missing = [r for r in results if r not in prompt]
    if missing:
        problems.append(f"{where}: turn 2 lacks the tool results {missing}")
    head = params.prompt[: len(params.prompt) - len(params.generation_prompt)]
    stable = prompt.startswith(head)
    if template in PREFIX_UNSTABLE:
        moved = _moved_span(head, prompt)
        after = prompt.rfind(results[-1])
        if not stable and (after < 0 or moved not in prompt[after:]):
            problems.append(f"{where}: {moved!r:.200} is not after the results ({PREFIX_UNSTABLE[template]})")
    elif template in PREFIX_DROPPED and not stable:
        moved = _moved_span(head, prompt)
        if moved in prompt:
            problems.append(f"{where}: {moved!r:.200} is still in turn 2 ({PREFIX_DROPPED[template]})")
    elif template in SWITCH_FALLBACK and not stable:
        if not any("rendered with the template's default" in w for w in found.warnings):
            problems.append(f"{where}: turn 2 starts otherwise with no switch fallback ({SWITCH_FALLBACK[template]})")
    elif not stable:
        problems.append(f"{where}: turn 2 does not start with turn 1's prompt: {_where_it_parts(head, prompt)}")
    return problems


@pytest.mark.parametrize("template", LOOP)
def test_agent_loop(template: str) -> None:
    problems = [p for label, ending in cases(template) for p in loop_problems(template, label, ending)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("template", sorted(NO_FOLLOW_UP))
def test_listed_templates_refuse_a_user_message_after_results(template: str) -> None:
    expected, reason = NO_FOLLOW_UP[template]
    for output in (o for o in outputs(template) if o.calls):
        try:
            _render(_tmpl(template), conversation(source_message(output), "follow-up"), generation=True)
        except TemplateError as error:
            assert expected in str(error), f"{output.key} raises otherwise than stated ({reason}): {error}"
        else:
            pytest.fail(f"{output.key} renders a user message after the results: remove it from NO_FOLLOW_UP")


# --- call ids -------------------------------------------------------------------------------------------------------


@functools.cache
def checks_ids(template: str) -> bool:
    """Whether the template refuses an OpenAI-style call id where it takes a 9-alphanumeric one (Mistral's)."""
    tmpl = _tmpl(template)
    objects = template not in ARGUMENTS_AS_TEXT

    def renders(call_id: str) -> bool:
        message = call_message([("get", {"city": "Oslo"})], ids=[call_id], objects=objects)
        try:
            _render(tmpl, conversation(message, "results"))
        except TemplateError:
            return False
        return True

    return renders(CALL_IDS[0]) and not renders(OPENAI_STYLE_ID)


# Where a template writes a call's id in its reply: removed, the reply is one a model writes without ids.
_ID_MARKUP = (r',\s*"id":\s*"{id}"', r"\[CALL_ID\]{id}")


def without_ids(text: str) -> str:
    for call_id in CALL_IDS:
        for pattern in _ID_MARKUP:
            text = re.sub(pattern.format(id=call_id), "", text)
    return text


def test_mistral_family_is_found() -> None:
    found = {t for t in _loop(TEMPLATES) if checks_ids(t)}
    assert {"mistralai-Mistral-Nemo-Instruct-2407", "Mistral-Small-3.2-24B-Instruct-2506"} <= found, found


@pytest.mark.parametrize("template", [t for t in LOOP if checks_ids(t)])
def test_generated_ids_are_ones_the_template_accepts(template: str) -> None:
    """A reply written without ids (real Mistral models write none) gets generated ids the next turn renders."""
    for output in (o for o in outputs(template) if o.calls):
        text = without_ids(output.text)
        assert not any(call_id in text for call_id in CALL_IDS), f"cannot remove the ids from {text!r}"
        message = turn_one(template).parse(text)
        assert [c.name for c in message.tool_calls] == [c.name for c in output.calls], output.key
        ids = [c.id for c in message.tool_calls]
        assert all(c.id_generated for c in message.tool_calls), ids
        assert all(ALNUM9.fullmatch(i) for i in ids) and len(set(ids)) == len(ids), ids
        prompt = render_turn_two(template, message, "results")[1].prompt
        assert all(i in prompt for i in ids), (ids, prompt)


# --- streamed -------------------------------------------------------------------------------------------------------


def streamed(params: ChatParams, text: str, seed: int) -> ChatMessage:
    """The message a client rebuilds from the chunks a server sends (one per feed, deltas merged)."""
    stream = params.stream()
    chunks = [merge_deltas(stream.feed(piece)) for piece in random_chunks(text, seed)]
    chunks.append(merge_deltas(stream.finish()))
    return apply_deltas(chunks)


def stream_problems(template: str, label: str, ending: str, seed: int) -> list[str]:
    found = loop(template, label, ending)
    where = f"{template}:{label} ({ending}, seed {seed})"
    if found.message is None:
        return []  # the parse test reports it
    message = streamed(turn_one(template), found.output.text, seed)
    parsed = found.message
    if (message.content, message.reasoning_content) != (parsed.content, parsed.reasoning_content):
        return [f"{where}: streamed {message.content!r:.80}/{message.reasoning_content!r:.80} != parsed"]
    if [(c.name, c.arguments) for c in message.tool_calls] != [(c.name, c.arguments) for c in parsed.tool_calls]:
        return [f"{where}: streamed calls {message.tool_calls} != parsed {parsed.tool_calls}"]
    shape = ID_SHAPES[_tmpl(template).analysis.id_format]
    ids = [c.id for c in message.tool_calls]
    for mine, theirs in zip(message.tool_calls, parsed.tool_calls, strict=True):
        # the model's ids as written; generated ones (a stream generates its own) in the template's format, unique
        if (
            (mine.id != theirs.id)
            if not theirs.id_generated
            else not shape.fullmatch(mine.id) or ids.count(mine.id) > 1
        ):
            return [f"{where}: streamed id {mine.id!r} for the parse's {theirs.id!r}"]
    try:
        prompt = render_turn_two(template, message, ending)[1].prompt
    except Exception as error:
        mine = f"turn 2 raises {type(error).__name__}: {_first_line(error)}"
        return [] if mine == found.error else [f"{where}: streamed: {mine}; parsed: {found.error or 'renders'}"]
    if found.error:
        return [f"{where}: turn 2 from the streamed message renders; from the parsed one: {found.error}"]
    for mine, theirs in zip(message.tool_calls, parsed.tool_calls, strict=True):
        prompt = prompt.replace(mine.id, theirs.id)
    if prompt != found.prompt:
        return [f"{where}: turn 2 from the streamed message differs: {_where_it_parts(found.prompt, prompt)}"]
    return []


@pytest.mark.parametrize("template", LOOP)
def test_streamed_agent_loop(template: str) -> None:
    problems = [
        p for label, ending in cases(template) for seed in SEEDS for p in stream_problems(template, label, ending, seed)
    ]
    assert not problems, "\n".join(problems)


# --- tool results as text parts -------------------------------------------------------------------------------------


def _as_parts(message: Mapping[str, Any]) -> dict[str, Any]:
    if message["role"] != "tool":
        return dict(message)
    return {**message, "content": [{"type": "text", "text": message["content"]}]}


@pytest.mark.parametrize("template", LOOP)
def test_tool_results_as_text_parts(template: str) -> None:
    """A client may send a tool result as a list of text parts (OpenAI's API allows it): turn 2 is the one with the
    same texts as strings."""
    problems = []
    for label, ending in cases(template):
        found = loop(template, label, ending)
        if found.message is None or not found.prompt:
            continue  # test_agent_loop reports it
        messages = [_as_parts(m) for m in conversation(loop_wire(found), ending)]
        where = f"{template}:{label} ({ending})"
        try:
            prompt = (
                _tmpl(template)
                .apply(messages, tools=request_tools(template), reasoning_format="auto", enable_thinking=True)
                .prompt
            )
        except Exception as error:
            problems.append(f"{where}: turn 2 raises {type(error).__name__}: {_first_line(error)}")
            continue
        if prompt != found.prompt:
            problems.append(
                f"{where}: turn 2 differs from the one with string results: {_where_it_parts(found.prompt, prompt)}"
            )
    assert not problems, "\n".join(problems)
