"""Grammar parsers for Python literals constrained by a JSON schema (pythonic keyword-argument calls).

The JSON-schema converter writes grammars for JSON text; a model that calls tools Python-style writes
``city='Paris', days=2, flags=[True, None]`` instead. This module maps a parameter schema onto PEG nodes that accept
the *Python* spelling of the values the schema allows, so the same graph yields the GBNF and the Lark grammar:

* ``integer``/``number``: the converter's JSON number grammar (JSON numbers are Python literals), bounds included;
* ``boolean``/``null``: ``True``/``False`` and ``None`` — or JSON's ``true``/``false``/``null``, or either spelling,
  as the template renders them (``keywords``);
* ``string``: ``"..."`` or ``'...'`` with Python escapes; ``minLength``/``maxLength`` count characters (``\\n``
  counts as one); ``pattern`` and the known ``format`` values go through the converter's raw-string grammar between the
  quotes (a pattern that admits the quote character itself can then end the literal early);
* ``enum``/``const``: exactly the listed values, strings in either quote style;
* arrays (``items``, ``minItems``/``maxItems``) as lists, objects as dicts with quoted keys, members in schema order
  (required ones present, optional ones skippable) like the JSON converter; ``anyOf``/``oneOf``/type lists as
  alternatives; local ``$ref`` targets as (possibly recursive) rules; ``allOf`` merged as the converter merges it.

Whatever the schema says beyond that (``not``, ``prefixItems``, remote ``$ref`` ...) falls back to any well-formed
Python literal: a constraint we cannot express must not reject values the schema allows, and an unconstrained
literal still parses. Like the JSON converter, members follow the schema's order (what models write). An object
that declares ``properties`` (even none) allows no other keys unless ``additionalProperties`` says so: a tool whose
schema lists its arguments takes no others.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from .. import peg as p
from ..errors import SchemaError
from ..parser.schema_types import accepts_string
from ..peg.lowering.json_schema import resolve_local_ref
from ..peg.lowering.schema_formats import FORMATS
from ..peg.lowering.schema_merge import ANNOTATIONS, merge_schemas
from .common import rule_safe

__all__ = ["PythonLiteralGrammar", "python_string_literal"]

_QUOTES = ('"', "'")
_NUMBER_KEYS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_TYPE_HINTS = (
    ("object", ("properties", "required", "additionalProperties")),
    ("array", ("items", "minItems", "maxItems")),
    ("string", ("minLength", "maxLength", "pattern", "format")),
)
_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: With more optional members than this, the "rest of the members" tails become rules (inlined, every skippable
#: member would repeat all later ones: a quadratic grammar). The JSON converter uses the same threshold.
_INLINE_OPTIONAL = 3


def python_string_literal(text: str, quote: str) -> str:
    """The Python literal for ``text`` in ``quote`` quotes, escaping only what must be escaped (the spelling a model
    writes; ``repr`` would pick the quote itself)."""
    body = []
    for ch in text:
        if ch in _ESCAPES:
            body.append(_ESCAPES[ch])
        elif ch == quote:
            body.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            body.append(f"\\x{ord(ch):02x}")
        else:
            body.append(ch)
    return quote + "".join(body) + quote


def _string_char(quote: str) -> p.Parser:
    """One character of a ``quote``-delimited Python string: anything but the quote or a backslash, or an escape."""
    return p.choice(p.chars(f"[^{quote}\\\\]", 1, 1), p.literal("\\") + p.any_char())


def _sep() -> p.Parser:
    return p.space() + "," + p.space()


def _spaces() -> p.Parser:
    """The separator of keyword arguments a template writes without commas (``f(a=1 b=2)``)."""
    return p.chars("[ \t]", 1)


def _raw_string(quote: str) -> p.Parser:
    """A string as a template writes it that escapes nothing (``"Q3 "sync" review"``, ``'it's'``), as the parser
    reads it (``python_literals._loose_string``): it ends at the quote the end of its argument follows, so

    * a quote inside it is followed by something other than what ends an argument: not ``)``, not a ``,`` or spaces
      then a keyword and ``=`` (``"He said "hi", then left"``); the last quotes close it (``'a 'b''``);
    * a ``)`` inside it is not the end of the call: no line end, ``]``, ``;``, backtick, ``<`` or ``,`` follows it
      (``"f(x) is"``, not ``"see f(x)<|tool_call_end|>``);
    * a backslash escapes the character after it, as in any Python string (``"a\\"`` is no string's end)."""
    q = quote
    escape = p.literal("\\") + p.any_char()

    def char(excluded: str) -> p.Parser:
        """One character that is none of ``excluded`` (nor the quote, a backslash or a ``)``), or an escape."""
        return p.choice(p.chars(f"[^{excluded}{q}\\\\)]", 1, 1), escape)

    name = p.chars("[a-zA-Z_]", 1, 1) + p.chars("[a-zA-Z0-9_]", 0)
    # a word that "=" does not follow: no next argument
    not_keyword = name + p.choice(p.chars("[ \t]", 1) + char("= \t\r\n"), char("=a-zA-Z0-9_ \t\r\n"))
    after_comma = p.choice(char("a-zA-Z_ \t\r\n"), not_keyword)
    comma = "," + p.chars("[ \t]", 0) + after_comma
    quotes = p.chars(f"[{q}]", 1)
    spaces = p.chars("[ \t]", 1)
    inner = quotes + p.choice(
        char(", \t\r\n"),
        comma,
        spaces + p.choice(char(",a-zA-Z_ \t\r\n"), not_keyword, comma),
    )
    # (an inner quote, then a word the closing quote follows: `"Q3 "sync" review"`, `"said "hi", ok"`)
    last_word = quotes + p.choice(spaces, "," + p.chars("[ \t]", 0)) + name
    paren = p.chars("[)]", 1) + p.chars("[ \t]", 0)
    unit = p.choice(char(""), inner, paren + p.choice(char("\r\n\\];`<, \t"), inner))
    return q + p.zero_or_more(unit) + p.optional(p.choice(paren, last_word)) + quotes


def _text_limits(schema: Any) -> bool:
    """Whether a string schema says more than "a string" (values, a pattern, a format, lengths)."""
    return isinstance(schema, dict) and any(
        key in schema for key in ("enum", "const", "pattern", "format", "minLength", "maxLength")
    )


def _sequence_of(item: p.Parser, lo: int, hi: int | None) -> p.Parser:
    """``lo``..``hi`` comma-separated ``item``s (``hi`` None: unbounded)."""
    if hi == 0:
        return p.eps()
    more = p.repeat(_sep() + item, max(lo - 1, 0), -1 if hi is None else hi - 1)
    return item + more if lo else p.optional(item + more)


class PythonLiteralGrammar:
    """Builds the grammar parsers for one tool's parameters.

    ``root`` is the parameter schema (the document local ``$ref``s point into) and ``name`` the rule-name prefix.
    ``taken`` holds the rule names already used in the grammar (shared by the builders of one grammar, and
    updated): a graph must not define one name twice, and distinct names can sanitize alike (``a-b``, ``a_b``).
    """

    def __init__(
        self,
        root: dict[str, Any],
        name: str,
        taken: set[str] | None = None,
        *,
        keywords: str = "python",
        bare: bool = False,
        raw: str = "",
        spaced: bool = False,
    ) -> None:
        self._root = root
        self._keywords = keywords  # "python", "json" or "both"
        self._flavor = "python" if keywords == "python" else "pythonic"
        self._bare = bare  # top-level string arguments are written unquoted (Gemma 3n)
        self._raw = raw  # the quote of top-level strings written without escapes (LFM2.5-VL), or ""
        self._spaced = spaced  # keyword arguments are separated by whitespace, not commas (`f(a=1 b=2)`)
        self._taken = set() if taken is None else taken
        self._name = self.unique(name)
        self._refs: dict[str, str] = {}  # local $ref target -> its rule's name (the rule exists or is being built)
        self._merging: set[str] = set()  # $ref targets being inlined into an allOf merge (a cycle: give up there)
        self._chain: list[str] = []  # $ref targets entered since the last token ("[", a key ...) was written

    @property
    def name(self) -> str:
        """The rule-name prefix actually used (``name``, made unique)."""
        return self._name

    def unique(self, name: str) -> str:
        """A rule name not used yet in this grammar, based on ``name``; it is taken from now on."""
        base = rule_safe(name)
        candidate, counter = base, 1
        while candidate in self._taken:
            counter += 1
            candidate = f"{base}-{counter}"
        self._taken.add(candidate)
        return candidate

    def _rule(self, name: str, build: Callable[[str], p.Parser]) -> p.Parser:
        """A uniquely named rule whose body ``build(rule_name)`` returns: a list item or an object member, which
        something written precedes (so a ``$ref`` cycle through it is real recursion)."""
        rule = self.unique(name)
        saved, self._chain = self._chain, []
        try:
            return p.rule(rule, build(rule))
        finally:
            self._chain = saved

    # ------------------------------------------------------------------------------------------------ public API
    def keyword_arguments(self) -> p.Parser | None:
        """``name=value, ...`` for the root object schema: the arguments of a Python call (None: it takes none)."""
        members, extra = self._members(self._root, self._name, key=self._keyword, top=True)
        if not members and extra is None:
            return None
        identifier = p.chars("[a-zA-Z_]", 1, 1) + p.chars("[a-zA-Z0-9_]", 0)
        extra_kv = None if extra is None else identifier + p.space() + "=" + p.space() + extra
        return self._comma_list(members, extra_kv, self._name, _spaces if self._spaced else _sep)

    def value(self, schema: Any, name: str) -> p.Parser:
        """A Python literal valid under ``schema``; ``name`` names its rules."""
        if not isinstance(schema, dict) or not schema:
            return self._any()  # true, {} (anything) or a schema we cannot read
        if "$ref" in schema:
            return self._ref(schema, name)
        if "allOf" in schema:
            return self._all_of(schema, name)
        for key in ("anyOf", "oneOf"):  # oneOf's exclusivity is not enforced (nor is it by the JSON converter)
            alternatives = schema.get(key)
            if isinstance(alternatives, list) and alternatives:
                rest = {k: v for k, v in schema.items() if k != key}
                if not _constrains(rest):
                    return p.choice(*(self.value(alt, f"{name}-{i}") for i, alt in enumerate(alternatives)))
                # Keywords beside the alternatives apply to each of them.
                return p.choice(
                    *(self._all_of({"allOf": [rest, alt]}, f"{name}-{i}") for i, alt in enumerate(alternatives))
                )
        types = self._types(schema)
        if "const" in schema or isinstance(schema.get("enum"), list):
            values = [schema["const"]] if "const" in schema else schema["enum"]
            if types:
                values = [v for v in values if any(_has_type(v, t) for t in types)] or values
            return p.choice(*(self.literal(v) for v in values))
        if not types:
            return self._any()
        return p.choice(*(self._typed(schema, t, name) for t in types))

    def literal(self, value: Any) -> p.Parser:
        """Exactly ``value`` written as a Python literal (strings in either quote style, any spacing)."""
        if value is None:
            return self._keyword_literal("None")
        if isinstance(value, bool):
            return self._keyword_literal(repr(value))
        if isinstance(value, int | float):
            return p.literal(json.dumps(value))  # a JSON number is a Python number
        if isinstance(value, str):
            return p.choice(*map(p.literal, dict.fromkeys(python_string_literal(value, q) for q in _QUOTES)))
        if isinstance(value, list):
            items = [self.literal(v) for v in value]
            return "[" + p.space() + (_join(items) if items else p.eps()) + p.space() + "]"
        if isinstance(value, dict):
            pairs = [self.literal(str(k)) + p.space() + ":" + p.space() + self.literal(v) for k, v in value.items()]
            return "{" + p.space() + (_join(pairs) if pairs else p.eps()) + p.space() + "}"
        return self._any()

    # ------------------------------------------------------------------------------------------------- internals
    def _any(self) -> p.Parser:
        """Any literal in this grammar's spelling."""
        return p.json(self._flavor)

    def _keyword_literal(self, word: str) -> p.Parser:
        """``True``/``False``/``None`` in the spelling the template uses."""
        json_word = _JSON_KEYWORDS[word]
        if self._keywords == "json":
            return p.literal(json_word)
        if self._keywords == "both":
            return p.choice(word, json_word)
        return p.literal(word)

    def _bare_string(self, schema: Any, name: str) -> p.Parser | None:
        """A top-level string argument written unquoted (``city=Paris``): any text without ``,``, ``)`` or a line
        break, as enum/const values, or under the pattern/format/length limits; None if no string is allowed."""
        if not accepts_string(schema):
            return None
        char = p.chars(_BARE_CHAR, 1, 1)
        values = [schema["const"]] if "const" in schema else schema.get("enum")
        if isinstance(values, list):
            texts = [v for v in values if isinstance(v, str) and v and not _BARE_STOP.search(v)]
            return p.choice(*map(p.literal, texts)) if texts else None
        pattern, fmt = schema.get("pattern"), schema.get("format")
        if isinstance(pattern, str) or (isinstance(fmt, str) and fmt in FORMATS):
            raw = {k: schema[k] for k in ("pattern", "format") if k in schema}
            return p.schema(p.chars(_BARE_CHAR, 1), name, {"type": "string", **raw}, raw=True)
        lo, hi = _count(schema, "minLength") or 0, _count(schema, "maxLength")
        if lo or hi is not None:
            return p.repeat(char, lo, -1 if hi is None else hi)
        return p.optional(p.chars(_BARE_FIRST, 1, 1) + p.chars(_BARE_CHAR, 0))

    def _typed(self, schema: dict[str, Any], kind: str, name: str) -> p.Parser:
        if kind in ("integer", "number"):
            bounds = {k: schema[k] for k in _NUMBER_KEYS if k in schema}
            return p.schema(p.json_number(), name, {"type": kind, **bounds})
        if kind == "boolean":
            return p.choice(self._keyword_literal("True"), self._keyword_literal("False"))
        if kind == "null":
            return self._keyword_literal("None")
        if kind == "string":
            return self._string(schema, name)
        if kind == "array":
            return self._array(schema, name)
        if kind == "object":
            if (
                "properties" not in schema
                and not schema.get("required")
                and schema.get("additionalProperties", True) in (True, {})
            ):
                return p.json_object(self._flavor)  # any dict
            members, extra = self._members(schema, name, key=self._dict_key)
            extra_kv = None if extra is None else p.json_string(self._flavor) + p.space() + ":" + p.space() + extra
            body = self._comma_list(members, extra_kv, name)
            return "{" + p.space() + body + p.space() + "}"
        return self._any()

    def _types(self, schema: dict[str, Any]) -> list[str]:
        declared = schema.get("type")
        if declared is None:
            types = [kind for kind, hints in _TYPE_HINTS if any(h in schema for h in hints)]
        else:
            types = [declared] if isinstance(declared, str) else list(declared) if isinstance(declared, list) else []
        if schema.get("nullable") is True and types and "null" not in types:
            types.append("null")
        if "number" in types and "integer" in types:
            types.remove("integer")
        return list(dict.fromkeys(types))

    def _string(self, schema: dict[str, Any], name: str) -> p.Parser:
        pattern, fmt = schema.get("pattern"), schema.get("format")
        if isinstance(pattern, str) or (isinstance(fmt, str) and fmt in FORMATS):
            raw = {k: schema[k] for k in ("pattern", "format") if k in schema}
            # The raw-string grammar of the pattern/format between the quotes; until(q) + q parses it.
            return p.choice(*(q + p.schema(p.until(q), name, {"type": "string", **raw}, raw=True) + q for q in _QUOTES))
        lo, hi = _count(schema, "minLength") or 0, _count(schema, "maxLength")
        if lo == 0 and hi is None:
            return p.json_string(self._flavor)
        return p.choice(*(q + p.repeat(_string_char(q), lo, -1 if hi is None else hi) + q for q in _QUOTES))

    def _array(self, schema: dict[str, Any], name: str) -> p.Parser:
        items = schema.get("items", True)
        if "prefixItems" in schema or isinstance(items, list) or items is False:
            return p.json_array(self._flavor)  # tuples: not worth a grammar of their own
        lo, hi = _count(schema, "minItems") or 0, _count(schema, "maxItems")
        if items in (True, {}) and lo == 0 and hi is None:
            return p.json_array(self._flavor)
        item = self._rule(f"{name}-item", lambda rule: self.value(items, rule))
        return "[" + p.space() + _sequence_of(item, lo, hi) + p.space() + "]"

    def _dict_key(self, key: str) -> p.Parser:
        return self.literal(key) + p.space() + ":" + p.space()

    def _keyword(self, key: str) -> p.Parser:
        return p.literal(key) + p.space() + "=" + p.space()

    def _members(
        self, schema: dict[str, Any], name: str, *, key: Callable[[str], p.Parser], top: bool = False
    ) -> tuple[list[tuple[p.Parser, bool]], p.Parser | None]:
        """The declared members (``key(name) value`` parsers, required flag) in schema order, and the value parser
        of additional members (None: no others allowed). ``top``: the members are a call's arguments (which may be
        bare strings)."""
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        required = [r for r in schema.get("required") or () if isinstance(r, str)]
        extra_schema = schema.get("additionalProperties", "properties" not in schema)
        extra = None
        if extra_schema is not False:
            extra = self._any() if extra_schema in (True, {}) else self.value(extra_schema, f"{name}-extra")
        members = []
        names = list(props) + [r for r in dict.fromkeys(required) if r not in props]
        for prop in names:
            sub = props.get(prop, extra_schema if isinstance(extra_schema, dict) else True)
            value = self._rule(f"{name}-{prop}", lambda rule, sub=sub: self._member_value(sub, rule, top))
            members.append((key(prop) + value, prop in required))
        return members, extra

    def _comma_list(
        self,
        members: list[tuple[p.Parser, bool]],
        extra: p.Parser | None,
        name: str,
        sep: Callable[[], p.Parser] = _sep,
    ) -> p.Parser:
        """Members in order, required ones present, optional ones skippable, then any number of ``extra`` ones,
        separated by commas (or by ``sep()``): a member is preceded by ``,`` exactly when something came before it."""
        chained = sum(not required for _, required in members) > _INLINE_OPTIONAL
        tails: dict[int, p.Parser] = {}

        def after(i: int) -> p.Parser:  # members from i on, something already written
            if i == len(members):
                return p.zero_or_more(sep() + extra) if extra is not None else p.eps()
            member, required = members[i]
            head = sep() + member if required else p.optional(sep() + member)
            return head + after_ref(i + 1)

        def after_ref(i: int) -> p.Parser:
            if not chained or i == len(members):
                return after(i)
            if i not in tails:
                tails[i] = self._rule(f"{name}-rest-{i}", lambda _: after(i))
            return tails[i]

        def first(i: int) -> p.Parser | None:  # members from i on, nothing written yet (None: nothing can be)
            if i == len(members):
                return None if extra is None else p.optional(extra + after(i))
            member, required = members[i]
            head = member + after_ref(i + 1)
            if required:
                return head
            rest = first(i + 1)
            return p.optional(head) if rest is None else p.choice(head, rest)

        body = first(0)
        return p.eps() if body is None else body

    def _member_value(self, schema: Any, name: str, top: bool) -> p.Parser:
        value = self.value(schema, name)
        bare = self._bare_string(schema, f"{name}-bare") if top and self._bare else None
        if top and self._raw and bare is None and accepts_string(schema) and not _text_limits(schema):
            bare = _raw_string(self._raw)
        return value if bare is None else p.choice(value, bare)

    def _ref(self, schema: dict[str, Any], name: str) -> p.Parser:
        ref = schema["$ref"]
        target = resolve_local_ref(self._root, ref) if isinstance(ref, str) else None
        if target is None:
            return self._any()  # remote or broken reference: any value
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        if _constrains(siblings):
            return self._all_of({"allOf": [schema]}, name)
        if ref in self._chain:
            return self._any()  # a cycle that never writes anything (A is A): it says nothing about values
        if ref in self._refs:
            return p.ref(self._refs[ref])  # the rule exists (or is being built: recursion)
        rule = self.unique(f"{self._name}-ref-{ref}")
        self._refs[ref] = rule
        self._chain.append(ref)
        try:
            return p.rule(rule, self.value(target, rule))
        finally:
            self._chain.pop()

    def _all_of(self, schema: dict[str, Any], name: str) -> p.Parser:
        """``allOf`` (with the schema's own keywords as one more member) merged into one schema, like the JSON
        converter does; members it cannot intersect leave the value unconstrained."""
        parts = [{k: v for k, v in schema.items() if k != "allOf"}, *(schema.get("allOf") or [])]
        resolved = []
        inlined = set()
        for part in parts:
            while isinstance(part, dict) and isinstance(part.get("$ref"), str):
                ref = part["$ref"]
                target = resolve_local_ref(self._root, ref)
                if target is None or ref in self._merging or ref in inlined:
                    return self._any()  # unknown target, or a cycle of merges
                inlined.add(ref)
                part = {**target, **{k: v for k, v in part.items() if k != "$ref"}}
            if not isinstance(part, dict):
                return self._any()
            resolved.append((part, "#"))
        try:
            merged = merge_schemas(resolved, "#")
        except (SchemaError, RecursionError):
            return self._any()
        self._merging |= inlined
        try:
            return self.value(merged, name)
        finally:
            self._merging -= inlined


_JSON_KEYWORDS = {"True": "true", "False": "false", "None": "null"}
# Unquoted strings: no quote first (that is a quoted literal), then anything up to the argument's end.
_BARE_CHAR = "[^,)\\n]"
_BARE_FIRST = "[^,)\\n\"']"
_BARE_STOP = re.compile(r"[,)\n]")


def _constrains(schema: dict[str, Any]) -> bool:
    """Whether ``schema`` has keywords that limit values (annotations and ``x-`` extensions do not)."""
    return any(k not in ANNOTATIONS and not k.startswith("x-") for k in schema)


def _join(items: list[p.Parser]) -> p.Parser:
    out = items[0]
    for item in items[1:]:
        out = out + _sep() + item
    return out


def _count(schema: dict[str, Any], key: str) -> int | None:
    value = schema.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _has_type(value: Any, kind: str) -> bool:
    checks: dict[str, Any] = {
        "null": lambda v: v is None,
        "boolean": lambda v: isinstance(v, bool),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "string": lambda v: isinstance(v, str),
        "array": lambda v: isinstance(v, list),
        "object": lambda v: isinstance(v, dict),
    }
    check = checks.get(kind)
    return check is None or bool(check(value))
