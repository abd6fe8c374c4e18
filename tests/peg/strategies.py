"""Hypothesis strategies shared by the PEG property tests.

Three families:

* chat outputs: random but *valid* model outputs for the realistic chat parsers built in
  :mod:`tests.peg.test_properties` (reasoning, Hermes JSON tool calls, Qwen3-Coder tagged calls, DeepSeek
  calls with multi-code-point Unicode markers), each returned with the values the parse must recover;
* JSON / Python values for the scanner tests;
* random parser graphs (every combinator, including a recursive rule) plus random text for fuzzing.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from collections.abc import Sequence as Seq
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from autoparser import peg as p
from autoparser.peg.graph import collect_rules, walk
from autoparser.peg.nodes import (
    AnyChar,
    Atomic,
    Chars,
    Choice,
    Gbnf,
    Json,
    Literal,
    Recover,
    Ref,
    Repeat,
    Rule,
    Schema,
    Sequence,
    Space,
    StringContent,
    Tag,
    Until,
)

# --------------------------------------------------------------------------------------------------
# Markers of the chat formats.

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
PARAM_CLOSE = "</parameter>"
DS_CALLS_BEGIN = "<｜tool▁calls▁begin｜>"
DS_CALLS_END = "<｜tool▁calls▁end｜>"
DS_CALL_BEGIN = "<｜tool▁call▁begin｜>"
DS_CALL_END = "<｜tool▁call▁end｜>"
DS_SEP = "<｜tool▁sep｜>"

TOOL_NAMES = ("get_weather", "get_time", "search")

# Pieces that make random text interesting for these formats: markers and proper prefixes of markers,
# look-alike Unicode, multi-code-point characters, JSON punctuation, whitespace.
FRAGMENTS = (
    "<", ">", "/", "</", "<t", "<th", "<think", "</think", "</thi", "<tool", "<tool_call", "</tool_call",
    "<function=", "</function", "<parameter=", "</parameter", "</param", "<｜", "｜>", "▁", "<｜tool",
    "<｜tool▁calls", "<｜tool▁call▁begin", "<｜tool▁sep", "｜tool▁sep｜", "{", "}", "[", "]", '"', "'",
    "\\", ":", ",", "\n", "\r\n", " ", "  ", "\t", "é", "漢字", "😀", "👩‍💻", "e\u0301", "\u200b", "\x00",
    "get_weather", "Paris", "hello", "42", "-1.5e3", "null", "true",
)


def _text_pieces(max_pieces: int) -> st.SearchStrategy[str]:
    piece = st.sampled_from(FRAGMENTS) | st.text(max_size=4)
    return st.lists(piece, max_size=max_pieces).map("".join)


def without(text: str, markers: Seq[str]) -> str:
    """``text`` with every occurrence of ``markers`` broken up (each pass shortens the text)."""
    changed = True
    while changed:
        changed = False
        for marker in markers:
            if marker in text:
                text = text.replace(marker, marker[:-1])
                changed = True
    return text


def free_text(*forbidden: str, max_pieces: int = 12) -> st.SearchStrategy[str]:
    """Random text full of marker fragments that contains none of ``forbidden``."""
    return _text_pieces(max_pieces).map(lambda text: without(text, forbidden))


noise = _text_pieces(20)
"""Arbitrary text biased towards marker fragments (for the "never raises" checks)."""

# --------------------------------------------------------------------------------------------------
# JSON and Python values.

_JSON_TEXT = st.text(max_size=6) | st.sampled_from(FRAGMENTS)

json_scalars: st.SearchStrategy[Any] = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _JSON_TEXT
)

json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_JSON_TEXT, children, max_size=4),
    max_leaves=12,
)
"""JSON-compatible Python values (finite floats only)."""

json_objects: st.SearchStrategy[dict[str, Any]] = st.dictionaries(_JSON_TEXT, json_values, max_size=3)

dump_options = st.fixed_dictionaries(
    {
        "indent": st.sampled_from([None, 0, 2, "\t"]),
        "ensure_ascii": st.booleans(),
        "separators": st.sampled_from([None, (",", ":"), (" , ", " : ")]),
    }
)
"""Keyword arguments for :func:`json.dumps`."""

# Text that looks like JSON: scanner edge cases (NaN, Infinity, bad escapes, leading zeros...).
_JSONISH_PIECES = (
    "{", "}", "[", "]", ",", ":", '"', "'", "\\", "\\u", "\\u00e9", "\\x", "\\n", "0", "1", "01", "-", "+",
    ".", "e", "E", "1e5", "-0.5", "true", "false", "null", "True", "None", "NaN", "Infinity", "-Infinity",
    " ", "\n", "\t", "\r", "\x0b", "\x0c", "\xa0", "\ufeff", "a", "é", "😀", "\x00", "\x1f",
)
jsonish_text: st.SearchStrategy[str] = st.lists(
    st.sampled_from(_JSONISH_PIECES) | st.text(max_size=2), max_size=16
).map("".join)


@st.composite
def mutated_json(draw: st.DrawFn) -> str:
    """A valid JSON document with one random character inserted, deleted or replaced."""
    text = json.dumps(draw(json_values), **draw(dump_options))
    if not text:
        return text
    i = draw(st.integers(0, len(text) - 1))
    ch = draw(st.sampled_from(_JSONISH_PIECES))
    op = draw(st.sampled_from(["insert", "delete", "replace", "truncate"]))
    if op == "insert":
        return text[:i] + ch + text[i:]
    if op == "delete":
        return text[:i] + text[i + 1 :]
    if op == "replace":
        return text[:i] + ch + text[i + 1 :]
    return text[:i]


python_values: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | _JSON_TEXT,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_JSON_TEXT, children, max_size=4),
    max_leaves=12,
)
"""Values whose ``repr()`` is a Python literal accepted by ``p.python_value()``."""

# --------------------------------------------------------------------------------------------------
# Valid chat outputs.


@dataclass
class ChatOutput:
    """A generated model output and what a complete parse of it must recover."""

    text: str
    reasoning: str = ""
    content: str = ""
    tool_names: list[str] = field(default_factory=list)
    arg_values: list[str] = field(default_factory=list)
    tool_args: list[Any] = field(default_factory=list)


_SPACE = " \t\n\r\x0b\x0c"
_separators = st.sampled_from(["", "\n", "\n\n", " ", "\r\n"])


@st.composite
def reasoning_outputs(draw: st.DrawFn) -> ChatOutput:
    """``[<think>REASONING</think>][space]CONTENT``."""
    content = draw(free_text())
    if draw(st.booleans()):
        reasoning = draw(free_text(THINK_CLOSE))
        gap = draw(_separators)
        text = f"{THINK_OPEN}{reasoning}{THINK_CLOSE}{gap}{content}"
        return ChatOutput(text, reasoning=reasoning, content=content.lstrip(_SPACE))
    # Without a reasoning block the content must not itself open one: a prefix "<think>..." is, by
    # design, streamed as reasoning until proven otherwise.
    if content.startswith(THINK_OPEN):
        content = "x" + content
    return ChatOutput(content, content=content.lstrip(_SPACE))


@st.composite
def hermes_outputs(draw: st.DrawFn) -> ChatOutput:
    """``CONTENT(<tool_call>\\n{"name": NAME, "arguments": ARGS}\\n</tool_call>\\n)*``."""
    content = draw(free_text(TOOL_CALL_OPEN))
    calls = draw(st.lists(st.tuples(st.sampled_from(TOOL_NAMES), json_objects, dump_options), max_size=3))
    parts = [content]
    for name, args, options in calls:
        body = json.dumps({"name": name, "arguments": args}, **options)
        parts.append(f"{TOOL_CALL_OPEN}\n{body}\n{TOOL_CALL_CLOSE}{draw(_separators)}")
    return ChatOutput(
        "".join(parts), content=content, tool_names=[c[0] for c in calls], tool_args=[c[1] for c in calls]
    )


_arg_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABC_0123456789", min_size=1, max_size=8)


@st.composite
def qwen_outputs(draw: st.DrawFn) -> ChatOutput:
    """Qwen3-Coder: ``<tool_call>\\n<function=NAME>\\n<parameter=ARG>\\nVALUE\\n</parameter>\\n...``."""
    content = draw(free_text(TOOL_CALL_OPEN))
    parts = [content]
    names: list[str] = []
    values: list[str] = []
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(TOOL_NAMES))
        names.append(name)
        parts.append(f"{TOOL_CALL_OPEN}\n<function={name}>\n")
        for _ in range(draw(st.integers(0, 3))):
            value = draw(free_text(PARAM_CLOSE)) + "\n"
            values.append(value)
            parts.append(f"<parameter={draw(_arg_names)}>\n{value}{PARAM_CLOSE}\n")
        parts.append(f"</function>\n{TOOL_CALL_CLOSE}{draw(_separators)}")
    return ChatOutput("".join(parts), content=content, tool_names=names, arg_values=values)


@st.composite
def deepseek_outputs(draw: st.DrawFn) -> ChatOutput:
    """DeepSeek V3.1: ``[<think>R</think>]CONTENT[<｜tool▁calls▁begin｜>(<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>)+<｜tool▁calls▁end｜>]``."""  # noqa: E501
    out = ChatOutput("")
    parts: list[str] = []
    content = draw(free_text(DS_CALLS_BEGIN))
    if draw(st.booleans()):
        out.reasoning = draw(free_text(THINK_CLOSE))
        parts.append(f"{THINK_OPEN}{out.reasoning}{THINK_CLOSE}{draw(_separators)}")
    elif content.startswith(THINK_OPEN):
        content = "x" + content
    out.content = content.lstrip(_SPACE)
    parts.append(content)
    calls = draw(st.lists(st.tuples(st.sampled_from(TOOL_NAMES), json_objects, dump_options), max_size=3))
    if calls:
        parts.append(DS_CALLS_BEGIN)
        for name, args, options in calls:
            parts.append(f"{DS_CALL_BEGIN}{name}{DS_SEP}{json.dumps(args, **options)}{DS_CALL_END}")
        parts.append(DS_CALLS_END)
    out.text = "".join(parts)
    out.tool_names = [c[0] for c in calls]
    out.tool_args = [c[1] for c in calls]
    return out


# --------------------------------------------------------------------------------------------------
# Random parser graphs.

FUZZ_ALPHABET = "ab<>/=\n é｜▁😀"
"""Characters of literals and delimiters in fuzzed graphs (multi-code-point markers included)."""

FUZZ_TEXT_ALPHABET = FUZZ_ALPHABET + "{}[]\":,0123456789-.eEtrufalsnNTFo'\\\t"

CHAR_CLASSES = (
    "[a-z]", "[^<]", "[0-9]", "[ \\n]", "[^a]", "[<>/]", "[\\u4e00-\\u9fff]", "[^\\n<｜]", "[a-zA-Z_]",
    "[｜▁]", "^\\x00-\\x7f", "[\\U0001F600-\\U0001F64F]", "[\\]\\[\\-\\^]", "[^]",
)

RULE_NAME_PREFIXES = ("r", "tool-", "ü_", "root", "space", "a.b-", "json-value")
TAG_NAMES = ("t", "content", "tool-name", "x")

_fuzz_strings = st.text(alphabet=FUZZ_ALPHABET, max_size=4)
_fuzz_delimiters = st.text(alphabet=FUZZ_ALPHABET, min_size=1, max_size=4)


def _bounds(lo_max: int, extra_max: int) -> st.SearchStrategy[tuple[int, int]]:
    """``(min, max)`` pairs with ``max == -1`` meaning unbounded."""
    return st.tuples(st.integers(0, lo_max), st.none() | st.integers(0, extra_max)).map(
        lambda b: (b[0], -1 if b[1] is None else b[0] + b[1])
    )


def json_leaves(*, schema_available: bool) -> st.SearchStrategy[p.Parser]:
    """Every JSON/Python leaf; without the schema module, only those whose GBNF does not need it."""
    leaves: list[Callable[[], p.Parser]] = [
        lambda: p.json_string_content('"'),
        lambda: p.json_string_content("'"),
    ]
    if schema_available:
        leaves += [
            p.json,
            lambda: p.json("python"),
            p.python_value,
            p.json_object,
            lambda: p.json_object("python"),
            p.json_array,
            lambda: p.json_array("python"),
            p.json_string,
            lambda: p.json_string("python"),
            p.json_number,
            p.json_bool,
            lambda: p.json_bool("python"),
            p.json_null,
            lambda: p.json_null("python"),
            lambda: p.json_string_content('"', "python"),
            lambda: p.json_string_content("'", "python"),
            lambda: p.json_member("k", p.json()),
            lambda: p.member("ü\"", p.number()),
        ]
    return st.sampled_from(leaves).map(lambda make: make())


# Schemas for ``schema()`` nodes (``raw`` ones only matter for string schemas).
_SCHEMAS: tuple[Any, ...] = (
    None,
    {},
    {"type": "string"},
    {"type": "string", "pattern": "^[a-z]+$"},
    {"type": "string", "enum": ["a", "b<"]},
    {"type": "integer", "minimum": 0},
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    {"type": "array", "items": {"type": "number"}},
    {"anyOf": [{"type": "null"}, {"type": "boolean"}]},
)


@functools.cache
def _leaves(recursive: bool, json_ok: bool) -> st.SearchStrategy[p.Parser]:
    """Leaf parsers (built once: constructing strategies is not free)."""
    simple: list[st.SearchStrategy[p.Parser]] = [
        _fuzz_strings.map(p.literal),
        st.builds(lambda spec, b: p.chars(spec, *b), st.sampled_from(CHAR_CLASSES), _bounds(2, 3)),
        st.sampled_from([p.any_char, p.space, p.eps, p.start, p.end, p.rest]).map(lambda make: make()),
        _fuzz_delimiters.map(p.until),
        st.lists(_fuzz_delimiters, min_size=1, max_size=3).map(p.until_one_of),
        json_leaves(schema_available=json_ok),
    ]
    if recursive:
        simple.append(st.just("expr").map(p.ref))
    return st.one_of(simple)


def _rule_name(prefix: str, body: p.Parser) -> str:
    # The body's identity keeps names unique within a graph (two rules named alike must share a body).
    return f"{prefix}{id(body)}"


_COMBINATORS = (
    "sequence", "sequence", "sequence", "spaced", "choice", "choice", "optional", "zero_or_more",
    "one_or_more", "repeat", "peek", "negate", "atomic", "tag", "tag", "rule", "trigger_rule", "with_gbnf",
    "schema",
)


_combinators = st.sampled_from(_COMBINATORS)
# recover(): a structure committed part-way (``head commit() tail``), kept as it stood on its longest viable prefix
# when it fails, and optionally its rest skipped up to a stop. Only for the parse and session properties: a recovered
# parse accepts text no grammar does.
_with_recover = st.sampled_from((*_COMBINATORS, "recover", "recover", "recover_rest"))
_leaf_odds = st.integers(0, 4)
_arity = st.integers(2, 3)
_repeat_bounds = _bounds(3, 2)
_tag_names = st.sampled_from(TAG_NAMES)
_rule_prefixes = st.sampled_from(RULE_NAME_PREFIXES)
_UNARY: dict[str, Callable[[p.Parser], p.Parser]] = {
    "optional": p.optional,
    "zero_or_more": p.zero_or_more,
    "one_or_more": p.one_or_more,
    "peek": p.peek,
    "negate": p.negate,
    "atomic": p.atomic,
}


@st.composite
def _graph(draw: st.DrawFn, max_depth: int, recursive: bool, json_ok: bool, recover: bool = False) -> p.Parser:
    """A random graph at most ``max_depth`` combinators deep (``recover``: with recover() and commit() too)."""
    leaves = _leaves(recursive, json_ok)
    schemas = st.sampled_from(_SCHEMAS if json_ok else (None,))
    combinators = _with_recover if recover else _combinators

    def build(depth: int) -> p.Parser:
        if depth <= 0 or draw(_leaf_odds) == 0:
            return draw(leaves)
        kind = draw(combinators)
        if kind in ("recover", "recover_rest"):
            committed = p.tag(draw(_tag_names), p.sequence(build(depth - 1), p.commit(), build(depth - 1)))
            if kind == "recover":
                return p.recover(committed)
            stops = draw(st.lists(_fuzz_delimiters, min_size=1, max_size=2))
            return p.recover(committed, rest=stops, balanced=draw(st.sampled_from(("", "{["))), rest_tag="rest")
        if kind in ("sequence", "choice"):
            items = [build(depth - 1) for _ in range(draw(_arity))]
            return p.sequence(*items) if kind == "sequence" else p.choice(*items)
        body = build(depth - 1)
        if kind == "spaced":
            return body << build(depth - 1)
        if kind == "repeat":
            return p.repeat(body, *draw(_repeat_bounds))
        if kind == "tag":
            return p.tag(draw(_tag_names), body)
        if kind == "rule":
            return p.rule(_rule_name(draw(_rule_prefixes), body), body)
        if kind == "trigger_rule":
            return p.trigger_rule(_rule_name("trigger-", body), body)
        if kind == "with_gbnf":
            return p.with_gbnf(body, '"x" | [a-z]+')
        if kind == "schema":
            return p.schema(body, _rule_name("schema-", body), draw(schemas), draw(st.booleans()))
        return _UNARY[kind](body)

    return build(max_depth)


def parser_graphs(*, json_ok: bool = True, max_depth: int = 4, recover: bool = False) -> st.SearchStrategy[p.Parser]:
    """Random parser graphs; half of them are the body of a recursive rule ``expr`` using ``ref("expr")``.
    ``recover``: recover() and commit() too (parse and session properties only)."""
    flat = _graph(max_depth, False, json_ok, recover)
    recursive = _graph(max_depth, True, json_ok, recover).map(lambda body: p.rule("expr", body))
    return flat | recursive


_JSON_SNIPPETS = ('{"k": 1}', '{"k"', "[1, 2]", "[", '"s"', "'s'", "12", "-1.5e3", "true", "None", "null", "]", "}")
_CHAR_POOL = "az0<> \n漢｜▁😀]^-Q_\x00"
_KIND_SAMPLES = {
    ("value", "json"): ('{"k": [1, "x"]}', "[]", '"s\\n"', "-0.5e+3", "true", "null"),
    ("value", "python"): ("{'k': [1, \"x\"]}", "[]", "'s\\''", "-0.5e+3", "True", "None"),
    ("object", "json"): ('{"k": {}}', "{}"),
    ("object", "python"): ("{'k': {}}", "{}"),
    ("array", "json"): ('[1, "a", {}]', "[]"),
    ("array", "python"): ("[1, 'a', {}]", "[]"),
    ("string", "json"): ('"a\\u00e9"', '""'),
    ("string", "python"): ("'a\\x00'", '""'),
    ("number", "json"): ("0", "-12.5E-3"),
    ("bool", "json"): ("true", "false"),
    ("bool", "python"): ("True", "False"),
    ("null", "json"): ("null",),
    ("null", "python"): ("None",),
}


def vocabulary(root: p.Parser) -> list[str]:
    """Strings that make a graph match: its literals and delimiters, JSON snippets, class samples."""
    words: list[str] = list(_CHAR_POOL)
    for node in walk(root):
        if isinstance(node, Literal):
            words.append(node.text)
        elif isinstance(node, Until):
            words.extend(node.delimiters)
        elif isinstance(node, Json | StringContent):
            words.extend(_JSON_SNIPPETS)
    return sorted(set(words))


@st.composite
def matching_text(draw: st.DrawFn, root: p.Parser, max_calls: int = 40) -> str:
    """Text that follows the grammar of ``root`` (roughly: lookaheads are ignored), to reach deep states."""
    rules = collect_rules(root)
    budget = [max_calls]
    noise_piece = st.text(alphabet=FUZZ_TEXT_ALPHABET, max_size=3)

    def gen(node: p.Parser) -> str:
        budget[0] -= 1
        if budget[0] < 0:
            return ""
        match node:
            case Literal(text=text):
                return text
            case Chars(char_class=cls, min=lo, max=hi):
                pool = [c for c in _CHAR_POOL if re.fullmatch(cls.regex(), c)] or ["a"]
                count = draw(st.integers(lo, lo + 3 if hi < 0 else hi))
                return "".join(draw(st.sampled_from(pool)) for _ in range(count))
            case AnyChar():
                return draw(st.sampled_from(_CHAR_POOL))
            case Space():
                return draw(st.sampled_from(["", " ", "\n\t "]))
            case Until(delimiters=delimiters):
                # the text of an until() must avoid its delimiters; the delimiter itself usually follows
                return without(draw(noise_piece), delimiters)
            case Json(kind=kind, flavor=flavor):
                return draw(st.sampled_from(_KIND_SAMPLES[kind, flavor]))
            case StringContent(quote=quote):
                return draw(st.sampled_from(["", "abc", "\\n", "é"]) if quote == '"' else st.just("x"))
            case Sequence(items=items):
                return "".join(gen(item) for item in items)
            case Choice(items=items):
                return gen(draw(st.sampled_from(items)))
            case Repeat(child=child, min=lo, max=hi):
                count = draw(st.integers(lo, lo + 2 if hi < 0 else hi))
                return "".join(gen(child) for _ in range(count))
            case Ref(name=name) | Rule(name=name):
                return gen(rules[name].body)
            case Tag(child=child) | Atomic(child=child) | Schema(child=child) | Gbnf(child=child):
                return gen(child)
            case Recover(child=child):
                return gen(child)
        return ""  # eps, start, end, peek, negate

    text = gen(root)
    if text and draw(st.booleans()):  # damage it a little
        i = draw(st.integers(0, len(text)))
        text = text[:i] + draw(noise_piece) + text[i + draw(st.integers(0, 2)) :]
    return text


def graph_text(root: p.Parser, max_pieces: int = 8) -> st.SearchStrategy[str]:
    """Random text for ``root``: text following its grammar, or pieces of its vocabulary and noise."""
    piece = st.sampled_from(vocabulary(root)) | st.text(alphabet=FUZZ_TEXT_ALPHABET, max_size=2)
    return matching_text(root) | st.lists(piece, max_size=max_pieces).map("".join)


fuzz_text = st.text(alphabet=FUZZ_TEXT_ALPHABET, max_size=16) | st.text(max_size=8)
"""Short random inputs for fuzzed graphs (short, because random recursive grammars can backtrack a lot)."""


@st.composite
def graph_cases(draw: st.DrawFn, json_ok: bool = True, recover: bool = False) -> tuple[p.Parser, str]:
    """A random graph and a text for it (short for recursive grammars, which may backtrack a lot)."""
    parser = draw(parser_graphs(json_ok=json_ok, recover=recover))
    text = draw(graph_text(parser) | fuzz_text)
    if isinstance(parser, Rule) and parser.name == "expr":
        text = text[:10]
    return parser, text
