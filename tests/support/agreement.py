"""Grammar ⇔ parser agreement: random outputs of a request's grammar must parse into valid calls.

A grammar steers a model; the parser reads what the model wrote. Whatever the grammar lets a model write, the
parser must read back as intended: calls (no warnings, nothing left in the content that looks like a call) to
declared tools, with arguments that validate against the tool's JSON schema. Samples come from llguidance's
matcher walking the Lark grammar with random allowed tokens (``llg.Sampler``); each sample is also checked against
the GBNF grammar by the strict recognizer, so both dialects describe what the parser reads.

Four grammars per template:

* ``auto-full``: tool_choice auto, the whole-output grammar (free text and/or calls), parallel calls allowed;
* ``auto-lazy``: tool_choice auto, the lazy grammar from its trigger on, one call; the output is a short answer
  (closing the reasoning block the prompt opened, if any) followed by the sample;
* ``required``: at least one call, parallel calls allowed;
* ``named``: one call of a given tool.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from autoparser import ChatMessage, ChatParams, ChatTemplate
from autoparser.check.recognizer import accepts
from autoparser.errors import TemplateError

from . import llg
from .grammar_check import trigger_position
from .outputs import markers

USER = [{"role": "user", "content": "Plan my trip."}]


def _tool(name: str, properties: Mapping[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    # Every property has a description: some templates print it unconditionally (Command R+).
    described = {key: {**value, "description": key.title()} for key, value in properties.items()}
    schema = {"type": "object", "properties": described, "required": list(required)}
    return {"type": "function", "function": {"name": name, "description": f"{name} tool", "parameters": schema}}


# Schemas of the kinds tools declare: enums, integers with bounds, numbers, booleans, length limits, nested
# objects, arrays, optional members, and a tool without parameters. (No "null" type: Hermes templates recurse
# forever on it.)
TOOLS = [
    _tool(
        "get_weather",
        {"city": {"type": "string", "enum": ["Paris", "Tokyo", "New York"]}, "days": {"type": "integer"}},
        ["city", "days"],
    ),
    _tool(
        "search_web",
        {
            "query": {"type": "string"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 10},
            "safe": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        },
        ["query"],
    ),
    _tool(
        "book_room",
        {
            "guest": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                "required": ["name"],
            },
            "price": {"type": "number"},
            "note": {"type": "string", "maxLength": 20},
        },
        ["guest", "price"],
    ),
    _tool("get_time", {}),
]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
NAMED = "search_web"
KINDS = ("auto-full", "auto-lazy", "required", "named")


@dataclass
class Report:
    """What sampling one grammar found."""

    template: str
    kind: str
    samples: int = 0
    with_calls: int = 0
    calls: int = 0
    unfinished: int = 0  # walks that hit the token limit (not judged)
    engine_errors: list[str] = field(default_factory=list)  # llguidance failures (sampling went on with bytes)
    failures: list[str] = field(default_factory=list)


@functools.cache
def request(template: str, kind: str) -> ChatParams:
    tool_choice: Any = {"auto-full": "auto", "auto-lazy": "auto", "required": "required"}.get(
        kind, {"type": "function", "function": {"name": NAMED}}
    )
    return ChatTemplate.load(template).apply(
        USER, tools=tools_for(template), tool_choice=tool_choice, parallel_tool_calls=kind in ("auto-full", "required")
    )


@functools.cache
def tools_for(template: str) -> list[dict[str, Any]]:
    """The tools the template can render (Command R+ insists on ``additionalProperties`` in nested objects)."""
    tmpl = ChatTemplate.load(template)
    usable = []
    for tool in TOOLS:
        try:
            tmpl.apply(USER, tools=[tool])
        except TemplateError:
            continue
        usable.append(tool)
    return usable


def grammars(chat: ChatParams, kind: str) -> tuple[str, str] | None:
    """(Lark, GBNF) for the kind, or None when the request has none."""
    if kind == "auto-full":
        pair = (chat.full_lark_grammar, chat.full_grammar) if chat.grammar_lazy else (None, None)
    elif kind == "auto-lazy":
        pair = (chat.lark_grammar, chat.grammar) if chat.grammar_lazy else (None, None)
    else:
        pair = (chat.lark_grammar, chat.grammar)
    return None if pair[0] is None or pair[1] is None else (pair[0], pair[1])


def answer_prefix(chat: ChatParams) -> str | None:
    """A short answer after which a call may start: it closes the reasoning block the prompt opened, if any."""
    end = chat.thinking_end_tag
    for prefix in ("", f"Plan.{end}", f"Plan.{end}\n\n", f"Plan.\n{end}\n\n") if end else ("",):
        probe = chat.parse(prefix + "Hello")
        if probe.content.strip() == "Hello" and not probe.warnings:
            return prefix
    return None


def sampler(template: str, chat: ChatParams, seed: int) -> llg.Sampler:
    # The trigger words are pieces for every kind (a required grammar has no triggers of its own, but its calls
    # start with the same marker: FireFunction's `functools[`).
    lazy = request(template, "auto-lazy").grammar_triggers if chat.grammar_lazy is False else ()
    triggers = [t.value for t in (*chat.grammar_triggers, *lazy) if t.type == "word"]
    pieces = [*markers(template), *chat.preserved_tokens, *triggers, chat.thinking_start_tag, chat.thinking_end_tag]
    return llg.Sampler([*pieces, *SCHEMAS], seed=seed)


def check(template: str, kind: str, count: int, seed: int = 0) -> Report | None:
    """Sample ``count`` outputs of the template's ``kind`` grammar and judge each; None when there is no grammar."""
    chat = request(template, kind)
    pair = grammars(chat, kind)
    if pair is None:
        return None
    lark, gbnf = pair
    report = Report(template, kind)
    walker = sampler(template, chat, seed)
    grammar = walker.compile(lark)
    prefix = answer_prefix(chat) if kind == "auto-lazy" else ""
    if prefix is None:
        report.failures.append("no short answer closes the reasoning block the prompt opens")
        return report
    for _ in range(count):
        try:
            sample = walker.sample(grammar)
        except ValueError as error:
            # An llguidance failure (a panic, a mask too complex for it): not a disagreement between grammar and
            # parser. It is reported; sampling goes on over single bytes, or stops if that fails too.
            report.engine_errors.append(str(error).splitlines()[0])
            if len(report.engine_errors) > 1:
                break
            walker = llg.Sampler([], seed=seed + 1)
            grammar = walker.compile(lark)
            continue
        if sample.text is None:
            report.unfinished += 1
            continue
        report.samples += 1
        problems, message = judge(chat, kind, prefix, sample.text, gbnf)
        if problems:
            report.failures.append(f"{'; '.join(problems)} <- {sample.text!r}")
        else:
            report.with_calls += bool(message.tool_calls)
            report.calls += len(message.tool_calls)
    return report


def _declared_names(schema: Any) -> set[str]:
    """Every property name a schema declares, at any depth."""
    if isinstance(schema, list):
        return set().union(*map(_declared_names, schema)) if schema else set()
    if not isinstance(schema, dict):
        return set()
    names = set(schema.get("properties") or {})
    return names.union(*map(_declared_names, schema.values()))


_DECLARED = set().union(*map(_declared_names, SCHEMAS.values()))
_REPEATED_KEY = re.compile(r"duplicate key ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"): ")
_CALLED = re.compile(r"tool call '([^']+)'")


def _free_key_repeated(warning: str) -> bool:
    """A key repeated in a free-form object (additional properties): no context-free grammar can forbid that (it
    would have to remember every key written), so the parser's rule applies (the first is kept, with this
    warning). A declared property never repeats: the schema converter writes each once. (Declared by the called
    tool: `name` is a property of book_room's guest, and a free key of get_time's arguments.)"""
    found = _REPEATED_KEY.search(warning)
    called = _CALLED.search(warning)
    declared = _declared_names(SCHEMAS[called.group(1)]) if called and called.group(1) in SCHEMAS else _DECLARED
    return found is not None and ast.literal_eval(found.group(1)) not in declared


def judge(chat: ChatParams, kind: str, prefix: str, text: str, gbnf: str) -> tuple[list[str], ChatMessage]:
    """What is wrong with reading grammar sample ``text`` (after ``prefix``) back with the parser, and the message
    it reads."""
    problems = []
    output = prefix + text
    message = chat.parse(output)
    problems += [f"warning: {w.message} at {w.position}" for w in message.warnings if not _free_key_repeated(w.message)]
    calls = message.tool_calls
    for call in calls:
        schema = SCHEMAS.get(call.name)
        if schema is None:
            problems.append(f"call to undeclared {call.name!r}")
            continue
        try:
            arguments = json.loads(call.arguments)
            jsonschema.validate(arguments, schema)
        except (json.JSONDecodeError, jsonschema.ValidationError) as error:
            problems.append(f"{call.name} arguments {call.arguments}: {str(error).splitlines()[0]}")
    fired = trigger_position(chat, chat.generation_prompt + output) >= 0
    if kind == "auto-full":
        if fired and not calls:
            problems.append("a trigger fires but the parser reads no call")
        if calls and not fired:
            problems.append("the parser reads a call but no trigger fires")
    elif not calls:
        problems.append("no call")
    if kind == "named" and any(c.name != NAMED for c in calls):
        problems.append(f"a call other than {NAMED}")
    if kind in ("auto-lazy", "named") and len(calls) > 1:
        problems.append(f"{len(calls)} calls where parallel calls are off")
    if not accepts(gbnf, text):
        problems.append("the GBNF grammar rejects it")
    return problems, message
