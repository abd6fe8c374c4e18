"""Grammar for Gemma 4 output: ``<|tool_call>call:NAME{…}<tool_call|>`` calls whose arguments follow the tool's schema.

The arguments are written in the template's own dict syntax (see :mod:`.gemma4`), not JSON, so the JSON-schema
converter cannot describe them as a whole. This module translates a parameter schema into PEG combinators for that
syntax, the way the template's ``format_argument`` writes values:

* strings are ``<|"|>text<|"|>`` with raw text; ``enum``/``const`` become the literal alternatives
  (``<|"|>Paris<|"|>``) and pattern/length/format limits go through the raw-string converter (``p.schema(...,
  raw=True)``);
* numbers, booleans and null are bare JSON literals, so their grammar (ranges included) is the JSON schema's; null
  may also be ``None`` (the template renders Python's None);
* objects are ``{key:value,…}`` with bare keys: required properties are required, unknown ones rejected (unless
  ``additionalProperties`` allows them), in the template's order (it sorts keys, case-insensitively, like Jinja's
  ``dictsort``) or in the schema's order;
* arrays are ``[v,…]`` with ``items`` and ``minItems``/``maxItems``.

What the syntax cannot express precisely (``not``, ``if``, ``prefixItems``, ``patternProperties``, remote
``$ref`` …) falls back to any well-formed Gemma value, so a valid call is never rejected for it. Nothing here
allows whitespace inside the dict: the template writes none, and the grammar describes what the model should write.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from ... import peg as p
from ...analysis.model import TemplateAnalysis
from ...errors import SchemaError
from ...peg.json_schema import resolve_local_ref
from ...peg.schema_merge import merge_schemas
from ..grammar import FormatGrammar, Trigger, json_answer
from ..request import ParseRequest, ToolSpec
from .gemma4 import CALL_END, CALL_PREFIX, CALL_START, CHANNEL_END, CHANNEL_START, QUOTE, RESPONSE_START, TURN_END

__all__ = ["grammar"]

# Every marker the model writes; each is one token in Gemma's vocabulary and must stay whole.
PRESERVED_TOKENS = (CHANNEL_START, CHANNEL_END, CALL_START, CALL_END, QUOTE, RESPONSE_START, TURN_END)

_STRING_KEYWORDS = ("pattern", "minLength", "maxLength", "format")
_NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_OBJECT_HINTS = ("properties", "additionalProperties", "required")
_ARRAY_HINTS = ("items", "prefixItems", "minItems", "maxItems")
# A key the template writes bare must not contain what ends a bare word in the parser (or surrounding whitespace,
# which the parser strips); other keys are quoted like strings.
_BARE_KEY = re.compile(r"[^,:{}\[\]<\s](?:[^,:{}\[\]<]*[^,:{}\[\]<\s])?")


def grammar(analysis: TemplateAnalysis, request: ParseRequest) -> FormatGrammar:
    """The lazy tool-call section (trigger ``<|tool_call>``), a json_schema answer after optional thinking, and the
    thinking tags ``<|channel>``/``<channel|>``. The analysis reports only the end tag (start ``""``), with which an
    engine cannot tell that a call written inside a thought is not meant to be one.

    tool_choice required keeps the default shape (any text up to the first ``<|tool_call>``, then the section):
    that text covers a thought block and an introduction, which is all Gemma writes before a call."""
    del analysis  # the syntax is fixed by the format; the generic findings do not describe it
    section = _section(request) if request.tools_enabled else None
    return FormatGrammar(
        section=section,
        triggers=(Trigger("word", CALL_START),) if section is not None else (),
        response=_response(request) if request.json_schema is not None else None,
        preserved_tokens=PRESERVED_TOKENS,
        thinking_tags=(CHANNEL_START, CHANNEL_END),
    )


def _thought() -> p.Parser:
    """A whole ``<|channel>thought\\n…<channel|>`` block (the channel name is part of the text)."""
    return p.literal(CHANNEL_START) + p.until(CHANNEL_END) + p.literal(CHANNEL_END)


def _section(request: ParseRequest) -> p.Parser:
    """One call, or several when parallel calls are on (Gemma may think again between them when thinking is on),
    then the ``<|tool_response>`` hand-off the model may write after its calls."""
    names = _Names()
    tools = {t.name: t for t in reversed(request.tools)}  # one rule per name: the first definition wins
    calls = [_call(tools[name], names) for name in dict.fromkeys(t.name for t in request.tools)]
    call = p.choice(*calls)
    if request.parallel_tool_calls:
        between = p.space() + p.optional(_thought() + p.space()) if request.enable_thinking else p.space()
        call = call + p.zero_or_more(between + call)
    return call + p.optional(RESPONSE_START)


def _call(tool: ToolSpec, names: _Names) -> p.Parser:
    arguments = _SchemaGrammar(tool, names).arguments()
    return p.rule(f"tool-{tool.name}", p.literal(CALL_START + CALL_PREFIX + tool.name) + arguments + CALL_END)


def _response(request: ParseRequest) -> p.Parser:
    """The JSON answer (bare or in a ```json fence), after a thought block when thinking is on."""
    thought = p.optional(_thought() + p.space()) if request.enable_thinking else p.eps()
    return p.space() + thought + json_answer(request) + p.space()


# --- any well-formed value -----------------------------------------------------------------------------------------


def _quoted(text: p.Parser | None = None) -> p.Parser:
    """A string: ``text`` (by default anything) up to the closing quote token; nothing is escaped."""
    return p.literal(QUOTE) + (text if text is not None else p.until(QUOTE)) + p.literal(QUOTE)


# Strings are rules of their own: llguidance lexes a terminal-only rule as one greedy lexeme, and the text alone
# (which may end in ``<|"|``) would swallow part of the closing quote; with the quotes inside, the lexeme is exact.
STRING = p.rule("gemma4-string", _quoted())


_NULL = p.choice("null", "None")
_ANY_KEY = p.choice(p.chars("[^,:{}\\[\\]<\"' \\t\\n\\r]", 1), STRING)


def _dict_of(member: p.Parser) -> p.Parser:
    return "{" + p.optional(member + p.zero_or_more("," + member)) + "}"


def _list_of(item: p.Parser) -> p.Parser:
    return "[" + p.optional(item + p.zero_or_more("," + item)) + "]"


def _any_value() -> p.Parser:
    """One self-recursive rule: a rule reached only through ``ref()`` would be missing from the grammar, so the
    recursion must come back to the rule callers hold."""
    again = p.ref("gemma4-any-value")
    containers = (_dict_of(_ANY_KEY + ":" + again), _list_of(again))
    return p.rule("gemma4-any-value", p.choice(STRING, p.json_number(), "true", "false", _NULL, *containers))


ANY_VALUE = _any_value()
ANY_OBJECT = p.rule("gemma4-any-object", _dict_of(_ANY_KEY + ":" + ANY_VALUE))
ANY_ARRAY = p.rule("gemma4-any-array", _list_of(ANY_VALUE))


# --- schema-typed values -------------------------------------------------------------------------------------------


class _Names:
    """Rule names unique across one request's tools (``a`` + ``b-c`` and ``a-b`` + ``c`` must not collide: two
    different rules under one name are an error)."""

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
    """The Gemma value grammar of one tool's parameter schema. ``path`` (the property names down to a value, joined
    by ``-``) names the rules, so the GBNF reads ``get_weather-city ::= "city:" …``."""

    def __init__(self, tool: ToolSpec, names: _Names) -> None:
        self._tool = tool.name
        self._root = tool.parameters
        self._names = names
        self._refs: dict[str, p.Parser] = {}  # $ref -> its rule (a ref() while the rule is being built)

    def arguments(self) -> p.Parser:
        """The argument dict: the parameter schema read as an object (no schema at all: any dict)."""
        schema = self._root
        if "type" not in schema and not any(key in schema for key in _OBJECT_HINTS):
            return self.value(schema, "") if schema else ANY_OBJECT
        return self._object({**schema, "type": "object"}, "")

    def _name(self, path: str, kind: str = "") -> str:
        """``tool-path`` for a member or a leaf, ``tool-path-kind`` for a container (members and their values
        share a path); the arguments dict is ``tool-args``."""
        return self._names(self._tool, path or "args", kind if path else "")

    def value(self, schema: Any, path: str) -> p.Parser:
        """A value valid under ``schema``; dispatches on the keywords, most specific first."""
        if not isinstance(schema, Mapping) or not schema:
            return ANY_VALUE  # true, {} or nonsense: anything goes
        if "$ref" in schema:
            return self._ref(schema["$ref"], path)
        if "const" in schema:
            return _constants([schema["const"]])
        if isinstance(schema.get("enum"), list):
            return _constants(schema["enum"])
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list):
                rest = {k: v for k, v in schema.items() if k != key}
                branches = [{**rest, **b} for b in schema[key] if isinstance(b, Mapping)]
                if not branches:
                    return ANY_VALUE
                return p.choice(*(self.value(b, _at(path, str(i))) for i, b in enumerate(branches, 1)))
        if "allOf" in schema:
            return self._all_of(schema, path)
        if schema.get("nullable") is True:  # OpenAPI's spelling, which the template documents
            return p.choice(self.value({k: v for k, v in schema.items() if k != "nullable"}, path), _NULL)
        kind = schema.get("type", _implied_type(schema))
        if isinstance(kind, list) and kind:
            return p.choice(*(self.value({**schema, "type": t}, _at(path, str(t))) for t in kind))
        match kind:
            case "string":
                return self._string(schema, path)
            case "integer" | "number":
                bounds = {k: schema[k] for k in _NUMBER_KEYWORDS if k in schema}
                return p.schema(p.json(), self._name(path), {"type": kind, **bounds})
            case "boolean":
                return p.choice("true", "false")
            case "null":
                return _NULL
            case "object":
                return self._object(schema, path)
            case "array":
                return self._array(schema, path)
        return ANY_VALUE

    def _string(self, schema: Mapping[str, Any], path: str) -> p.Parser:
        """The raw text between quote tokens; limits go through the raw-string converter, which is then directly
        followed by the closing quote (the shape grammar writers fuse)."""
        limits = {k: schema[k] for k in _STRING_KEYWORDS if k in schema}
        if not limits:
            return STRING
        text = p.schema(p.until(QUOTE), self._name(path, "text"), {"type": "string", **limits}, raw=True)
        return p.rule(self._name(path, "string"), _quoted(text))

    def _object(self, schema: Mapping[str, Any], path: str) -> p.Parser:
        """``{k:v,…}``: every required property, optional ones skippable, in the template's or the schema's order,
        then the additional members the schema allows (none by default when it lists properties, as for JSON)."""
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else {}
        extra_schema = schema.get("additionalProperties", "properties" not in schema)
        if not props and extra_schema in (True, {}):
            return ANY_OBJECT
        extra = None if extra_schema is False else _ANY_KEY + ":" + self.value(extra_schema, _at(path, "extra"))
        required = {r for r in schema.get("required") or () if isinstance(r, str) and r in props}
        members = {
            name: p.rule(self._name(_at(path, name)), _key(name) + ":" + self.value(sub, _at(path, name)))
            for name, sub in props.items()
        }
        orders = dict.fromkeys((tuple(sorted(props, key=str.lower)), tuple(props)))  # the template's, the schema's
        body = p.choice(*(
            _ordered_members([members[n] for n in order], [n in required for n in order], extra) for order in orders
        ))
        return p.rule(self._name(path, "dict"), "{" + body + "}")

    def _array(self, schema: Mapping[str, Any], path: str) -> p.Parser:
        """``[v,…]`` of the ``items`` schema, ``minItems``..``maxItems`` long; tuples (``prefixItems``) and arrays
        without an items schema hold any values."""
        items = schema.get("items")
        tuple_like = "prefixItems" in schema or not isinstance(items, Mapping)
        item = ANY_VALUE if tuple_like else self.value(items, _at(path, "item"))
        low, high = _count(schema.get("minItems")) or 0, _count(schema.get("maxItems"))
        if high is not None and high < low:
            high = None  # unsatisfiable: stay permissive rather than write an empty language
        if high == 0:
            return p.literal("[]")
        if (low, high) == (0, None):
            return ANY_ARRAY if item is ANY_VALUE else p.rule(self._name(path, "list"), _list_of(item))
        listed = item + p.repeat("," + item, max(low - 1, 0), -1 if high is None else high - 1)
        return p.rule(self._name(path, "list"), "[" + (listed if low else p.optional(listed)) + "]")

    def _ref(self, target: Any, path: str) -> p.Parser:
        """A local ``#/…`` reference is one rule per target (recursion goes through ``ref()``); a remote or broken
        one is any value."""
        if not isinstance(target, str):
            return ANY_VALUE
        if target in self._refs:
            return self._refs[target]
        resolved = resolve_local_ref(self._root, target)
        if resolved is None:
            return ANY_VALUE
        name = self._name(_at("ref", target.rsplit("/", 1)[-1]))
        self._refs[target] = p.ref(name)
        self._refs[target] = rule = p.rule(name, self.value(resolved, _at(path, "ref")))
        return rule

    def _all_of(self, schema: Mapping[str, Any], path: str) -> p.Parser:
        """The intersection of the parts when the shared merger can compute it, else any value."""
        parts = [{k: v for k, v in schema.items() if k != "allOf"}]
        for part in schema["allOf"] if isinstance(schema["allOf"], list) else [None]:
            if isinstance(part, Mapping) and isinstance(part.get("$ref"), str):
                part = resolve_local_ref(self._root, part["$ref"])
            if not isinstance(part, Mapping) or "$ref" in part or "allOf" in part:
                return ANY_VALUE
            parts.append(dict(part))
        try:
            merged = merge_schemas([(part, f"#/allOf/{i}") for i, part in enumerate(parts)], "#")
        except SchemaError:
            return ANY_VALUE
        return self.value(merged, path)


def _at(path: str, name: str) -> str:
    return f"{path}-{name}" if path else name


def _ordered_members(members: list[p.Parser], required: list[bool], extra: p.Parser | None) -> p.Parser:
    """Members in this order, comma-separated, each required one present: one alternative per possible first
    member (an optional one before the first required one, or that required one), then the rest in order."""
    extras = p.zero_or_more("," + extra) if extra is not None else p.eps()
    alternatives: list[p.Parser] = []
    for first, member in enumerate(members):
        rest = [("," + m) if req else p.optional("," + m) for m, req in zip(members, required, strict=True)]
        alternatives.append(member + p.sequence(*rest[first + 1 :]) + extras)
        if required[first]:
            break
    else:  # nothing is required: an empty dict, or additional members only
        alternatives.append(p.optional(extra + extras) if extra is not None else p.eps())
    return p.choice(*alternatives)


def _implied_type(schema: Mapping[str, Any]) -> str | None:
    """The type a schema without ``type`` describes through its keywords, if any."""
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



def _key_text(name: str) -> str | None:
    """A key as the template writes it (bare), quoted where a bare word cannot hold it; None if impossible."""
    if _BARE_KEY.fullmatch(name):
        return name
    return None if QUOTE in name else QUOTE + name + QUOTE


def _key(name: str) -> p.Parser:
    text = _key_text(name)
    return p.literal(text) if text is not None else STRING  # an unspellable name: some quoted key


def _constants(values: list[Any]) -> p.Parser:
    """``enum``/``const`` values as the template writes them; values the syntax cannot hold (a string containing
    the quote token, NaN) are left out, and if none is left the value is unconstrained."""
    texts = [text for text in map(_render, values) if text is not None]
    if not texts:
        return ANY_VALUE
    alternatives = [_NULL if text == "null" else p.literal(text) for text in dict.fromkeys(texts)]
    return p.choice(*alternatives)


def _render(value: Any) -> str | None:
    """``format_argument`` with bare keys and sorted members; None if the value has no Gemma spelling."""
    if isinstance(value, str):
        return None if QUOTE in value else QUOTE + value + QUOTE
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return json.dumps(value) if math.isfinite(value) else None
    if isinstance(value, list):
        items = [text for text in map(_render, value) if text is not None]
        return "[" + ",".join(items) + "]" if len(items) == len(value) else None
    if isinstance(value, dict):
        ordered = sorted(value.items(), key=lambda kv: str(kv[0]).lower())  # Jinja's dictsort
        members = [f"{key}:{text}" for key, text in ((_key_text(str(k)), _render(v)) for k, v in ordered)
                   if key is not None and text is not None]
        return "{" + ",".join(members) + "}" if len(members) == len(value) else None
    return None
