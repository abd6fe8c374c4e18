"""JSON Schema → GBNF: grammars that accept exactly the JSON values a (tool-argument) schema allows.

Conventions shared with the PEG lowering:

* JSON values carry no trailing whitespace; ``json-ws`` separates tokens inside objects and arrays.
* Generic rules (``value``, ``string``, ``number`` ...) come from :func:`.schema_formats.json_rule`.
* Schema-specific rules are named after the caller's ``name`` and reserved under a key made of the
  schema document and the JSON-pointer location, so equal locations of equal documents share rules and
  anything else gets its own (collision-free) name. ``$ref`` targets are referenced by rule name, which
  makes recursive schemas work.

Objects list properties in schema order: required ones must be present, optional ones may be skipped,
then additional properties (if allowed). ``additionalProperties`` defaults to *false* when
``properties`` is given — constrained decoding should not invent keys.
"""

from __future__ import annotations

import functools
import json
import math
import re
import urllib.parse
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Any

from ...errors import SchemaError
from .gbnf_syntax import RuleSet, literal
from .regex_gbnf import regex_to_gbnf
from .schema_formats import FORMATS, MAX_REPEAT, format_rule, int_range, json_rule, json_ws, repeat
from .schema_merge import ANNOTATIONS, Unsatisfiable, canonical_json, merge_schemas
from .schema_objects import ObjectBuilder, array_body, object_body, other_key_body

__all__ = ["JsonSchemaConverter", "resolve_local_ref"]

_IDENT = re.compile(r"[A-Za-z0-9-]+")
_TYPES = ("string", "number", "integer", "boolean", "null", "object", "array")
#: Keywords whose constraint cannot be expressed; ignoring them could reject valid values or accept
#: invalid ones in ways callers would not expect, so they are errors.
_UNSUPPORTED = frozenset({
    "not", "if", "then", "else", "patternProperties", "dependentSchemas", "dependencies", "contains",
    "unevaluatedItems", "$dynamicRef", "$recursiveRef",
})
_OBJECT_HINTS = ("properties", "required", "additionalProperties")
_ARRAY_HINTS = ("items", "prefixItems", "minItems", "maxItems")
_STRING_HINTS = ("minLength", "maxLength", "pattern", "format")


def _escape_pointer(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _count(schema: dict[str, Any], key: str, path: str) -> int | None:
    value = schema.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or value < 0 or value != int(value):
        raise SchemaError(f"{path}/{key}", f"{key} must be a non-negative integer")
    return int(value)


def _bounds(schema: dict[str, Any], path: str, lo_key: str, hi_key: str) -> tuple[int, int | None]:
    lo, hi = _count(schema, lo_key, path), _count(schema, hi_key, path)
    if lo is not None and lo > MAX_REPEAT:
        raise SchemaError(f"{path}/{lo_key}", f"{lo_key} above {MAX_REPEAT} is not supported")
    if hi is not None and hi > MAX_REPEAT:
        hi = None
    if lo is not None and hi is not None and lo > hi:
        raise Unsatisfiable(path, f"{lo_key} {lo} exceeds {hi_key} {hi}: nothing can match")
    return lo or 0, hi


class JsonSchemaConverter:
    """Turns JSON schemas into GBNF rules inside a shared :class:`RuleSet`."""

    def __init__(self, rules: RuleSet) -> None:
        self._rules = rules
        self._root: Any = None
        self._name = ""
        self._doc: Hashable = None
        self._pending: set[Hashable] = set()
        self._ref_chain: list[str] = []  # $ref targets entered without consuming any token yet

    # ------------------------------------------------------------------------------------ public API
    def convert(self, schema: dict[str, Any] | bool, name: str) -> str:
        """Define rules for JSON values valid under ``schema`` and return the GBNF expression (a rule name)."""
        with self._document(schema, name):
            return self._rule_at(schema, "#", name, force=False)

    def convert_raw_string(self, schema: dict[str, Any], name: str) -> str | None:
        """Grammar for the raw (unquoted, unescaped) text of a string-typed value, or None if unconstrained."""
        with self._document(schema, name):
            return self._raw(schema, "#", name, frozenset())

    # ------------------------------------------------------------------------------------- internals
    @contextmanager
    def _document(self, schema: Any, name: str) -> Iterator[None]:
        saved = (self._root, self._name, self._doc, self._pending, self._ref_chain)
        try:
            fingerprint: Hashable = json.dumps(schema, sort_keys=True)
        except (TypeError, ValueError, RecursionError):
            fingerprint = object()  # not JSON: the walk reports where; never share its rules
        self._root, self._name, self._doc = schema, name, ("json-schema", name, fingerprint)
        self._pending, self._ref_chain = set(), []
        try:
            yield
        except RecursionError:
            raise SchemaError("#", "schema nests too deeply") from None
        finally:
            self._root, self._name, self._doc, self._pending, self._ref_chain = saved

    def _define(self, hint: str, key: Hashable, body: str) -> str:
        return self._rules.define(self._rules.reserve(hint, (self._doc, key)), body)

    def _rule_at(self, schema: Any, path: str, hint: str, *, force: bool) -> str:
        """Name of a rule for the sub-schema at ``path`` (an existing generic rule when the body is one)."""
        key = (self._doc, path)
        existing = self._rules.lookup(key)
        if existing is not None and (existing in self._rules or key in self._pending):
            return existing
        if not force:
            body = self._expr(schema, path, hint)
            existing = self._rules.lookup(key)
            if existing is not None and existing in self._rules:
                return existing  # defined meanwhile by a $ref back to this location
            return body if _IDENT.fullmatch(body) else self._define(hint, path, body)
        name = self._rules.reserve(hint, key)
        self._pending.add(key)
        try:
            body = self._expr(schema, path, hint)
        finally:
            self._pending.discard(key)
        return self._rules.define(name, body)

    @contextmanager
    def _consuming(self) -> Iterator[None]:
        """Entering a sub-schema behind a token ("{", "[" ...): ref cycles past here are real recursion."""
        saved, self._ref_chain = self._ref_chain, []
        try:
            yield
        finally:
            self._ref_chain = saved

    def _check(self, schema: Any, path: str) -> dict[str, Any]:
        if schema is False:
            raise Unsatisfiable(path, "schema false matches nothing")
        if schema is True:
            return {}
        if not isinstance(schema, dict):
            raise SchemaError(path, f"expected a schema object or boolean, got {type(schema).__name__}")
        for key in schema:
            if key in _UNSUPPORTED:
                raise SchemaError(f"{path}/{key}", f"keyword {key!r} is not supported")
        return schema

    def _resolve(self, ref: Any, path: str) -> tuple[Any, str]:
        if not isinstance(ref, str):
            raise SchemaError(path, "$ref must be a string")
        if not ref.startswith("#"):
            raise SchemaError(path, f"only local $ref ('#/...') is supported, got {ref!r}")
        pointer = urllib.parse.unquote(ref[1:])
        if pointer and not pointer.startswith("/"):
            raise SchemaError(path, f"unsupported $ref {ref!r} (anchors are not supported)")
        node = resolve_local_ref(self._root, ref)
        if node is None:
            raise SchemaError(path, f"cannot resolve $ref {ref!r}")
        return node, "#" + pointer

    def _ref_hint(self, target_path: str) -> str:
        tokens = target_path.split("/")[1:]
        if tokens[:1] in (["$defs"], ["definitions"]):
            tokens = tokens[1:]
        return "-".join([self._name, *tokens])

    def _flatten(self, schema: Any, path: str, seen: frozenset[str]) -> list[tuple[dict[str, Any], str]]:
        """The members of an allOf (following $ref and nested allOf) as plain schemas with their paths."""
        schema = self._check(schema, path)
        parts: list[tuple[dict[str, Any], str]] = []
        if "$ref" in schema:
            target, target_path = self._resolve(schema["$ref"], f"{path}/$ref")
            if target_path in seen:
                raise SchemaError(f"{path}/$ref", "recursive $ref inside allOf cannot be merged")
            parts += self._flatten(target, target_path, seen | {target_path})
        members = schema.get("allOf", [])
        if not isinstance(members, list):
            raise SchemaError(f"{path}/allOf", "allOf must be a list")
        for i, member in enumerate(members):
            parts += self._flatten(member, f"{path}/allOf/{i}", seen)
        rest = {k: v for k, v in schema.items() if k not in ("$ref", "allOf") and k not in ANNOTATIONS}
        if rest:
            parts.append((rest, path))
        return parts

    def _needs_merge(self, schema: dict[str, Any]) -> bool:
        """allOf, or a $ref/anyOf with sibling constraints: all handled as an intersection."""
        if "allOf" in schema:
            return True
        constraints = [k for k in schema if k not in ANNOTATIONS and not k.startswith("x-")]
        return len(constraints) > 1 and any(k in constraints for k in ("$ref", "anyOf", "oneOf"))

    def _merged(self, schema: dict[str, Any], path: str) -> dict[str, Any]:
        return merge_schemas(self._flatten(schema, path, frozenset()), path)

    # -------------------------------------------------------------------------------- JSON grammar
    def _expr(self, schema: Any, path: str, hint: str) -> str:
        schema = self._check(schema, path)
        if self._needs_merge(schema):
            return self._expr(self._merged(schema, path), f"{path}/allOf", hint)
        if "$ref" in schema:
            target, target_path = self._resolve(schema["$ref"], f"{path}/$ref")
            if target_path in self._ref_chain:
                # A direct self-reference adds nothing (L = L | X is X), so as an anyOf alternative it
                # is dropped; a longer cycle would cache partial rules for the schemas in between.
                error = Unsatisfiable if target_path == self._ref_chain[-1] else SchemaError
                raise error(f"{path}/$ref", "$ref cycle that never reaches a concrete schema")
            self._ref_chain.append(target_path)
            try:
                return self._rule_at(target, target_path, self._ref_hint(target_path), force=True)
            finally:
                self._ref_chain.pop()
        for key in ("anyOf", "oneOf"):  # oneOf's exclusivity is not enforced
            if key in schema:
                rule = functools.partial(self._rule_at, force=False)
                names = self._alternatives(schema[key], f"{path}/{key}", hint, rule)
                return " | ".join(dict.fromkeys(n for n in names if n))
        if "const" in schema:
            return self._json_literals([schema["const"]], f"{path}/const")
        types = self._types(schema, path)
        if "enum" in schema:
            return self._enum(schema, types, path)
        if schema.get("nullable") is True and "null" not in types:
            types.append("null")
        return " | ".join(self._typed(schema, t, path, hint) for t in types)

    def _alternatives(
        self, alts: Any, path: str, hint: str, convert: Callable[[Any, str, str], str | None]
    ) -> list[str | None]:
        """Convert each alternative, dropping the ones nothing can match (unless all are like that)."""
        if not isinstance(alts, list) or not alts:
            raise SchemaError(path, f"{path.rsplit('/', 1)[-1]} must be a non-empty list")
        results: list[str | None] = []
        dropped: list[Unsatisfiable] = []
        for i, alt in enumerate(alts):
            try:
                results.append(convert(alt, f"{path}/{i}", f"{hint}-{i}"))
            except Unsatisfiable as exc:
                dropped.append(exc)
        if not results:
            raise dropped[0]
        return results

    def _types(self, schema: dict[str, Any], path: str) -> list[str]:
        declared = schema.get("type")
        if declared is None:
            inferred = [t for t, hints in (("object", _OBJECT_HINTS), ("array", _ARRAY_HINTS),
                                           ("string", _STRING_HINTS)) if any(h in schema for h in hints)]
            return inferred or (["value"] if "enum" not in schema else [])
        types = [declared] if isinstance(declared, str) else declared
        if not isinstance(types, list) or not types or not all(isinstance(t, str) for t in types):
            raise SchemaError(f"{path}/type", "type must be a type name or a non-empty list of them")
        for t in types:
            if t not in _TYPES:
                raise SchemaError(f"{path}/type", f"unknown type {t!r}")
        if "number" in types and "integer" in types:
            types = [t for t in types if t != "integer"]
        return list(dict.fromkeys(types))

    def _json_literals(self, values: list[Any], path: str) -> str:
        texts: dict[str, None] = {}
        for value in values:
            texts[canonical_json(value, path)] = None
            texts[canonical_json(value, path, ensure_ascii=True)] = None  # "é" may also be "\u00e9"
        return " | ".join(literal(t) for t in texts)

    def _enum(self, schema: dict[str, Any], types: list[str], path: str) -> str:
        values = schema["enum"]
        if not isinstance(values, list) or not values:
            raise SchemaError(f"{path}/enum", "enum must be a non-empty list")
        if types and types != ["value"]:
            values = [v for v in values if any(_is_type(v, t) for t in types)]
            if not values:
                raise Unsatisfiable(f"{path}/enum", "no enum value has the declared type")
        return self._json_literals(values, f"{path}/enum")

    def _typed(self, schema: dict[str, Any], t: str, path: str, hint: str) -> str:
        if t == "string":
            return self._string(schema, path, hint)
        if t == "integer":
            bounds = self._int_bounds(schema, path)
            return json_rule(self._rules, "integer") if bounds == (None, None) else int_range(*bounds)
        if t == "object":
            with self._consuming():
                return self._object(schema, path, hint)
        if t == "array":
            with self._consuming():
                return self._array(schema, path, hint)
        return json_rule(self._rules, t)  # number (bounds ignored), boolean, null, value

    def _string(self, schema: dict[str, Any], path: str, hint: str) -> str:
        quote = literal('"')
        if "pattern" in schema:
            body = regex_to_gbnf(schema["pattern"], self._rules, f"{hint}-pattern",
                                 path=f"{path}/pattern", quoted=True)
            return f"{quote} {body} {quote}"
        fmt = schema.get("format")
        if isinstance(fmt, str) and fmt in FORMATS:
            return f"{quote} {format_rule(self._rules, fmt)} {quote}"
        lo, hi = _bounds(schema, path, "minLength", "maxLength")
        if (lo, hi) == (0, None):
            return json_rule(self._rules, "string")
        return f"{quote} {repeat(json_rule(self._rules, 'code-point'), lo, hi)} {quote}"

    def _int_bounds(self, schema: dict[str, Any], path: str) -> tuple[int | None, int | None]:
        lo: int | None = None
        hi: int | None = None
        for key in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
            value = schema.get(key)
            if value is None or isinstance(value, bool):
                continue  # draft-4 boolean exclusive flags are applied below
            if not isinstance(value, int | float) or not math.isfinite(value):
                raise SchemaError(f"{path}/{key}", f"{key} must be a finite number")
            exclusive = key.startswith("exclusive") or schema.get("exclusive" + key.capitalize()) is True
            if key.lower().endswith("minimum"):
                bound = math.floor(value) + 1 if exclusive else math.ceil(value)
                lo = bound if lo is None else max(lo, bound)
            else:
                bound = math.ceil(value) - 1 if exclusive else math.floor(value)
                hi = bound if hi is None else min(hi, bound)
        if lo is not None and hi is not None and lo > hi:
            raise Unsatisfiable(path, "integer bounds leave no value")
        return lo, hi

    def _object(self, schema: dict[str, Any], path: str, hint: str) -> str:
        props = schema.get("properties", {})
        if not isinstance(props, dict) or not all(isinstance(k, str) for k in props):
            raise SchemaError(f"{path}/properties", "properties must be an object of schemas")
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise SchemaError(f"{path}/required", "required must be a list of property names")
        extra_key = "additionalProperties" if "additionalProperties" in schema else "unevaluatedProperties"
        extra = schema.get(extra_key, not props)
        extra_path = f"{path}/{extra_key}"
        if not props and not required and (extra is True or extra == {}):
            return json_rule(self._rules, "object")
        extra_value = None
        if extra is not False:
            try:
                extra_value = self._rule_at(extra, extra_path, f"{hint}-additional", force=False)
            except Unsatisfiable:
                extra = False  # no value fits, so no additional property can be present
        members = [(name, sub, f"{path}/properties/{_escape_pointer(name)}") for name, sub in props.items()]
        for name in dict.fromkeys(required):
            if name not in props:
                if extra is False:
                    raise SchemaError(f"{path}/required", f"required property {name!r} is not allowed")
                members.append((name, extra, extra_path))
        ws = json_ws(self._rules)
        builder = ObjectBuilder(ws, lambda suffix, body: self._define(f"{hint}-{suffix}", (path, suffix), body))
        for name, sub, sub_path in members:
            try:
                value = self._rule_at(sub, sub_path, f"{hint}-{name}", force=False)
            except Unsatisfiable:
                if name in required:
                    raise
                continue  # an optional property that can never be present
            keys = dict.fromkeys(literal(json.dumps(name, ensure_ascii=a)) for a in (False, True))
            key = next(iter(keys)) if len(keys) == 1 else "( " + " | ".join(keys) + " )"
            kv = self._define(f"{hint}-{name}-kv", ("kv", path, name), f'{key} {ws} ":" {ws} {value}')
            builder.add(kv, required=name in required)
        if extra_value is not None:
            key = json_rule(self._rules, "string")
            if members:
                body = other_key_body([name for name, _, _ in members], json_rule(self._rules, "char"))
                key = self._define(f"{hint}-additional-key", ("extra-key", path), body)
            builder.extra = self._define(f"{hint}-additional-kv", ("kv", path),
                                         f'{key} {ws} ":" {ws} {extra_value}')
        return object_body(builder)

    def _array(self, schema: dict[str, Any], path: str, hint: str) -> str:
        lo, hi = _bounds(schema, path, "minItems", "maxItems")
        items = schema.get("items", True)
        prefix_key = "prefixItems"
        if isinstance(items, list):  # draft 4-2019 tuple form
            prefix_key, prefix, items = "items", items, schema.get("additionalItems", True)
        else:
            prefix = schema.get("prefixItems", [])
        if not isinstance(prefix, list):
            raise SchemaError(f"{path}/{prefix_key}", f"{prefix_key} must be a list of schemas")
        if not prefix and (items is True or items == {}) and (lo, hi) == (0, None):
            return json_rule(self._rules, "array")
        names: list[str] = []
        rest = None
        try:  # an element schema nothing matches caps the length at its position
            for i, p in enumerate(prefix):
                names.append(self._rule_at(p, f"{path}/{prefix_key}/{i}", f"{hint}-{i}", force=False))
            if items is not False:
                rest_key = "additionalItems" if prefix_key == "items" else "items"
                rest = self._rule_at(items, f"{path}/{rest_key}", f"{hint}-item", force=False)
        except Unsatisfiable:
            if lo > len(names):
                raise
        if rest is None and lo > len(names):
            raise Unsatisfiable(path, f"minItems {lo} exceeds the {len(names)} allowed items")
        return array_body(json_ws(self._rules), names, rest, lo, hi)

    # ---------------------------------------------------------------------------- raw string values
    def _raw(self, schema: Any, path: str, hint: str, seen: frozenset[str]) -> str | None:
        schema = self._check(schema, path)
        if self._needs_merge(schema):
            return self._raw(self._merged(schema, path), f"{path}/allOf", hint, seen)
        if "$ref" in schema:
            target, target_path = self._resolve(schema["$ref"], f"{path}/$ref")
            if target_path in seen:
                raise SchemaError(f"{path}/$ref", "recursive $ref in a raw string schema")
            return self._raw(target, target_path, hint, seen | {target_path})
        for key in ("anyOf", "oneOf"):
            if key in schema:
                exprs = self._alternatives(schema[key], f"{path}/{key}", hint,
                                           lambda alt, p, h: self._raw(alt, p, h, seen))
                if any(e is None for e in exprs):
                    return None  # one alternative is any text
                return self._raw_rule(hint, path, " | ".join(dict.fromkeys(e for e in exprs if e)))
        types = self._types(schema, path) if "type" in schema else []
        if types and "string" not in types:
            raise SchemaError(f"{path}/type", "a raw string value needs a string-typed schema")
        if "const" in schema or "enum" in schema:
            values = [schema["const"]] if "const" in schema else schema["enum"]
            if not isinstance(values, list) or not values:
                raise SchemaError(f"{path}/enum", "enum must be a non-empty list")
            texts = [v if isinstance(v, str) else canonical_json(v, path) for v in values
                     if isinstance(v, str) or not types]
            if not texts:
                raise SchemaError(f"{path}/enum", "no enum value is a string")
            return self._raw_rule(hint, path, " | ".join(dict.fromkeys(literal(t) for t in texts)))
        if "pattern" in schema:
            return regex_to_gbnf(schema["pattern"], self._rules, f"{hint}-pattern",
                                 path=f"{path}/pattern", quoted=False)
        fmt = schema.get("format")
        if isinstance(fmt, str) and fmt in FORMATS:
            return format_rule(self._rules, fmt)
        lo, hi = _bounds(schema, path, "minLength", "maxLength")
        if (lo, hi) == (0, None):
            return None
        return self._raw_rule(hint, path, repeat(json_rule(self._rules, "raw-char"), lo, hi))

    def _raw_rule(self, hint: str, path: str, body: str) -> str:
        return self._define(hint, ("raw", path), body)


def resolve_local_ref(root: Any, ref: str) -> Any:
    """The sub-schema a local ``$ref`` (``#``, ``#/$defs/Item``, percent-encoded tokens, array indices) names in
    ``root``, or None when it is not a local JSON pointer or names nothing."""
    if not ref.startswith("#"):
        return None
    pointer = urllib.parse.unquote(ref[1:])
    if pointer and not pointer.startswith("/"):
        return None  # an anchor, not a pointer
    node = root
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


def _is_type(value: Any, t: str) -> bool:
    if t == "null":
        return value is None
    if t == "boolean":
        return isinstance(value, bool)
    if t == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer())
    if t == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if t == "string":
        return isinstance(value, str)
    if t == "array":
        return isinstance(value, list)
    return isinstance(value, dict)
