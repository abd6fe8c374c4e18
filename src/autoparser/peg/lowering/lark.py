"""Lowering a PEG node graph to llguidance's Lark dialect.

llguidance (the constrained-decoding engine behind vLLM, SGLang and outlines) reads GBNF too, but its native
dialect is Lark, which has two things GBNF lacks and which make grammars both stricter and faster there:

* ``%json {...}`` — a JSON schema enforced natively, with llguidance's own JSON lexer. A ``schema()`` node or
  generic JSON leaf that only admits scalars (a string, number, boolean or null) is written this way; objects and
  arrays are not (see below);
* lexemes with a ``stop`` string — ``name[stop="D"]: /(?s:.*)/`` is "any text up to the first ``D``, then ``D``",
  one lazy lexeme instead of a character-by-character exclusion pattern. ``until(D)`` directly followed by a
  literal that starts with ``D`` is fused into one (grammar builders write their parsers that way); an until of
  several delimiters too, its text holding none of them (``& ~/(?s:.*(?:D1|D2).*)/``), where nothing optional comes
  before it; and free text that may run to the end of the output or be followed by the calls
  (``until(D1..Dn) optional(Di ...)``) is ``(stop-lexeme ... | text-to-the-end)``. llguidance lexes greedily and
  never backs up: free text read a character per lexeme, with ``Di`` one lexeme after it, would be held to ``Di``
  once it starts like it (``[To do]`` before ``[TOOL_CALLS]``). An optional marker the text may not hold may
  come first (``(space </think>)? space until(..</think>..) calls?``, a reasoning end repeated after a prompt that
  closed the block): it becomes one lexeme with the whitespace before it, so the text after it is still one.

The text starts with the ``%llguidance {}`` header, which tells llguidance (and tools that sniff the dialect)
that this is its Lark dialect rather than plain Lark.

``%json`` is made to describe the same values as the GBNF of the same schema (:mod:`.json_schema`): an object
schema that lists ``properties`` and says nothing about others gets ``"additionalProperties": false`` (JSON Schema's
default would let the model invent keys, which GBNF does not). A scalar holds no whitespace between tokens, so it
gets none at all (``whitespace_flexible: false``): left to llguidance's default, its JSON lexer lets whitespace of
any length lead a value where the grammar around it is ambiguous (a repeated call section), and unbounded whitespace
is how constrained decoding loops. An object or array would need llguidance's ``whitespace_pattern`` between its
tokens, and that lexer lets the pattern lead the value too where the grammar before it is ambiguous (optional tagged
arguments, a repeated section): 64 more whitespace characters than GBNF allows there, and no GBNF can say "where
ambiguous". So objects and arrays are written with the JSON converter's GBNF rules, spelled in Lark like the rest,
and both dialects bound every run of whitespace alike.

Everything else is lowered exactly as for GBNF (:class:`~.gbnf.GrammarWriter`, so both grammars describe the same
language by construction) and then spelled in Lark: rules become lowercase ``name: body`` lines, string literals
JSON-style strings, character classes one-character regexes. Repetition stays at the grammar level
(``/[0-9]/+``, not ``/[0-9]+/``), because llguidance lexes greedily and a multi-character regex lexeme could not
stop early where the context-free reading needs it to.
"""

from __future__ import annotations

import functools
import json
import re

from ...errors import GrammarError
from ..nodes import Choice, Json, Literal, Parser, Repeat, Schema, Sequence, Space, Until
from .gbnf import ATOM, EMPTY, JSON_KIND_SCHEMAS, SEQ, Expr, GrammarWriter
from .gbnf_syntax import WS_REGEX, RuleSet, rule_references

__all__ = ["HEADER", "LarkWriter", "gbnf_body_to_lark", "strict_schema", "to_lark"]

_ANY_TEXT = "(?s:.*)"
HEADER = "%llguidance {}"
_JSON_OPTIONS = {"whitespace_pattern": WS_REGEX}
_SCALAR_OPTIONS = {"whitespace_flexible": False}
_SCALARS = ("string", "number", "integer", "boolean", "null")
_STOP = "%stop "  # body marker of a fused until+delimiter rule (only ever produced by LarkWriter)
_JSON = "%json "
_LEXEME = "%lexeme "  # body marker of a rule that is one regex lexeme (only ever produced by LarkWriter)


class LarkWriter(GrammarWriter):
    """:class:`GrammarWriter` with llguidance-native forms for JSON schemas and until-delimiter pairs."""

    def __init__(self, root: Parser) -> None:
        super().__init__(root)
        self.rules.reserve("start", ("lark-start",))  # Lark's entry rule; keep it away from parser rules
        # Whether the node being lowered starts where another path of the grammar may start too (the first item of
        # an optional part or of a choice's alternative). A stop lexeme there would compete with the other path's
        # lexemes, and llguidance's greedy lexer would keep extending it: ``(until(D) D)? text`` could then never
        # end without ``D``. Such an until stays an exclusion pattern, as in GBNF.
        self._contested = False

    def expr(self, node: Parser) -> Expr:
        match node:
            case Sequence(items=items):
                return self._sequence(items)
            case Schema(json_schema=schema, raw=False, name=name) if schema is not None and _scalar(schema):
                return self._json(schema, name)
            case Json(kind=kind, flavor="json") if _scalar(JSON_KIND_SCHEMAS[kind]):
                return self._json(JSON_KIND_SCHEMAS[kind], f"json-{kind}")
            case Choice() | Repeat(min=0):
                saved, self._contested = self._contested, True
                try:
                    return super().expr(node)
                finally:
                    self._contested = saved
        return super().expr(node)

    def rule_name(self, name: str) -> str:
        """A rule body is lowered once for every place that references it, so it is taken as uncontested."""
        saved, self._contested = self._contested, False
        try:
            return super().rule_name(name)
        finally:
            self._contested = saved

    def _sequence(self, items: tuple[Parser, ...]) -> Expr:
        """A sequence where ``until(D) [space] literal(D...)`` becomes a stop lexeme and the literal's rest (unless
        the until starts a contested position, see ``_contested``)."""
        contested = self._contested
        first_until = next((k for k, item in enumerate(items) if isinstance(item, Until)), None)
        if not contested and first_until:
            led = self._led_text_or_calls(items, first_until)
            if led is not None:
                return led
        parts: list[Expr] = []
        i = 0
        while i < len(items):
            at_start = contested and all(isinstance(item, Space) for item in items[:i])
            # (Only where nothing optional comes before it: a lexeme as long as free text would outrun the optional
            # part's own first lexeme, as at a contested start.)
            lone = all(isinstance(item, Literal) and item.text for item in items[:i])
            either = self._text_or_calls(items, i) if lone and not at_start else None
            if either is not None:
                parts.append(either)
                break
            fused = None if at_start else self._fuse_at(items, i, several=lone)
            if fused is None:
                self._contested = at_start
                try:
                    parts.append(self.expr(items[i]))
                finally:
                    self._contested = contested
                i += 1
                continue
            delimiter, body, rest, after = fused
            until = items[i].child if isinstance(items[i], Schema) else items[i]
            assert isinstance(until, Until)
            parts += [self._stop_rule(delimiter, body, until.delimiters), self.expr(rest)]
            i = after
            continue
        parts = [part for part in parts if part.prec != EMPTY]
        if not parts:
            return Expr("", EMPTY)
        if len(parts) == 1:
            return parts[0]
        return Expr(" ".join(part.wrapped(SEQ) for part in parts), SEQ)

    def _stop_rule(self, delimiter: str, body: str, delimiters: tuple[str, ...]) -> Expr:
        """A stop lexeme: text matching ``body`` up to the first ``delimiter`` (``""``: up to the end of the
        output), holding none of ``delimiters`` when there are several (llguidance's ``&`` and ``~`` on lexemes)."""
        excluded = sorted(set(delimiters)) if len(delimiters) > 1 or not delimiter else []
        key = ("stop", delimiter, body, tuple(excluded))
        hint = _hint(delimiter) if delimiter else "end"
        return Expr(self.rules.add(f"until-{hint}", _STOP + json.dumps([delimiter, body, excluded]), key), ATOM)

    def _text_or_calls(self, items: tuple[Parser, ...], i: int) -> Expr | None:
        """``until(D1..Dn) optional(space* literal(Di...) rest) space*`` (free text, then maybe the calls: a
        whole-output grammar) as ``stop(Di) rest | text-to-the-end``, both one lexeme: the calls after a stop
        lexeme, or text that holds no delimiter to the end of the output. Written with the until's own lexemes,
        llguidance (greedy, never backing up) would hold text that starts like the literal (``[To`` before
        ``[TOOL_CALLS]``) to the literal."""
        until, tail = items[i], items[i + 1 :]
        if not isinstance(until, Until) or not tail or not all(isinstance(t, Space) for t in tail[1:]):
            return None
        section = tail[0]
        if not (isinstance(section, Repeat) and section.min == 0 and section.max == 1):
            return None
        inner = section.child.items if isinstance(section.child, Sequence) else (section.child,)
        j = 0
        while j < len(inner) and isinstance(inner[j], Space):
            j += 1
        found = _after_delimiter(inner[j], until.delimiters) if j < len(inner) else None
        if found is None:
            return None
        delimiter, rest = found
        calls = [self._stop_rule(delimiter, _ANY_TEXT, until.delimiters), self.expr(rest)]
        calls += [self.expr(node) for node in (*inner[j + 1 :], *tail[1:])]
        calls = [part for part in calls if part.prec != EMPTY]
        text = self._stop_rule("", _ANY_TEXT, until.delimiters)
        return Expr("(" + " ".join(part.wrapped(SEQ) for part in calls) + " | " + text.text + ")", ATOM)

    def _led_text_or_calls(self, items: tuple[Parser, ...], i: int) -> Expr | None:
        """``[optional(space* literal(L))] space* until(..L..) optional(calls)`` (a whole-output grammar whose
        answer may follow a repeated reasoning end, ``L``, that its text may not hold) as ``LEAD? space*
        text-or-calls``, where ``LEAD`` is one lexeme: the whitespace and ``L`` together. Spelled with a
        whitespace lexeme per character and ``L`` after it, llguidance's greedy lexer would let the free text's
        lexeme outrun the whitespace before ``L`` (`` </think>`` read as text up to ``>``), and the free text
        could not be one lexeme, which it must be for text that starts like a call marker (``Hi <｜ ok.``)."""
        if i == 0 or not isinstance(items[i], Until):
            return None
        delimiters = items[i].delimiters
        lead: tuple[str, str] | None = None  # (its regex, the marker)
        for k, item in enumerate(items[:i]):
            if isinstance(item, Space):
                continue
            marker = _optional_marker(item) if k == 0 else None
            if marker is None or marker[1] not in delimiters:
                return None
            lead = (WS_REGEX if marker[0] else "") + _exact_regex(marker[1]), marker[1]
        either = self._text_or_calls(items, i)
        if either is None:
            return None
        spaces = [self.expr(item) for item in items[:i] if isinstance(item, Space)]
        parts = [*spaces, either]
        if lead:
            regex, text = lead
            name = self.rules.add(f"lead-{_hint(text)}", _LEXEME + regex, ("lexeme", regex))
            parts.insert(0, Expr(f"{name}?", ATOM))
        return Expr(" ".join(part.wrapped(SEQ) for part in parts), SEQ)

    def _fuse_at(
        self, items: tuple[Parser, ...], i: int, *, several: bool = False
    ) -> tuple[str, str, Parser, int] | None:
        """If ``items[i]`` is ``until(D)`` (or a raw string schema over it) followed, after optional ``space()``, by
        a literal starting with ``D``: ``(D, body regex, what remains of the literal, index after it)``. With
        ``several`` (nothing optional before the until, whose lexeme could otherwise outrun that part's own), an
        until of several delimiters fuses too, with the one the literal starts with; its text holds none of them.

        ``until(D) space D`` is ``until(D) D``: the text before ``D`` may end in whitespace either way. A raw string
        schema (enum, pattern, length...) becomes the lexeme's body regex, so the value is checked as one lexeme
        that ends at ``D`` (llguidance does not back up out of a half-matched ``D``)."""
        item, body = items[i], _ANY_TEXT
        if isinstance(item, Schema) and item.raw and isinstance(item.child, Until):
            body = self._raw_regex(item)
            item = item.child
        if body is None or not isinstance(item, Until):
            return None
        if len(item.delimiters) != 1 and (body != _ANY_TEXT or not several):
            return None
        j = i + 1
        while j < len(items) and isinstance(items[j], Space):
            j += 1
        if j == len(items):
            return None
        found = _after_delimiter(items[j], item.delimiters)
        if found is None:
            return None
        delimiter, rest = found
        if j > i + 1 and body != _ANY_TEXT:
            body = f"(?:{body}){WS_REGEX}"
        return delimiter, body, rest, j + 1

    def _raw_regex(self, node: Schema) -> str | None:
        """The regex of a raw string schema (any text when it constrains nothing), or None if not regular."""
        schema = node.json_schema
        if not isinstance(schema, dict):
            return _ANY_TEXT
        expr = self.converter.convert_raw_string(schema, node.name)
        return _ANY_TEXT if expr is None else gbnf_to_regex(expr, self.rules)

    def _json(self, schema: object, name: str) -> Expr:
        if isinstance(schema, dict):
            schema = strict_schema(schema)
            # Whitespace between tokens only where JSON may hold it, bounded; none in or before a scalar.
            schema["x-guidance"] = _SCALAR_OPTIONS if schema.get("type") in _SCALARS else _JSON_OPTIONS
        text = json.dumps(schema, ensure_ascii=False)
        return Expr(self.rules.add(name, _JSON + text, ("lark-json", text)), ATOM)

    def lark(self, *, lazy: bool = False) -> str:
        """The full Lark text (``start`` is the entry rule)."""
        root = self.lower(lazy=lazy)
        keep = self.rules.reachable([root], self._references)
        names = _lark_names(keep)
        lines = [HEADER, f"start: {names[root]}"]
        for name in sorted(keep):
            body = self.rules.body(name)
            if body.startswith(_STOP):
                stop, regex, excluded = json.loads(body[len(_STOP) :])
                lexeme = f"/{regex}/" + (f" & ~/{_containing(excluded)}/" if excluded else "")
                lines.append(f"{names[name]}[stop={_lark_string(stop)}]: {lexeme}")
            elif body.startswith(_LEXEME):
                lines.append(f"{names[name]}: /{body[len(_LEXEME) :]}/")
            elif body.startswith(_JSON):
                lines.append(f"{names[name]}: %json {body[len(_JSON) :]}")
            else:
                lines.append(f"{names[name]}: {gbnf_body_to_lark(body, names)}")
        return "\n".join(lines) + "\n"

    def _references(self, body: str) -> list[str]:
        """Rules a body references (%json, %stop and %lexeme bodies reference none)."""
        return [] if body.startswith((_STOP, _JSON, _LEXEME)) else rule_references(body)


#: Keywords whose values are schemas, or lists / maps of schemas, that :func:`strict_schema` walks into.
_SUBSCHEMA = ("items", "additionalItems", "additionalProperties", "unevaluatedProperties", "contains", "not")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "prefixItems", "items")
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions")


def _scalar(schema: object) -> bool:
    """Whether ``schema`` admits only scalars (strings, numbers, booleans, null): values with no whitespace
    between tokens, which ``%json`` reads exactly as GBNF does."""
    return isinstance(schema, dict) and schema.get("type") in _SCALARS


def strict_schema(schema: dict[str, object]) -> dict[str, object]:
    """``schema`` with ``"additionalProperties": false`` on every object schema that lists ``properties`` and does
    not say whether others are allowed: the GBNF converter's reading, so ``%json`` accepts the same objects.

    ``allOf`` members are left alone: there each member sees only its own properties, and a closed member would
    reject its siblings' (the GBNF converter merges the members first)."""
    out: dict[str, object] = dict(schema)
    props = schema.get("properties")
    if (
        isinstance(props, dict)
        and props
        and "additionalProperties" not in schema
        and "unevaluatedProperties" not in schema
    ):
        out["additionalProperties"] = False
    for key in _SUBSCHEMA:
        value = schema.get(key)
        if isinstance(value, dict):
            out[key] = strict_schema(value)
    for key in _SUBSCHEMA_LISTS:
        value = schema.get(key)
        if isinstance(value, list):
            out[key] = [strict_schema(v) if isinstance(v, dict) else v for v in value]
    for key in _SUBSCHEMA_MAPS:
        value = schema.get(key)
        if isinstance(value, dict):
            out[key] = {k: strict_schema(v) if isinstance(v, dict) else v for k, v in value.items()}
    return out


def _after_delimiter(node: Parser, delimiters: tuple[str, ...]) -> tuple[str, Parser] | None:
    """The delimiter ``node`` certainly starts with (the longest) and what follows it in ``node``, or None."""
    for delimiter in sorted(delimiters, key=len, reverse=True):
        rest = _strip_prefix(node, delimiter) if delimiter else None
        if rest is not None:
            return delimiter, rest
    return None


def _containing(texts: list[str]) -> str:
    """A regex for any text holding one of ``texts``."""
    return f"(?s:.*(?:{'|'.join(_exact_regex(t) for t in texts)}).*)"


def _exact_regex(text: str) -> str:
    """``text`` as a regex matching it exactly (every non-alphanumeric character by code point)."""
    return "".join(ch if ch.isalnum() and ch.isascii() else f"\\x{{{ord(ch):X}}}" for ch in text)


def _optional_marker(node: Parser) -> tuple[bool, str] | None:
    """For ``optional([space] literal(L))``: (whether whitespace leads, ``L``); else None."""
    if not (isinstance(node, Repeat) and node.min == 0 and node.max == 1):
        return None
    inner = node.child.items if isinstance(node.child, Sequence) else (node.child,)
    if len(inner) == 2 and isinstance(inner[0], Space) and isinstance(inner[1], Literal) and inner[1].text:
        return True, inner[1].text
    if len(inner) == 1 and isinstance(inner[0], Literal) and inner[0].text:
        return False, inner[0].text
    return None


def _strip_prefix(node: Parser, prefix: str) -> Parser | None:
    """``node`` without its leading ``prefix`` text, if it certainly starts with that literal text."""
    if isinstance(node, Literal) and node.text.startswith(prefix):
        return Literal(node.text[len(prefix) :])
    if isinstance(node, Sequence) and node.items:
        head = _strip_prefix(node.items[0], prefix)
        if head is not None:
            return Sequence((head, *node.items[1:]))
    return None


def _hint(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "delimiter"


def _lark_names(names: set[str]) -> dict[str, str]:
    """GBNF rule name -> Lark rule name: lowercase (uppercase names are terminals in Lark), collision-free."""
    mapping: dict[str, str] = {}
    taken = {"start"}
    for name in sorted(names):
        base = name.lower()
        candidate, counter = base, 1
        while candidate in taken:
            counter += 1
            candidate = f"{base}-{counter}"
        taken.add(candidate)
        mapping[name] = candidate
    return mapping


# ------------------------------------------------------------------------------------- GBNF -> Lark spelling
_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<cls>\[(?:[^\]\\]|\\.)*\])
  | (?P<name>[A-Za-z0-9-]+)
  | (?P<rep>\{[0-9]*(?:,[0-9]*)?\})
  | (?P<punct>[()|*+?])
  | (?P<dot>\.)
    """,
    re.VERBOSE,
)
_GBNF_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "[": "[", "]": "]"}


def _read(text: str, i: int) -> tuple[str, bool, int]:
    """One character of GBNF quoted/bracketed text at ``i``: (character, was it escaped, next index)."""
    ch = text[i]
    if ch != "\\":
        return ch, False, i + 1
    code = text[i + 1]
    width = {"x": 2, "u": 4, "U": 8}.get(code)
    if width:
        return chr(int(text[i + 2 : i + 2 + width], 16)), True, i + 2 + width
    if code in _GBNF_ESCAPES:
        return _GBNF_ESCAPES[code], True, i + 2
    raise GrammarError(f"unknown GBNF escape \\{code}")


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    chars: list[str] = []
    i = 0
    while i < len(text):
        ch, _, i = _read(text, i)
        chars.append(ch)
    return "".join(chars)


def _lark_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _regex_char(ch: str) -> str:
    """One character for a regex class: ASCII alphanumerics as-is, everything else by code point."""
    return ch if ch.isascii() and ch.isalnum() else f"\\x{{{ord(ch):X}}}"


def _lark_class(gbnf_class: str) -> str:
    """``[a-z\\x2D]`` -> ``/[a-z\\x{2D}]/``: a bare ``-`` between two characters is a range, an escaped one is not."""
    inner = gbnf_class[1:-1]
    negated = inner.startswith("^")
    i = 1 if negated else 0
    items: list[tuple[str, bool]] = []
    while i < len(inner):
        ch, escaped, i = _read(inner, i)
        items.append((ch, escaped))
    parts: list[str] = []
    k = 0
    while k < len(items):
        if k + 2 < len(items) and items[k + 1] == ("-", False):
            parts.append(f"{_regex_char(items[k][0])}-{_regex_char(items[k + 2][0])}")
            k += 3
        else:
            parts.append(_regex_char(items[k][0]))
            k += 1
    return "/[" + ("^" if negated else "") + "".join(parts) + "]/"


@functools.lru_cache(maxsize=4096)
def _spelled(kind: str, text: str) -> str:
    """A GBNF string or class token in Lark (cached: grammars repeat the same markers and classes)."""
    return _lark_string(_unescape(text[1:-1])) if kind == "string" else _lark_class(text)


def gbnf_body_to_lark(body: str, names: dict[str, str]) -> str:
    """Spell a GBNF rule body in Lark: same operators, Lark strings, one-character regex classes."""
    out: list[str] = []
    pos = 0
    for match in _TOKEN.finditer(body):
        if match.start() != pos:
            raise GrammarError(f"cannot spell GBNF in Lark at {body[pos : pos + 20]!r}")
        pos = match.end()
        kind, text = match.lastgroup, match.group()
        if kind == "ws":
            continue
        if kind == "string" or kind == "cls":
            out.append(_spelled(kind, text))
        elif kind == "name":
            out.append(names[text])
        elif kind == "dot":
            out.append("/(?s:.)/")
        elif kind == "rep" or text in "*+?":
            out[-1] += text  # postfix operators stay attached to their operand
        else:
            out.append(text)
    if pos != len(body):
        raise GrammarError(f"cannot spell GBNF in Lark at {body[pos : pos + 20]!r}")
    return " ".join(out)


def gbnf_to_regex(expr: str, rules: RuleSet, seen: frozenset[str] = frozenset()) -> str | None:
    """A regex (Rust / llguidance syntax) for a GBNF expression, inlining the rules it references; None when a
    rule is recursive (the language may not be regular). Every non-alphanumeric character is written by code
    point, so nothing needs escaping inside ``/.../``."""
    out: list[str] = []
    pos = 0
    while pos < len(expr):
        match = _TOKEN.match(expr, pos)
        if match is None:
            raise GrammarError(f"cannot read GBNF at {expr[pos : pos + 20]!r}")
        pos = match.end()
        kind, text = match.lastgroup, match.group()
        if kind == "ws":
            continue
        if kind == "string":
            out.append("(?:" + "".join(_regex_char(ch) for ch in _unescape(text[1:-1])) + ")")
        elif kind == "cls":
            out.append(_lark_class(text)[1:-1])
        elif kind == "name":
            if text in seen or text not in rules:
                return None
            inner = gbnf_to_regex(rules.body(text), rules, seen | {text})
            if inner is None:
                return None
            out.append(f"(?:{inner})")
        elif kind == "dot":
            out.append("(?s:.)")
        elif kind == "punct" and text in "(":
            out.append("(?:")
        else:
            out.append(text)
    return "".join(out)


def to_lark(parser: Parser, *, lazy: bool = False) -> str:
    """Lark grammar (llguidance dialect) for ``parser``; ``lazy`` as for :func:`~.gbnf.to_gbnf`."""
    return LarkWriter(parser).lark(lazy=lazy)
