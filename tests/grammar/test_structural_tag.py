"""Structural tags (``ChatParams.structural_tag``) on every bundled tool-calling template, without xgrammar.

Two directions are checked, both on real templates:

* the template's own outputs (answers, reasoning, one call, parallel calls, text before calls; tests/support/
  outputs.py) are in the tag's language: the tag is written back as GBNF (:func:`tag_gbnf`) and judged by the strict
  GBNF recognizer;
* what the tag lets a model write parses to what was written, with no warnings: outputs are sampled from the tag
  at random (:func:`sample`; free text, then a call or several, with each JSON argument object one the test knows)
  and read back with ``params.parse``.

tests/integrations/test_xgrammar.py compiles the same tags with xgrammar itself and runs its matcher on them.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

from autoparser import ChatParams, ChatTemplate, bundled_templates
from autoparser.check import recognizer as gbnf_recognizer
from autoparser.grammar.common import markup
from autoparser.peg.lowering import gbnf_syntax
from autoparser.peg.lowering.lark import strict_schema

from ..support.outputs import FULL_ARGS, TOOLS, USER, chat, outputs
from ..support.sample import sampled
from .test_full_grammar import TEMPLATE_SPELLINGS

Format = dict[str, Any]

# Outputs a template writes that its structural tag does not describe, beyond the full grammar's own list
# (TEMPLATE_SPELLINGS): none so far.
TAG_SPELLINGS: dict[str, str] = {}
# Templates that write non-ASCII text as \\u escapes: JSON the tag's json_schema elements take as they are.
ASCII_ESCAPES = {name for name, reason in TEMPLATE_SPELLINGS.items() if "\\u escapes" in reason}

# Tool-calling templates without a tag, and the reason they must give (a substring of it).
NO_TAG = {
    "hfjs-meetkai-functionary-medium-v2.2": "pattern",  # a recipient after the prompt: `get\n<|content|>`
    "llamacpp-Kimi-K3": "not free text",  # the answer is a block of its own before the calls' section
    "meetkai-functionary-medium-v3.2": "pattern",  # a call is a bare recipient line: `get_weather\n{...}`
    "meta-llama-Llama-3.1-8B-Instruct": "pattern",  # bare JSON calls: a regex on `{"name": "<tool>"`
    "meta-llama-Llama-3.2-3B-Instruct": "pattern",
    "meta-llama-Llama-3.3-70B-Instruct": "pattern",
    "openai-gpt-oss-120b": "pattern",  # the recipient `to=functions.NAME` in a message header
    "ollama-cogito-3b": "pattern",  # a bare JSON list: a regex on `[{"name": "<tool>"`
    "vllm-tool_chat_template_llama4_json": "pattern",  # bare JSON calls
    "vllm-tool_chat_template_xlam_qwen": "pattern",  # a bare JSON list
}


def _tool_templates(names: Iterable[str]) -> list[str]:
    return [name for name in names if chat(name).grammar_lazy]


def _tagged(names: Iterable[str]) -> list[str]:
    return [name for name in _tool_templates(names) if chat(name).structural_tag is not None]


# The per-template cases: the sample's templates (tests/support/sample.py); the counts below take them all.
TOOL_TEMPLATES = _tool_templates(sampled())
TAGGED = _tagged(sampled())


def _triggered(tag: dict[str, Any]) -> Format:
    body = tag["format"]
    elements = body["elements"] if body["type"] == "sequence" else [body]
    (triggered,) = [e for e in elements if e["type"] == "triggered_tags"]
    return triggered


# --- the tag as GBNF (for the strict recognizer) --------------------------------------------------------------------

_NAME_OR_SKIPPED = re.compile(r'"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]|\{[^}]*\}|[A-Za-z][A-Za-z0-9-]*')


def _renamed(gbnf: str, prefix: str) -> tuple[str, list[str]]:
    """A whole GBNF grammar's root expression and rules, with every rule name prefixed (to embed it in another)."""
    definitions = dict(re.findall(r"^([A-Za-z][A-Za-z0-9-]*) ::= (.*)$", gbnf, flags=re.M))

    def rename(body: str) -> str:
        def one(match: re.Match[str]) -> str:
            token = match.group(0)
            return f"{prefix}{token}" if token in definitions else token

        return _NAME_OR_SKIPPED.sub(one, body)

    rules = [f"{prefix}{name} ::= {rename(body)}" for name, body in definitions.items()]
    return f"{prefix}root", rules


class _GbnfWriter:
    def __init__(self) -> None:
        self.rules: list[str] = []

    def embed(self, gbnf: str) -> str:
        root, rules = _renamed(gbnf, f"x{len(self.rules)}-")
        self.rules.extend(rules)
        return root

    def until(self, delimiters: list[str]) -> str:
        from autoparser import peg as p

        return self.embed(p.to_gbnf(p.until_one_of(delimiters)))

    def expr(self, fmt: Format) -> str:
        kind = fmt["type"]
        if kind == "const_string":
            return gbnf_syntax.literal(fmt["value"])
        if kind == "regex":
            assert fmt["pattern"] == gbnf_syntax.WS_REGEX, fmt  # the only regex the tags use: bounded whitespace
            return gbnf_syntax.SPACE_BODY
        if kind == "json_schema":
            from autoparser import peg as p

            return self.embed(p.to_gbnf(p.schema(p.json(), "args", fmt["json_schema"])))
        if kind == "grammar":
            return self.embed(fmt["grammar"])
        if kind == "sequence":
            return "(" + " ".join(self.expr(e) for e in fmt["elements"]) + ")"
        if kind == "or":
            return "(" + " | ".join(self.expr(e) for e in fmt["elements"]) + ")"
        if kind in ("optional", "star", "plus"):
            return "(" + self.expr(fmt["content"]) + ")" + {"optional": "?", "star": "*", "plus": "+"}[kind]
        if kind == "repeat":
            return "(" + self.expr(fmt["content"]) + f"){{{fmt['min']},{'' if fmt['max'] < 0 else fmt['max']}}}"
        if kind == "tag":
            content = fmt["content"]
            if content["type"] == "any_text":
                body = self.until([fmt["end"], *content.get("excludes", [])])
            else:
                body = self.expr(content)
            return f"({gbnf_syntax.literal(fmt['begin'])} {body} {gbnf_syntax.literal(fmt['end'])})"
        if kind == "triggered_tags":
            assert fmt["stop_after_first"] and not fmt["at_least_one"], fmt
            text = self.until([*fmt["triggers"], *fmt.get("excludes", [])])
            return f"({text} ({' | '.join(self.expr(t) for t in fmt['tags'])})?)"
        raise AssertionError(f"a format the tags do not use: {kind}")


def tag_gbnf(tag: dict[str, Any]) -> str:
    """The structural tag's language as GBNF (xgrammar's semantics for the formats autoparser writes)."""
    writer = _GbnfWriter()
    root = writer.expr(tag["format"])
    return "\n".join([f"root ::= {root}", *writer.rules]) + "\n"


# --- sampling what the tag allows ----------------------------------------------------------------------------------

_KNOWN_ARGS: dict[str, dict[str, Any]] = {"get_weather": FULL_ARGS, "get": {"city": "Zanzibar"}, "ping": {}}
_FREE_TEXT = ("", "Sure.", "Let me look that up.\n", "Checking 2 < 3 first. ")
_TEXT = ("Oslo", "two words", "I should call the lookup tool.")


class _Unsampled(Exception):
    """The tag holds a part the sampler cannot write (a grammar in GBNF): that sample is skipped."""


class _Sampler:
    def __init__(self, params: ChatParams, rng: random.Random) -> None:
        self.rng = rng
        self.by_schema = {
            json.dumps(strict_schema(t["function"]["parameters"]), sort_keys=True): t["function"]["name"] for t in TOOLS
        }
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.tags = 0
        self.text = ""
        self.params = params

    def write(self, fmt: Format) -> str:
        kind = fmt["type"]
        rng = self.rng
        if kind == "const_string":
            return str(fmt["value"])
        if kind == "regex":
            return rng.choice(["", " ", "\n"])
        if kind == "json_schema":
            tool = self.by_schema.get(json.dumps(fmt["json_schema"], sort_keys=True))
            if tool is not None:
                self.calls.append((tool, _KNOWN_ARGS[tool]))
                return json.dumps(_KNOWN_ARGS[tool], ensure_ascii=False)
            return json.dumps(_instance(fmt["json_schema"]))
        if kind == "grammar":
            raise _Unsampled
        if kind == "sequence":
            return "".join(self.write(e) for e in fmt["elements"])
        if kind == "or":
            return self.write(rng.choice(fmt["elements"]))
        if kind in ("optional", "star", "plus", "repeat"):
            lo, hi = {"optional": (0, 1), "star": (0, 2), "plus": (1, 2)}.get(kind, (0, 0))
            if kind == "repeat":
                lo, hi = fmt["min"], fmt["min"] + 1 if fmt["max"] < 0 else fmt["max"]
            return "".join(self.write(fmt["content"]) for _ in range(rng.randint(lo, hi)))
        if kind == "tag":
            content = fmt["content"]
            body = rng.choice(_TEXT) if content["type"] == "any_text" else self.write(content)
            return fmt["begin"] + body + fmt["end"]
        if kind == "triggered_tags":
            self.text = rng.choice(_FREE_TEXT)
            if rng.random() < 0.25:
                return self.text
            self.tags += 1
            return self.text + self.write(rng.choice(fmt["tags"]))
        raise AssertionError(f"a format the tags do not use: {kind}")

    def sample(self, tag: dict[str, Any]) -> str:
        body = tag["format"]
        elements = body["elements"] if body["type"] == "sequence" else [body]
        out = []
        calls_done = False
        for element in elements:
            if calls_done and not self.tags:
                break  # no call was written: what may follow the calls is left out too
            out.append(self.write(element))
            calls_done = calls_done or element["type"] == "triggered_tags"
        return "".join(out)


def _instance(schema: dict[str, Any]) -> Any:
    """A small value valid under ``schema`` (the schemas of single tagged arguments and call ids)."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return _instance(schema[key][0])
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    values = {"string": "call00001", "integer": 3, "number": -2.5, "boolean": True, "null": None, "array": []}
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: _instance(props[k]) for k in schema.get("required") or [] if k in props}
    return values.get(kind, "x") if isinstance(kind, str) else "x"


def samples(name: str, count: int) -> Iterator[tuple[str, _Sampler]]:
    params = chat(name)
    tag = params.structural_tag
    assert tag is not None
    for seed in range(count):
        sampler = _Sampler(params, random.Random(seed))
        try:
            yield sampler.sample(tag), sampler
        except _Unsampled:
            continue


# --- tests ----------------------------------------------------------------------------------------------------------


def test_most_tool_templates_get_a_tag() -> None:
    tool_templates, tagged = _tool_templates(bundled_templates()), _tagged(bundled_templates())
    assert len(tool_templates) >= 60
    assert len(tagged) >= 60, len(tagged)
    assert set(tool_templates) - set(tagged) == set(NO_TAG)


@pytest.mark.parametrize("name", TOOL_TEMPLATES)
def test_a_tag_or_a_reason(name: str) -> None:
    params = chat(name)
    tag, reason = params.structural_tag, params.structural_tag_reason
    assert (tag is None) == bool(reason), (tag, reason)
    if tag is None:
        assert NO_TAG[name] in reason, reason
        return
    assert json.loads(json.dumps(tag)) == tag  # JSON-serialisable as it is
    assert tag["type"] == "structural_tag"
    triggered = _triggered(tag)
    words = {t.value for t in params.grammar_triggers if t.type == "word"}
    assert triggered["triggers"] and set(triggered["triggers"]) <= words
    # Free text holds no trigger, no reasoning marker and no marker the parser reads as structure (a declared
    # name right before its arguments among them: see grammar.markup).
    markers = markup(ChatTemplate.load(name).analysis, params._generated.request)
    allowed = words | {params.thinking_start_tag, params.thinking_end_tag} | _reasoning_starts(name) | set(markers)
    excluded = set(triggered.get("excludes", []))
    assert excluded <= allowed, excluded - allowed
    for one in triggered["tags"]:
        assert any(one["begin"].startswith(w) for w in triggered["triggers"]), one["begin"]
    text = json.dumps(tag, ensure_ascii=False)
    for tool in TOOLS:  # every tool can be called: its name is in the tag (in a literal or a grammar)
        assert tool["function"]["name"] in text


def _reasoning_starts(name: str) -> set[str]:
    start = ChatTemplate.load(name).analysis.reasoning.start.strip()
    return {start} if start else set()


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(reason=TEMPLATE_SPELLINGS[n], strict=True))
        if n in TEMPLATE_SPELLINGS and n not in ASCII_ESCAPES  # \\u escapes are JSON: the tag's JSON takes them
        else n
        for n in TAGGED
    ],
)
def test_the_templates_own_outputs_are_in_the_tag(name: str) -> None:
    gbnf = tag_gbnf(chat(name).structural_tag or {})
    rejected = [o.label for o in outputs(name) if not gbnf_recognizer.accepts(gbnf, o.text)]
    if name in ASCII_ESCAPES:  # the GBNF stand-in for the tag's JSON asks for the characters themselves
        rejected = [label for label in rejected if label != "one"]
    assert not rejected, rejected


def test_the_gbnf_stand_in_rejects_what_the_tag_does_not_allow() -> None:
    """The GBNF the other tests judge with is not trivially permissive: text after a call, an unknown tool."""
    gbnf = tag_gbnf(chat("Qwen-Qwen3-0.6B").structural_tag or {})
    call = '<tool_call>\n{"name": "get", "arguments": {"city": "Oslo"}}\n</tool_call>'
    assert gbnf_recognizer.accepts(gbnf, "Sure. " + call)
    assert not gbnf_recognizer.accepts(gbnf, "Sure. " + call + " and then some text")
    assert not gbnf_recognizer.accepts(gbnf, call.replace('"get"', '"launch"'))
    assert not gbnf_recognizer.accepts(gbnf, call.replace('"Oslo"', "3"))


@pytest.mark.parametrize("name", TAGGED)
def test_what_the_tag_allows_parses_cleanly(name: str) -> None:
    params = chat(name)
    sampled = list(samples(name, 24))
    if not sampled:
        pytest.skip("every part of the calls is written as GBNF (Python literals): sampled through xgrammar only")
    gbnf = tag_gbnf(params.structural_tag or {})
    full = gbnf_recognizer.Grammar.parse(params.full_grammar or "")
    for text, sampler in sampled:
        assert gbnf_recognizer.accepts(gbnf, text), text  # the sampler writes the tag's language
        assert full.accepts(text), text  # which the whole-output grammar allows too: the tag is no wider
        message = params.parse(text)
        assert not message.warnings, (text, [w.message for w in message.warnings])
        assert bool(message.tool_calls) == bool(sampler.tags), text
        if sampler.calls:
            got = [(c.name, json.loads(c.arguments)) for c in message.tool_calls]
            assert got == sampler.calls, text
        assert (message.content or "").strip() == sampler.text.strip(), text


def test_enough_templates_are_sampled() -> None:
    with_samples = [name for name in _tagged(bundled_templates()) if any(True for _ in samples(name, 4))]
    assert len(with_samples) >= 50, len(with_samples)


def test_requests_without_a_tag_say_why() -> None:
    tmpl = ChatTemplate.load("Qwen3.5-4B")
    cases = {
        "no tools": tmpl.apply(USER),
        "tool_choice": tmpl.apply(USER, tools=TOOLS, tool_choice="required"),
        "json_schema": tmpl.apply(USER, json_schema={"type": "object"}),
        "none": tmpl.apply(USER, tools=TOOLS, tool_choice="none"),
    }
    for label, params in cases.items():
        assert params.structural_tag is None and params.structural_tag_reason, label
    assert "tool_choice" in cases["tool_choice"].structural_tag_reason
    assert "json_schema" in cases["json_schema"].structural_tag_reason
    assert "no tools" in cases["no tools"].structural_tag_reason
    auto = tmpl.apply(USER, tools=TOOLS)
    assert auto.structural_tag is not None and auto.structural_tag_reason == ""
    no_calls = ChatTemplate.load("google-gemma-2-2b-it").apply(USER, tools=TOOLS)  # its template writes no calls
    assert no_calls.structural_tag is None and "no tool-call format" in no_calls.structural_tag_reason


def test_a_single_call_request_allows_one_call() -> None:
    """Without parallel_tool_calls the section holds one call: nothing may follow the tag but whitespace."""
    params = ChatTemplate.load("Qwen-Qwen3-0.6B").apply(USER, tools=TOOLS, parallel_tool_calls=False)
    gbnf = tag_gbnf(params.structural_tag or {})
    call = '<tool_call>\n{"name": "get", "arguments": {"city": "Oslo"}}\n</tool_call>'
    assert gbnf_recognizer.accepts(gbnf, call + "\n")
    assert not gbnf_recognizer.accepts(gbnf, call + "\n" + call)
    parallel = tag_gbnf(chat("Qwen-Qwen3-0.6B").structural_tag or {})
    assert gbnf_recognizer.accepts(parallel, call + "\n" + call)


def test_a_call_may_not_start_inside_the_reasoning() -> None:
    """The prompt opened a reasoning block: a trigger word in it is reasoning, the calls come after its end."""
    params = chat("Qwen3.5-4B")
    assert params.generation_prompt.endswith("<think>\n")
    gbnf = tag_gbnf(params.structural_tag or {})
    call = "<tool_call>\n<function=get>\n<parameter=city>\nOslo\n</parameter>\n</function>\n</tool_call>"
    assert gbnf_recognizer.accepts(gbnf, "I will use <tool_call> now.\n</think>\n\n" + call)
    assert not gbnf_recognizer.accepts(gbnf, call)  # the block must be closed first


# --- the lowering on hand-built grammars (shapes no bundled template has) -------------------------------------------


def _build(section: Any, words: tuple[str, ...] = ("<t>",)) -> tuple[dict[str, Any] | None, str]:
    from autoparser import peg as p
    from autoparser.grammar.spec import Trigger
    from autoparser.grammar.structural_tag import build_structural_tag

    whole = p.until_one_of(list(words)) + p.optional(section)
    return build_structural_tag(whole, tuple(Trigger("word", w) for w in words))


def test_shapes_that_get_no_tag_say_why() -> None:
    from autoparser import peg as p
    from autoparser.grammar.spec import Trigger
    from autoparser.grammar.structural_tag import build_structural_tag

    args = p.schema(p.json(), "args", {"type": "object"})
    assert build_structural_tag(None, (Trigger("word", "<t>"),))[1] == "the format has no whole-output grammar"
    assert "not free text" in build_structural_tag(args, (Trigger("word", "<t>"),))[1]
    assert "no trigger word" in _build(p.literal("<u>") + args)[1]
    assert "JSON" in _build(args)[1]
    assert "repeat without a closing literal" in _build("<t>" + p.zero_or_more("a") + args)[1]
    ends = p.choice(p.literal("<t>") + args + "</t>", p.literal("<t>") + args + "</u>")
    assert "end differently" in _build(ends)[1]
    many = p.choice(*(p.literal(f"<t>{i}") for i in range(600)))
    assert "too many alternatives" in _build(p.sequence(many, many))[1]


def test_optional_and_repeated_starts_become_tags_of_their_own() -> None:
    """An optional section marker before per-call markers (Kimi's shape): one tag per way the section opens."""
    from autoparser import peg as p

    call = (
        p.literal("<c>") + p.literal("f") + p.repeat("x", 2, 3) + p.schema(p.json(), "a", {"type": "object"}) + "</c>"
    )
    section = p.repeat(p.literal("<s>"), 0, 1) + p.one_or_more(call) + "!"
    tag, reason = _build(section, ("<s>", "<c>"))
    assert tag is not None, reason
    begins = [t["begin"] for t in _triggered(tag)["tags"]]
    assert begins == ["<c>f", "<s>"]
    gbnf = tag_gbnf(tag)
    assert gbnf_recognizer.accepts(gbnf, 'hi <s><c>fxx{"a": 1}</c>!')
    assert gbnf_recognizer.accepts(gbnf, "<c>fxxx{}</c><c>fxx{}</c>!")
    assert not gbnf_recognizer.accepts(gbnf, "<c>fx{}</c>!")
    assert not gbnf_recognizer.accepts(gbnf, "<c>fxx{}</c>")


def test_recursive_rules_are_written_as_grammar() -> None:
    from autoparser import peg as p

    nested = p.rule("item", p.choice("a", p.literal("(") + p.ref("item") + ")"))
    tag, reason = _build(p.literal("<t>") + nested + "</t>")
    assert tag is not None, reason
    content = _triggered(tag)["tags"][0]["content"]
    assert content["type"] == "grammar"
    assert gbnf_recognizer.accepts(tag_gbnf(tag), "<t>((a))</t>")
