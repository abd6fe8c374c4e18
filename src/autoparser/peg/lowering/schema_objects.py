"""GBNF bodies for JSON objects and arrays with per-member constraints.

Objects: members in schema order, required ones mandatory, optional ones skippable, additional ones
last. Commas are the hard part: a member is preceded by ``,`` exactly when something came before it,
so the body is "first present member, then the rest each with a leading separator".

Arrays: positional (``prefixItems``) elements, then repeated ``items``, under ``minItems``/``maxItems``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from .gbnf_syntax import literal
from .regex_charsets import MUST_ESCAPE, char_class, complement, normalize
from .schema_formats import repeat

__all__ = ["ObjectBuilder", "array_body", "object_body", "other_key_body"]


#: With more optional members than this, the "rest of the object" tails become rules of their own:
#: inlined, every skippable member would repeat all later ones (quadratic grammar size).
_INLINE_OPTIONAL = 3


@dataclass
class ObjectBuilder:
    """Collects the key/value rules of an object schema; ``extra`` is the additional-property rule.

    ``define(suffix, body)`` creates a helper rule for the object and returns its name.
    """

    ws: str
    define: Callable[[str, str], str]
    members: list[tuple[str, bool]] = field(default_factory=list)
    extra: str | None = None

    def add(self, kv_rule: str, *, required: bool) -> None:
        self.members.append((kv_rule, required))

    @property
    def sep(self) -> str:
        return f'{self.ws} "," {self.ws}'

    @property
    def chained(self) -> bool:
        return sum(not req for _, req in self.members) > _INLINE_OPTIONAL

    def after(self, start: int) -> str:
        """Members from ``start`` on when something was already written (each gets a separator)."""
        if start == len(self.members):
            return f"( {self.sep} {self.extra} )*" if self.extra else ""
        kv, required = self.members[start]
        head = f"{self.sep} {kv}" if required else f"( {self.sep} {kv} )?"
        return f"{head} {self.after_ref(start + 1)}".rstrip()

    def after_ref(self, start: int) -> str:
        body = self.after(start)
        if not self.chained or start == len(self.members) or " " not in body:
            return body
        return self.define(f"rest-{start}", body)

    def first(self, start: int) -> str:
        """Members from ``start`` on when nothing was written yet ('' = nothing may be written)."""
        if start == len(self.members):
            return f"( {self.extra} ( {self.sep} {self.extra} )* )?" if self.extra else ""
        kv, required = self.members[start]
        head = f"{kv} {self.after_ref(start + 1)}".rstrip()
        if required:
            return head
        rest = self.first(start + 1)
        return f"( {head} | {rest} )" if rest else f"( {head} )?"


def object_body(builder: ObjectBuilder) -> str:
    """``{...}`` around the builder's members."""
    inner = builder.first(0)
    ws = builder.ws
    return f'"{{" {ws} {inner} {ws} "}}"' if inner else f'"{{" {ws} "}}"'


def array_body(ws: str, prefix: list[str], rest: str | None, lo: int, hi: int | None) -> str:
    """``[...]`` with the positional rules ``prefix``, then ``rest`` items (None: no more), ``lo..hi`` long."""
    sep = f'{ws} "," {ws}'

    def tail(j: int) -> str:  # elements from position j on; j > 0 means one was already written
        if hi is not None and j >= hi:
            return ""
        if j < len(prefix):
            inner = f"{sep} {prefix[j]}" if j else prefix[j]
            more = tail(j + 1)
            piece = f"{inner} {more}" if more else inner
            return piece if j < lo else f"( {piece} )?"
        if rest is None:
            return ""
        need = max(lo - j, 0)
        room = None if hi is None else hi - j
        if j:
            return repeat(f"( {sep} {rest} )", need, room)
        first = f"{rest} {repeat(f'( {sep} {rest} )', max(need - 1, 0), None if room is None else room - 1)}"
        first = first.removesuffix(' ""').rstrip()
        return first if need else f"( {first} )?"

    elems = tail(0)
    if elems in ("", '""'):
        return f'"[" {ws} "]"'
    return f'"[" {ws} {elems} {ws} "]"'


def _json_char_except(chars: set[str]) -> str:
    """One JSON string character (or escape) whose first code unit is not in ``chars``."""
    excluded = normalize([(ord(c), ord(c)) for c in chars] + list(MUST_ESCAPE))
    escape = '"\\\\" ( ["\\\\bfnrt] | "u" ( "00" [01] [0-9a-fA-F] | "007" [fF] ) )'  # as schema_formats' "char"
    return f"( {char_class(complement(excluded))} | {escape} )"


def other_key_body(names: list[str], char_rule: str) -> str:
    """A JSON string that is none of ``names`` (in canonical encoding) — the key of an extra property,
    so an additional property cannot smuggle in a declared name with a value of the wrong shape.
    ``char_rule`` is the generic JSON string character rule.

    Names that need JSON escapes are not excluded (the escape forms would need a full decoder).
    """
    trie: dict[str, dict] = {}
    for name in names:
        encoded = json.dumps(name, ensure_ascii=False)[1:-1]
        if "\\" in encoded:
            continue
        node = trie
        for ch in encoded:
            node = node.setdefault(ch, {})
        node[""] = {}  # end-of-name marker

    def not_in(node: dict[str, dict]) -> str:
        children = {ch: sub for ch, sub in node.items() if ch}
        options = [] if "" in node else ['""']
        options.append(f"{_json_char_except(set(children))} {char_rule}*")
        options += [f"{literal(ch)} {not_in(sub)}" for ch, sub in children.items()]
        return "( " + " | ".join(options) + " )"

    quote = literal('"')
    return f"{quote} {not_in(trie)} {quote}"
