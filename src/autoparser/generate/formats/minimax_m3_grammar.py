"""Grammar for MiniMax-M3 output: a ``]<]minimax[>[<tool_call>`` section of ``invoke`` elements whose arguments
follow the tool's schema as the template's ``to_xml`` writes them (see :mod:`.minimax_m3_args`).

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

import json
import math
from collections.abc import Mapping
from typing import Any

from ... import peg as p
from ...analysis.model import TemplateAnalysis
from ...errors import SchemaError
from ...peg.json_schema import resolve_local_ref
from ...peg.schema_merge import merge_schemas
from ..grammar import FormatGrammar, Trigger, json_answer, reasoning_after_prompt, rule_safe, text_before_calls
from ..request import ParseRequest, ToolSpec
from .minimax_m3 import INVOKE_END, INVOKE_PREFIX, NAME_END, NS, SECTION_END, SECTION_START, THINK_END, THINK_START

__all__ = ["grammar"]

# The namespace token and the thinking tags are what the model must be able to write as text.
PRESERVED_TOKENS = (NS, THINK_START, THINK_END)
TRIGGER = NS + SECTION_START

_STRING_KEYWORDS = ("pattern", "minLength", "maxLength", "format")
_NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_OBJECT_HINTS = ("properties", "additionalProperties", "required")
_ARRAY_HINTS = ("items", "prefixItems", "minItems", "maxItems")


def grammar(analysis: TemplateAnalysis, request: ParseRequest) -> FormatGrammar:
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
    required = reasoning_after_prompt(analysis, request) + text_before_calls(analysis, request, [TRIGGER]) + section
    return FormatGrammar(
        section=section,
        triggers=(Trigger("word", TRIGGER),),
        required=required + p.space(),
        response=response,
        preserved_tokens=PRESERVED_TOKENS,
        thinking_tags=tags,
    )


def _section(request: ParseRequest) -> p.Parser:
    """``NS<tool_call>`` one invoke (several with parallel calls) ``NS</tool_call>``; the template puts a line
    break after the start tag and after each invoke."""
    names = _Names()
    tools = {t.name: t for t in reversed(request.tools)}  # one rule per name: the first definition wins
    invokes = [_invoke(tools[name], names) for name in dict.fromkeys(t.name for t in request.tools)]
    call = p.choice(*invokes) + p.space()
    calls = p.one_or_more(call) if request.parallel_tool_calls else call
    return p.literal(TRIGGER) + p.space() + calls + p.literal(NS + SECTION_END)


def _invoke(tool: ToolSpec, names: _Names) -> p.Parser:
    head = p.literal(f"{NS}{INVOKE_PREFIX}{tool.name}{NAME_END}")
    body = _SchemaGrammar(tool, names).arguments()
    return p.rule(names("invoke", rule_safe(tool.name)), head + body + p.literal(NS + INVOKE_END))


# --- any well-formed content -------------------------------------------------------------------------------------


def _element(name: p.Parser | str, content: p.Parser, closing_name: p.Parser | str | None = None) -> p.Parser:
    """``NS<name>`` content ``NS</name>``, where ``content`` ends with the token (text must directly precede it).
    ``closing_name`` is the end tag's name when it is not a fixed string (the grammar cannot match the two)."""
    if isinstance(name, str):
        return p.literal(f"{NS}<{name}>") + content + p.literal(f"</{name}>")
    return p.literal(NS + "<") + name + ">" + content + "</" + (closing_name or name) + ">"


def _text_content(text: p.Parser | None = None) -> p.Parser:
    """Text up to the token, then the token (the end tag's namespace token)."""
    return (text if text is not None else p.until(NS)) + p.literal(NS)


_ANY_NAME = p.chars("[^<>/\\n]", 1)


def _any_element() -> p.Parser:
    """One self-recursive rule: an element with any name holding child elements or text."""
    again = p.ref("minimax-m3-any-element")
    content = p.choice(p.one_or_more(again) + p.literal(NS), _text_content())
    return p.rule("minimax-m3-any-element", _element(_ANY_NAME, content))


ANY_ELEMENT = _any_element()
ANY_CONTENT = p.rule("minimax-m3-any-content", p.choice(p.one_or_more(ANY_ELEMENT) + p.literal(NS), _text_content()))


# --- schema-typed content ----------------------------------------------------------------------------------------


class _Names:
    """Rule names unique across one request's tools."""

    def __init__(self) -> None:
        self._used: set[str] = set()

    def __call__(self, *parts: str) -> str:
        base = "-".join(part for part in parts if part)
        name, count = base, 1
        while name in self._used:
            count += 1
            name = f"{base}-{count}"
        self._used.add(name)
        return name


class _SchemaGrammar:
    """The element grammar of one tool's parameter schema. :meth:`content` is what follows an element's start tag
    up to and including the namespace token of its end tag; ``path`` (property names down to a value) names the
    rules."""

    def __init__(self, tool: ToolSpec, names: _Names) -> None:
        self._tool = rule_safe(tool.name)
        self._root = tool.parameters
        self._names = names
        self._refs: dict[str, p.Parser] = {}

    def arguments(self) -> p.Parser:
        """The argument elements: the parameter schema read as an object (none at all: any elements)."""
        schema = self._root
        if not schema:
            return p.zero_or_more(ANY_ELEMENT)
        return self._members({**schema, "type": "object"}, "")

    def _name(self, path: str, kind: str = "") -> str:
        return self._names(self._tool, path or "args", kind)

    def content(self, schema: Any, path: str) -> p.Parser:
        """Element content valid under ``schema``, through the end tag's namespace token."""
        if not isinstance(schema, Mapping) or not schema:
            return ANY_CONTENT
        if "$ref" in schema:
            return self._ref(schema["$ref"], path)
        if "const" in schema:
            return self._constants([schema["const"]])
        if isinstance(schema.get("enum"), list):
            return self._constants(schema["enum"])
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list):
                rest = {k: v for k, v in schema.items() if k != key}
                branches = [{**rest, **b} for b in schema[key] if isinstance(b, Mapping)]
                if not branches:
                    return ANY_CONTENT
                return p.choice(*(self.content(b, _at(path, str(i))) for i, b in enumerate(branches, 1)))
        if "allOf" in schema:
            return self._all_of(schema, path)
        if schema.get("nullable") is True:
            return p.choice(self.content({k: v for k, v in schema.items() if k != "nullable"}, path), p.literal(NS))
        kind = schema.get("type", _implied_type(schema))
        if isinstance(kind, list) and kind:
            return p.choice(*(self.content({**schema, "type": t}, _at(path, str(t))) for t in kind))
        match kind:
            case "string":
                return self._string(schema, path)
            case "integer" | "number":
                bounds = {k: schema[k] for k in _NUMBER_KEYWORDS if k in schema}
                return p.schema(p.json(), self._name(path), {"type": kind, **bounds}) + p.literal(NS)
            case "boolean":
                return p.choice("true", "false") + p.literal(NS)
            case "null":
                return p.literal(NS)  # an empty element
            case "object":
                return self._members(schema, path) + p.literal(NS)
            case "array":
                return self._array(schema, path)
        return ANY_CONTENT

    def _string(self, schema: Mapping[str, Any], path: str) -> p.Parser:
        limits = {k: schema[k] for k in _STRING_KEYWORDS if k in schema}
        if not limits:
            return _text_content()
        return _text_content(p.schema(p.until(NS), self._name(path, "text"), {"type": "string", **limits}, raw=True))

    def _members(self, schema: Mapping[str, Any], path: str) -> p.Parser:
        """The member elements of an object: in the schema's order, required ones present, then the additional
        ones the schema allows (none by default when it lists properties)."""
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else {}
        extra_schema = schema.get("additionalProperties", not props)
        required = {r for r in schema.get("required") or () if isinstance(r, str) and r in props}
        parts: list[p.Parser] = []
        for name, sub in props.items():
            if "<" in name or ">" in name or "\n" in name:
                member = ANY_ELEMENT  # a name no tag can hold
            else:
                member = p.rule(self._name(_at(path, name)), _element(name, self.content(sub, _at(path, name))))
            parts.append(member if name in required else p.optional(member))
        if extra_schema is not False:
            if isinstance(extra_schema, Mapping) and extra_schema:
                name = p.chars("[^<>/\\n]", 1)
                extra = _element(name, self.content(extra_schema, _at(path, "extra")))
            else:
                extra = ANY_ELEMENT
            parts.append(p.zero_or_more(extra))
        return p.sequence(*parts) if parts else p.eps()

    def _array(self, schema: Mapping[str, Any], path: str) -> p.Parser:
        items = schema.get("items")
        item_content = self.content(items, _at(path, "item")) if isinstance(items, Mapping) else ANY_CONTENT
        item = p.rule(self._name(path, "item"), _element("item", item_content))
        low, high = _count(schema.get("minItems")) or 0, _count(schema.get("maxItems"))
        if high is not None and high < low:
            high = None  # unsatisfiable: stay permissive rather than write an empty language
        return p.repeat(item, low, -1 if high is None else high) + p.literal(NS)

    def _constants(self, values: list[Any]) -> p.Parser:
        texts = [text for text in map(_render, values) if text is not None]
        if not texts:
            return ANY_CONTENT
        return p.choice(*(p.literal(text + NS) for text in dict.fromkeys(texts)))

    def _ref(self, target: Any, path: str) -> p.Parser:
        if not isinstance(target, str):
            return ANY_CONTENT
        if target in self._refs:
            return self._refs[target]
        resolved = resolve_local_ref(self._root, target)
        if resolved is None:
            return ANY_CONTENT
        name = self._name(_at("ref", rule_safe(target.rsplit("/", 1)[-1])))
        self._refs[target] = p.ref(name)
        self._refs[target] = rule = p.rule(name, self.content(resolved, _at(path, "ref")))
        return rule

    def _all_of(self, schema: Mapping[str, Any], path: str) -> p.Parser:
        parts = [{k: v for k, v in schema.items() if k != "allOf"}]
        for part in schema["allOf"] if isinstance(schema["allOf"], list) else [None]:
            if isinstance(part, Mapping) and isinstance(part.get("$ref"), str):
                part = resolve_local_ref(self._root, part["$ref"])
            if not isinstance(part, Mapping) or "$ref" in part or "allOf" in part:
                return ANY_CONTENT
            parts.append(dict(part))
        try:
            merged = merge_schemas([(part, f"#/allOf/{i}") for i, part in enumerate(parts)], "#")
        except SchemaError:
            return ANY_CONTENT
        return self.content(merged, path)


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
