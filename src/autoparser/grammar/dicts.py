"""Grammar of an argument dict in the template's own syntax (TAG_WITH_DICT: Gemma 4's family,
:mod:`..parser.calls.tools_dict`).

The arguments are not JSON, so the JSON-schema converter cannot describe them as a whole. :class:`DictGrammar`
translates a parameter schema into PEG combinators for the dict syntax, the way such templates write values
(Gemma 4's ``format_argument``):

* strings are the raw text between the delimiter tokens (``<|"|>Paris<|"|>``); ``enum``/``const`` become the literal
  alternatives and pattern/length/format limits go through the raw-string converter (``p.schema(..., raw=True)``);
* numbers, booleans and null are bare literals (numbers as JSON's, ranges included; booleans as the template spells
  them; null also as ``None``, as Gemma renders Python's None);
* objects are ``{key:value,…}`` with bare keys: required properties are required, unknown ones rejected (unless
  ``additionalProperties`` allows them), in the case-insensitive sorted order (Jinja's ``dictsort``, which Gemma
  uses) or in the schema's order;
* arrays are ``[v,…]`` with ``items`` and ``minItems``/``maxItems``.

What the syntax cannot express precisely (``not``, ``if``, ``prefixItems``, ``patternProperties``, remote ``$ref`` …)
falls back to any well-formed value, so a valid call is never rejected for it. Nothing here allows whitespace inside
the dict: templates write none, and a grammar describes what the model should write.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from .. import peg as p
from ..errors import SchemaError
from ..parser.request import ToolSpec
from ..peg.json_scan import DictSyntax
from ..peg.lowering.json_schema import resolve_local_ref
from ..peg.lowering.schema_merge import merge_schemas
from .common import Names

__all__ = ["DictGrammar", "dict_grammar"]

_STRING_KEYWORDS = ("pattern", "minLength", "maxLength", "format")
_NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_OBJECT_HINTS = ("properties", "additionalProperties", "required")
_ARRAY_HINTS = ("items", "prefixItems", "minItems", "maxItems")


@functools.lru_cache(maxsize=32)
def dict_grammar(syntax: DictSyntax, true: str = "true", null: str = "null", prefix: str = "dict") -> DictGrammar:
    """The grammar pieces of one dict syntax (cached: rule names must stay one rule each)."""
    return DictGrammar(syntax, true, null, prefix)


class DictGrammar:
    """Values of one dict syntax: ``true`` is the template's spelling of a boolean (``true``/``True``), ``null`` its
    spelling of null (besides ``null``); ``prefix`` names the rules of any value (``gemma4-string``)."""

    def __init__(self, syntax: DictSyntax, true: str = "true", null: str = "null", prefix: str = "dict") -> None:
        self.syntax = syntax
        self.true, self.false = ("True", "False") if true == "True" else ("true", "false")
        self.null = p.choice(*dict.fromkeys(("null", null or "null")))
        stops = {syntax.colon, syntax.comma, syntax.quote_open[0], *"{}[]"}
        excluded = "".join(re.escape(c) for c in sorted(stops))
        # A key the template writes bare must not contain what ends a bare word in the parser (or surrounding
        # whitespace, which the parser strips); other keys are quoted like strings.
        self._bare_key = re.compile(rf"[^{excluded}\s](?:[^{excluded}]*[^{excluded}\s])?")
        ordered = (syntax.comma, syntax.colon, *"{}[]", syntax.quote_open[0], '"', "'")
        char_class = "".join(_class_escape(c) for c in dict.fromkeys(ordered))
        # Strings are rules of their own: llguidance lexes a terminal-only rule as one greedy lexeme, and the text
        # alone (which may end in part of the closing token) would swallow part of it; with the tokens inside, the
        # lexeme is exact.
        self.string = p.rule(f"{prefix}-string", self.quoted())
        self.any_key = p.choice(p.chars(f"[^{char_class} \\t\\n\\r]", 1), self.string)
        again = p.ref(f"{prefix}-any-value")
        containers = (self.dict_of(self.any_key + syntax.colon + again), self.list_of(again))
        number = p.json_number()
        self.any_value = p.rule(
            f"{prefix}-any-value", p.choice(self.string, number, self.true, self.false, self.null, *containers)
        )
        member = self.any_key + syntax.colon + self.any_value
        self.any_object = p.rule(f"{prefix}-any-object", self.dict_of(member))
        self.any_array = p.rule(f"{prefix}-any-array", self.list_of(self.any_value))

    def quoted(self, text: p.Parser | None = None) -> p.Parser:
        """A string: ``text`` (by default anything) up to the closing token; nothing is escaped."""
        close = self.syntax.quote_close
        return p.literal(self.syntax.quote_open) + (text if text is not None else p.until(close)) + p.literal(close)

    def dict_of(self, member: p.Parser) -> p.Parser:
        comma = self.syntax.comma
        return "{" + p.optional(member + p.zero_or_more(comma + member)) + "}"

    def list_of(self, item: p.Parser) -> p.Parser:
        comma = self.syntax.comma
        return "[" + p.optional(item + p.zero_or_more(comma + item)) + "]"

    def arguments(self, tool: ToolSpec, names: Names | None = None) -> p.Parser:
        """The argument dict of ``tool`` under its parameter schema."""
        return _SchemaGrammar(self, tool, names if names is not None else Names()).arguments()

    def key_text(self, name: str) -> str | None:
        """A key as the template writes it (bare), quoted where a bare word cannot hold it; None if impossible."""
        if self._bare_key.fullmatch(name):
            return name
        syntax = self.syntax
        return None if syntax.quote_close in name else syntax.quote_open + name + syntax.quote_close

    def key(self, name: str) -> p.Parser:
        text = self.key_text(name)
        return p.literal(text) if text is not None else self.string  # an unspellable name: some quoted key

    def constants(self, values: list[Any]) -> p.Parser:
        """``enum``/``const`` values as the template writes them; values the syntax cannot hold (a string containing
        the closing token, NaN) are left out, and if none is left the value is unconstrained."""
        texts = [text for text in map(self.render, values) if text is not None]
        if not texts:
            return self.any_value
        alternatives = [self.null if text == "null" else p.literal(text) for text in dict.fromkeys(texts)]
        return p.choice(*alternatives)

    def render(self, value: Any) -> str | None:
        """The value as such a template writes it, bare keys and sorted members; None if it has no spelling."""
        syntax = self.syntax
        if isinstance(value, str):
            return None if syntax.quote_close in value else syntax.quote_open + value + syntax.quote_close
        if isinstance(value, bool):
            return self.true if value else self.false
        if value is None:
            return "null"
        if isinstance(value, int | float):
            return json.dumps(value) if math.isfinite(value) else None
        if isinstance(value, list):
            items = [text for text in map(self.render, value) if text is not None]
            return "[" + syntax.comma.join(items) + "]" if len(items) == len(value) else None
        if isinstance(value, dict):
            ordered = sorted(value.items(), key=lambda kv: str(kv[0]).lower())  # Jinja's dictsort
            pairs = ((self.key_text(str(k)), self.render(v)) for k, v in ordered)
            members = [f"{key}{syntax.colon}{text}" for key, text in pairs if key is not None and text is not None]
            return "{" + syntax.comma.join(members) + "}" if len(members) == len(value) else None
        return None


def _class_escape(char: str) -> str:
    return "\\" + char if char in "]\\^-[" else char


# --- schema-typed values -------------------------------------------------------------------------------------------


class _SchemaGrammar:
    """The dict grammar of one tool's parameter schema. ``path`` (the property names down to a value, joined
    by ``-``) names the rules, so the GBNF reads ``get_weather-city ::= "city:" …``."""

    def __init__(self, values: DictGrammar, tool: ToolSpec, names: Names) -> None:
        self._g = values
        self._tool = tool.name
        self._root = tool.parameters
        self._names = names
        self._refs: dict[str, p.Parser] = {}  # $ref -> its rule (a ref() while the rule is being built)

    def arguments(self) -> p.Parser:
        """The argument dict: the parameter schema read as an object (no schema at all: any dict)."""
        schema = self._root
        if "type" not in schema and not any(key in schema for key in _OBJECT_HINTS):
            return self.value(schema, "") if schema else self._g.any_object
        return self._object({**schema, "type": "object"}, "")

    def _name(self, path: str, kind: str = "") -> str:
        """``tool-path`` for a member or a leaf, ``tool-path-kind`` for a container (members and their values
        share a path); the arguments dict is ``tool-args``."""
        return self._names(self._tool, path or "args", kind if path else "")

    def value(self, schema: Any, path: str) -> p.Parser:
        """A value valid under ``schema``; dispatches on the keywords, most specific first."""
        if not isinstance(schema, Mapping) or not schema:
            return self._g.any_value  # true, {} or nonsense: anything goes
        if "$ref" in schema:
            return self._ref(schema["$ref"], path)
        if "const" in schema:
            return self._g.constants([schema["const"]])
        if isinstance(schema.get("enum"), list):
            return self._g.constants(schema["enum"])
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list):
                rest = {k: v for k, v in schema.items() if k != key}
                branches = [{**rest, **b} for b in schema[key] if isinstance(b, Mapping)]
                if not branches:
                    return self._g.any_value
                return p.choice(*(self.value(b, _at(path, str(i))) for i, b in enumerate(branches, 1)))
        if "allOf" in schema:
            return self._all_of(schema, path)
        if schema.get("nullable") is True:  # OpenAPI's spelling, which the template documents
            return p.choice(self.value({k: v for k, v in schema.items() if k != "nullable"}, path), self._g.null)
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
                return p.choice(self._g.true, self._g.false)
            case "null":
                return self._g.null
            case "object":
                return self._object(schema, path)
            case "array":
                return self._array(schema, path)
        return self._g.any_value

    def _string(self, schema: Mapping[str, Any], path: str) -> p.Parser:
        """The raw text between quote tokens; limits go through the raw-string converter, which is then directly
        followed by the closing quote (the shape grammar writers fuse)."""
        limits = {k: schema[k] for k in _STRING_KEYWORDS if k in schema}
        if not limits:
            return self._g.string
        close = self._g.syntax.quote_close
        text = p.schema(p.until(close), self._name(path, "text"), {"type": "string", **limits}, raw=True)
        return p.rule(self._name(path, "string"), self._g.quoted(text))

    def _object(self, schema: Mapping[str, Any], path: str) -> p.Parser:
        """``{k:v,…}``: every required property, optional ones skippable, in the template's or the schema's order,
        then the additional members the schema allows (none by default when it lists properties, as for JSON)."""
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else {}
        extra_schema = schema.get("additionalProperties", "properties" not in schema)
        if not props and extra_schema in (True, {}):
            return self._g.any_object
        colon, comma = self._g.syntax.colon, self._g.syntax.comma
        extra = None
        if extra_schema is not False:
            extra = self._g.any_key + colon + self.value(extra_schema, _at(path, "extra"))
        required = {r for r in schema.get("required") or () if isinstance(r, str) and r in props}
        members = {
            name: p.rule(self._name(_at(path, name)), self._g.key(name) + colon + self.value(sub, _at(path, name)))
            for name, sub in props.items()
        }
        orders = dict.fromkeys((tuple(sorted(props, key=str.lower)), tuple(props)))  # the template's, the schema's
        body = p.choice(
            *(
                _ordered_members([members[n] for n in order], [n in required for n in order], extra, comma)
                for order in orders
            )
        )
        return p.rule(self._name(path, "dict"), "{" + body + "}")

    def _array(self, schema: Mapping[str, Any], path: str) -> p.Parser:
        """``[v,…]`` of the ``items`` schema, ``minItems``..``maxItems`` long; tuples (``prefixItems``) and arrays
        without an items schema hold any values."""
        items = schema.get("items")
        tuple_like = "prefixItems" in schema or not isinstance(items, Mapping)
        item = self._g.any_value if tuple_like else self.value(items, _at(path, "item"))
        low, high = _count(schema.get("minItems")) or 0, _count(schema.get("maxItems"))
        if high is not None and high < low:
            high = None  # unsatisfiable: stay permissive rather than write an empty language
        if high == 0:
            return p.literal("[]")
        if (low, high) == (0, None):
            if item is self._g.any_value:
                return self._g.any_array
            return p.rule(self._name(path, "list"), self._g.list_of(item))
        comma = self._g.syntax.comma
        listed = item + p.repeat(comma + item, max(low - 1, 0), -1 if high is None else high - 1)
        return p.rule(self._name(path, "list"), "[" + (listed if low else p.optional(listed)) + "]")

    def _ref(self, target: Any, path: str) -> p.Parser:
        """A local ``#/…`` reference is one rule per target (recursion goes through ``ref()``); a remote or broken
        one is any value."""
        if not isinstance(target, str):
            return self._g.any_value
        if target in self._refs:
            return self._refs[target]
        resolved = resolve_local_ref(self._root, target)
        if resolved is None:
            return self._g.any_value
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
                return self._g.any_value
            parts.append(dict(part))
        try:
            merged = merge_schemas([(part, f"#/allOf/{i}") for i, part in enumerate(parts)], "#")
        except SchemaError:
            return self._g.any_value
        return self.value(merged, path)


def _at(path: str, name: str) -> str:
    return f"{path}-{name}" if path else name


def _ordered_members(
    members: list[p.Parser], required: list[bool], extra: p.Parser | None, comma: str = ","
) -> p.Parser:
    """Members in this order, comma-separated, each required one present: one alternative per possible first
    member (an optional one before the first required one, or that required one), then the rest in order."""
    extras = p.zero_or_more(comma + extra) if extra is not None else p.eps()
    alternatives: list[p.Parser] = []
    for first, member in enumerate(members):
        rest = [(comma + m) if req else p.optional(comma + m) for m, req in zip(members, required, strict=True)]
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
