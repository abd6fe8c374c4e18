"""Grammar for MiniMax-M3 output: a ``]<]minimax[>[<tool_call>`` section of ``invoke`` elements whose arguments
follow the tool's schema as the template's ``to_xml`` writes them (see :mod:`.arguments`).

Every tag is preceded by the namespace token ``]<]minimax[>[`` (``NS`` below), and a value's text can never hold
that token, so text is ``until(NS)`` directly followed by the token (one lexeme in llguidance):

* strings are raw text; ``enum``/``const`` become literal alternatives, pattern/length/format limits go through the
  raw-string converter;
* numbers, booleans: JSON literals (the template prints numbers as Python does, which is JSON for finite numbers);
* null: an empty element (the template leaves a None argument out, which an optional argument allows anyway);
* objects: ``NS<key>value NS</key>`` per member, in the schema's order, required ones present, unknown ones only
  where ``additionalProperties`` allows them; arrays: ``NS<item>value NS</item>`` per item, with
  ``minItems``/``maxItems``.

What this cannot express (``not``, ``prefixItems``, remote ``$ref``, keys with ``<`` or ``>``...) falls back to any
well-formed element content, so a valid call is never rejected for it.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from ... import peg as p
from ...analysis.model import TemplateAnalysis
from ...errors import SchemaError
from ...grammar.common import Names, json_answer, reasoning_after_prompt, rule_safe, text_before_calls
from ...grammar.spec import FormatGrammar, Trigger
from ...parser.request import ParseRequest, ToolSpec
from ...peg.lowering.json_schema import resolve_local_ref
from ...peg.lowering.schema_merge import merge_schemas
from .markers import INVOKE_END, INVOKE_PREFIX, NAME_END, NS, SECTION_END, SECTION_START, THINK_END, THINK_START

__all__ = ["build_grammar"]

# The namespace token and the thinking tags are what the model must be able to write as text.
PRESERVED_TOKENS = (NS, THINK_START, THINK_END)
TRIGGER = NS + SECTION_START

_STRING_KEYWORDS = ("pattern", "minLength", "maxLength", "format")
_NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_OBJECT_HINTS = ("properties", "additionalProperties", "required")
_ARRAY_HINTS = ("items", "prefixItems", "minItems", "maxItems")
_TAG_NAME = re.compile(r"[^<>/\s][^<>\n]*")  # what the parser reads as an element name
# Schemas nest this deep at most (deeper: any content); recursion through ``$ref`` goes through rules.
_MAX_DEPTH = 32


def build_grammar(analysis: TemplateAnalysis, request: ParseRequest) -> FormatGrammar:
    """The lazy call section (trigger ``]<]minimax[>[<tool_call>``), the whole output for tool_choice required and
    json_schema, the preserved tokens and the thinking tags.

    Before calls or a JSON answer the output finishes the reasoning block the prompt opened (thinking_mode
    enabled), or may write one or the bare ``</mm:think>`` a turn without reasoning starts with (adaptive)."""
    tags = (THINK_START, THINK_END)
    response = None
    if request.json_schema is not None:
        lead = reasoning_after_prompt(analysis, request) + p.optional(p.literal(THINK_END)) + p.space()
        response = lead + json_answer(request) + p.space()
    if not request.tools_enabled:
        return FormatGrammar(response=response, preserved_tokens=PRESERVED_TOKENS, thinking_tags=tags)
    section = _section(request)
    # (the text after it holds no reasoning marker: the parser reports one left in the answer)
    lead = reasoning_after_prompt(analysis, request) + p.optional(p.literal(THINK_END))
    lead += text_before_calls(analysis, request, [TRIGGER])
    return FormatGrammar(
        section=section,
        triggers=(Trigger("word", TRIGGER),),
        required=lead + section + p.space(),
        auto=lead + p.optional(section + p.space()),
        response=response,
        preserved_tokens=PRESERVED_TOKENS,
        thinking_tags=tags,
    )


def _section(request: ParseRequest) -> p.Parser:
    """``NS<tool_call>`` one invoke (several with parallel calls) ``NS</tool_call>``; the template puts a line
    break after the start tag and after each invoke."""
    names = Names()
    tools = {t.name: t for t in reversed(request.tools)}  # one rule per name: the first definition wins
    invokes = [_invoke(tools[name], names) for name in dict.fromkeys(t.name for t in request.tools)]
    call = p.choice(*invokes) + p.space()
    calls = p.one_or_more(call) if request.parallel_tool_calls else call
    return p.literal(TRIGGER) + p.space() + calls + p.literal(NS + SECTION_END)


def _invoke(tool: ToolSpec, names: Names) -> p.Parser:
    head = p.literal(f"{NS}{INVOKE_PREFIX}{tool.name}{NAME_END}")
    return p.rule(names("invoke", rule_safe(tool.name)), head + _SchemaGrammar(tool, names).arguments())


# --- any well-formed content -------------------------------------------------------------------------------------
#
# Every element's content is built together with its end tag (``close`` below, ``NS</name>`` as one literal): text
# is then ``until(NS)`` directly followed by a literal starting with the token, which grammar writers fuse into one
# lexeme, and no lexeme is a prefix of a sibling's that runs on further (llguidance's lexer does not back up).


def _element(name: str, content: Any) -> p.Parser:
    """``NS<name>`` content ``NS</name>``; ``content(close)`` builds the content with the end tag."""
    return p.literal(f"{NS}<{name}>") + content(p.literal(f"{NS}</{name}>"))


def _text(close: p.Parser, text: p.Parser | None = None) -> p.Parser:
    """Text (by default anything) up to the token that starts the end tag, then the end tag."""
    return (text if text is not None else p.until(NS)) + close


def _any(close: p.Parser, again: p.Parser) -> p.Parser:
    """Any content: child elements or text."""
    return p.choice(p.one_or_more(again) + close, _text(close))


_ANY_NAME = p.chars("[^<>/\\n]", 1)


def _any_element() -> p.Parser:
    """One self-recursive rule: an element with any name holding child elements or any text."""
    again = p.ref("minimax-m3-any-element")
    content = _any(p.literal(NS + "</"), again) + _ANY_NAME + ">"
    return p.rule("minimax-m3-any-element", p.literal(NS + "<") + _ANY_NAME + ">" + content)


ANY_ELEMENT = _any_element()


# --- schema-typed content ----------------------------------------------------------------------------------------


class _SchemaGrammar:
    """The element grammar of one tool's parameter schema. :meth:`content` is what follows an element's start tag,
    through its end tag ``close``; ``path`` (property names down to a value) names the rules."""

    def __init__(self, tool: ToolSpec, names: Names) -> None:
        self._tool = rule_safe(tool.name)
        self._root = tool.parameters
        self._names = names
        self._refs: dict[str, p.Parser] = {}  # $ref -> the rule of its elements (a ref() while it is being built)

    def arguments(self) -> p.Parser:
        """The argument elements and the invoke's end tag: the parameter schema read as an object."""
        close = p.literal(NS + INVOKE_END)
        if not self._root:
            return p.zero_or_more(ANY_ELEMENT) + close
        return self._members({**self._root, "type": "object"}, "") + close

    def _name(self, path: str, kind: str = "") -> str:
        return self._names(self._tool, path or "args", kind)

    def content(self, schema: Any, path: str, close: p.Parser, depth: int = 0) -> p.Parser:
        """Element content valid under ``schema``, then ``close``; dispatches on the keywords, most specific first."""
        if not isinstance(schema, Mapping) or not schema or depth > _MAX_DEPTH:
            return _any(close, ANY_ELEMENT)
        if "$ref" in schema:
            return self._ref(schema["$ref"], path, close, depth)
        if "const" in schema:
            return self._constants([schema["const"]], close)
        if isinstance(schema.get("enum"), list):
            return self._constants(schema["enum"], close)
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list):
                rest = {k: v for k, v in schema.items() if k != key}
                branches = [{**rest, **b} for b in schema[key] if isinstance(b, Mapping)]
                if not branches:
                    return _any(close, ANY_ELEMENT)
                alternatives = (self.content(b, _at(path, str(i)), close, depth + 1) for i, b in enumerate(branches, 1))
                return p.choice(*alternatives)
        if "allOf" in schema:
            return self._all_of(schema, path, close, depth)
        if schema.get("nullable") is True:
            plain = {k: v for k, v in schema.items() if k != "nullable"}
            return p.choice(self.content(plain, path, close, depth + 1), close)
        kind = schema.get("type", _implied_type(schema))
        if isinstance(kind, list) and kind:
            alternatives = (self.content({**schema, "type": t}, _at(path, str(t)), close, depth + 1) for t in kind)
            return p.choice(*alternatives)
        match kind:
            case "string":
                limits = {k: schema[k] for k in _STRING_KEYWORDS if k in schema}
                if not limits:
                    return _text(close)
                text = p.schema(p.until(NS), self._name(path, "text"), {"type": "string", **limits}, raw=True)
                return _text(close, text)
            case "integer" | "number":
                bounds = {k: schema[k] for k in _NUMBER_KEYWORDS if k in schema}
                return p.schema(p.json(), self._name(path), {"type": kind, **bounds}) + close
            case "boolean":
                return p.choice("true", "false") + close
            case "null":
                return close  # an empty element
            case "object":
                return self._members(schema, path, depth) + close
            case "array":
                return self._array(schema, path, depth) + close
        return _any(close, ANY_ELEMENT)

    def _members(self, schema: Mapping[str, Any], path: str, depth: int = 0) -> p.Parser:
        """The member elements of an object: in the schema's order, required ones present, then the additional
        ones the schema allows (none by default when it lists properties)."""
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else {}
        extra_schema = schema.get("additionalProperties", not props)
        required = {r for r in schema.get("required") or () if isinstance(r, str) and r in props}
        parts: list[p.Parser] = []
        for name, sub in props.items():
            if not _TAG_NAME.fullmatch(name):
                member = ANY_ELEMENT  # a name no tag can hold
            else:
                content = functools.partial(self.content, sub, _at(path, name), depth=depth + 1)
                member = p.rule(self._name(_at(path, name)), _element(name, content))
            parts.append(member if name in required else p.optional(member))
        if extra_schema is not False:
            parts.append(p.zero_or_more(ANY_ELEMENT))  # (any name: the value's schema cannot follow the name)
        return p.sequence(*parts) if parts else p.eps()

    def _array(self, schema: Mapping[str, Any], path: str, depth: int) -> p.Parser:
        items = schema.get("items")
        item_schema = items if isinstance(items, Mapping) else {}
        content = functools.partial(self.content, item_schema, _at(path, "item"), depth=depth + 1)
        item = p.rule(self._name(path, "item"), _element("item", content))
        low, high = _count(schema.get("minItems")) or 0, _count(schema.get("maxItems"))
        if high is not None and high < low:
            high = None  # unsatisfiable: stay permissive rather than write an empty language
        return p.repeat(item, low, -1 if high is None else high)

    def _ref(self, target: Any, path: str, close: p.Parser, depth: int) -> p.Parser:
        """A local ``#/…`` reference to an object or array schema is one rule per target, its elements without the
        end tag (recursion goes through ``ref()``); anything else is inlined, since text must be fused with the end
        tag of each use. A remote or broken reference is any content."""
        resolved = resolve_local_ref(self._root, target) if isinstance(target, str) else None
        if not isinstance(resolved, Mapping):
            return _any(close, ANY_ELEMENT)
        kind = resolved.get("type", _implied_type(resolved))
        if kind not in ("object", "array") or any(k in resolved for k in ("anyOf", "oneOf", "allOf", "$ref", "enum")):
            return self.content(resolved, path, close, depth + 1)
        if target not in self._refs:
            where = _at("ref", target.rsplit("/", 1)[-1])
            name = self._name(where)
            self._refs[target] = p.ref(name)
            build = self._members if kind == "object" else self._array
            self._refs[target] = p.rule(name, build(resolved, where, depth + 1))
        return self._refs[target] + close

    def _constants(self, values: list[Any], close: p.Parser) -> p.Parser:
        texts = [text for text in map(_render, values) if text is not None]
        if not texts:
            return _any(close, ANY_ELEMENT)
        return p.choice(*(p.literal(text) + close if text else close for text in dict.fromkeys(texts)))

    def _all_of(self, schema: Mapping[str, Any], path: str, close: p.Parser, depth: int) -> p.Parser:
        parts = [{k: v for k, v in schema.items() if k != "allOf"}]
        for part in schema["allOf"] if isinstance(schema["allOf"], list) else [None]:
            if isinstance(part, Mapping) and isinstance(part.get("$ref"), str):
                part = resolve_local_ref(self._root, part["$ref"])
            if not isinstance(part, Mapping) or "$ref" in part or "allOf" in part:
                return _any(close, ANY_ELEMENT)
            parts.append(dict(part))
        try:
            merged = merge_schemas([(part, f"#/allOf/{i}") for i, part in enumerate(parts)], "#")
        except SchemaError:
            return _any(close, ANY_ELEMENT)
        return self.content(merged, path, close, depth + 1)


def _at(path: str, name: str) -> str:
    return f"{path}-{rule_safe(name)}" if path else rule_safe(name)


def _implied_type(schema: Mapping[str, Any]) -> str | None:
    if any(key in schema for key in _OBJECT_HINTS):
        return "object"
    if any(key in schema for key in _ARRAY_HINTS):
        return "array"
    if any(key in schema for key in _STRING_KEYWORDS):
        return "string"
    if any(key in schema for key in _NUMBER_KEYWORDS):
        return "number"
    return None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _render(value: Any) -> str | None:
    """An enum/const value as ``to_xml`` writes it (without the end tag's token); None if it has no spelling."""
    if isinstance(value, str):
        return None if NS in value else value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, int | float):
        return json.dumps(value) if math.isfinite(value) else None
    if isinstance(value, list):
        items = [_render(v) for v in value]
        if any(text is None for text in items):
            return None
        return "".join(f"{NS}<item>{text}{NS}</item>" for text in items)
    if isinstance(value, dict):
        members = [(str(k), _render(v)) for k, v in value.items() if v is not None]
        if any(text is None or "<" in k or ">" in k for k, text in members):
            return None
        return "".join(f"{NS}<{k}>{text}{NS}</{k}>" for k, text in members)
    return None
