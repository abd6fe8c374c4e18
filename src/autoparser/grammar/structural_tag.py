"""xgrammar structural tags for ``tool_choice="auto"``, lowered from the whole-output grammar's own parser graph.

A structural tag (xgrammar >= 0.2; vLLM's ``structured_outputs={"structural_tag": json.dumps(tag)}``) lets the
model write free text until a *trigger* word, then holds it to a *tag*: a literal ``begin``, a ``content`` format,
a literal ``end``. Engines that constrain from the first token (xgrammar in vLLM and SGLang) then leave the answer
free and constrain only the calls, with the tool's JSON schema handled natively.

**Which form.** xgrammar 0.2.x (the version vLLM 0.32 installs) takes ``{"type": "structural_tag", "format":
{...}}`` with formats ``const_string``, ``json_schema``, ``any_text``, ``grammar`` (EBNF), ``regex``, ``sequence``,
``or``, ``optional``/``star``/``plus``/``repeat``, ``tag``, ``triggered_tags`` and ``tags_with_separator``, among
others. The legacy ``{"structures": [...], "triggers": [...]}`` form (one JSON schema between a begin and an end,
any text around and between calls) is deprecated there, and it cannot say "the calls end the reply": text after a
call is something autoparser's parser keeps as content *with a warning*, so a tag that allows it would let the
model write output the parser cannot read cleanly. This module writes the new form only.

**How.** The whole-output grammar of a lazy request (:attr:`GrammarSpec.whole`) is ``lead + until(triggers) +
optional(section)``: the rest of a reasoning block (or an optional one), free text up to a trigger word, then
optionally the tool-call section. The structural tag is the same language, lowered node by node:

* ``lead`` becomes formats in a ``sequence`` (``until(D) D`` -> ``tag`` with ``any_text`` ending at ``D``);
* the free text and the section become one ``triggered_tags`` with ``stop_after_first``: the section is walked
  from its start through every branch (an optional section marker gives two) to its first literal, a trigger word;
  each distinct start (the word and the literals right after it) is a tag whose ``begin`` is that text;
* the rest of the section is the tag's ``content`` up to the last literal that something non-optional precedes
  (the tag's ``end``: a call's or the section's closing marker); what may follow it (more calls, whitespace)
  follows the ``triggered_tags`` in the sequence. The calls are the first tag and what follows it, so text between
  or after them is not allowed, exactly as in the grammar.

The tools are told apart inside a tag (an ``or`` over the tools' alternatives), not by one tag per tool: a
``begin`` is one string, but the grammar allows whitespace between a section marker and a tool's name, so a
per-tool begin would have to guess the template's layout (pretty-printed JSON defeats the guess), and where the
calls go on inside the tag (up to a section end) every tag would repeat every tool.

Nodes lower as: literal -> ``const_string``, whitespace -> ``regex`` of at most 64 characters, JSON under a
schema -> ``json_schema`` (closed objects, bounded whitespace, as the GBNF converter reads it), choice -> ``or``,
repetition -> ``optional``/``star``/``plus``/``repeat``; anything else (a raw string value under a schema, Python
literals, character classes) -> ``grammar`` holding autoparser's own GBNF for that node.

Where this does not fit, there is no tag and a reason says why: calls recognised by a regex (bare JSON calls,
gpt-oss, functionary v3.2), a section that starts with something other than a trigger word, a whole-output grammar
of another shape, or calls that repeat up to the end of the output with no closing literal for a tag to end on (a
tag whose content repeats needs a non-empty end in xgrammar 0.2). The result is the grammar's language or a subset
of it (two adjacent whitespace runs become one; where two ways into the section go on differently after their first
part, neither goes on), never wider.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .. import peg as p
from ..parser.schema_types import constrains_text
from ..peg.graph import describe, walk
from ..peg.lowering.gbnf import JSON_KIND_SCHEMAS
from ..peg.lowering.gbnf_syntax import MAX_SPACE, WS_REGEX
from ..peg.lowering.lark import strict_schema
from ..peg.nodes import (
    Atomic,
    Choice,
    Commit,
    Eps,
    Json,
    JsonNotKnownInvalid,
    Literal,
    Negate,
    Peek,
    Recover,
    Ref,
    Repeat,
    Rule,
    Schema,
    Space,
    Tag,
    Until,
)
from ..peg.nodes import Sequence as Seq

__all__ = ["build_structural_tag"]

Format = dict[str, Any]

_MAX_BRANCHES = 512  # alternatives explored per section: a guard against a start that fans out combinatorially


class _NoTag(Exception):
    """The grammar cannot be written as a structural tag; the message says why."""


def build_structural_tag(whole: p.Parser | None, triggers: Sequence[Any]) -> tuple[dict[str, Any] | None, str]:
    """The structural tag for a lazy request's whole-output grammar ``whole`` with its ``triggers``, or None and
    the reason there is none."""
    if whole is None:
        return None, "the format has no whole-output grammar"
    patterns = [t.value for t in triggers if t.type != "word"]
    if patterns:
        return None, f"calls are recognised by a pattern ({patterns[0]}), not by a literal trigger word"
    try:
        return _Builder([t.value for t in triggers]).build(whole), ""
    except _NoTag as why:
        return None, str(why)


@dataclass(frozen=True, slots=True)
class _Branch:
    """One way into the section: its literal ``begin`` (a trigger word and the literals right after it) and the
    nodes after that."""

    begin: str
    rest: tuple[p.Parser, ...]


class _Builder:
    def __init__(self, words: list[str]) -> None:
        self.words = words

    # -- the whole output --------------------------------------------------------------------------------------------
    def build(self, whole: p.Parser) -> dict[str, Any]:
        items = list(_flatten([whole]))
        at = len(items) - 2
        text, section = (items[at], items[at + 1]) if at >= 0 else (None, None)
        if not (isinstance(text, Until) and text.delimiters and isinstance(section, Repeat) and _is_optional(section)):
            raise _NoTag("the format's whole-output grammar is not free text followed by optional calls")
        lead = self.lower_items(items[:at])
        tags, after, used = self.section_tags(section.child)
        excludes = [d for d in text.delimiters if d not in used]
        triggered: Format = {
            "type": "triggered_tags",
            "triggers": used,
            "tags": tags,
            "at_least_one": False,
            "stop_after_first": True,
        }
        if excludes:
            triggered["excludes"] = excludes
        elements = [*lead, triggered, *after]
        body = elements[0] if len(elements) == 1 else {"type": "sequence", "elements": elements}
        return {"type": "structural_tag", "format": body}

    # -- the section -------------------------------------------------------------------------------------------------
    def section_tags(self, section: p.Parser) -> tuple[list[Format], list[Format], list[str]]:
        """The tags (one per trigger word the section can start with), the formats that may follow the tag, and the
        trigger words used."""
        branches = list(self._walk([section], [_MAX_BRANCHES]))
        if not branches:
            raise _NoTag("the tool-call section does not start with a trigger word")
        split = [self.split(b) for b in branches]
        # What may follow the tag is one format for all tags. Where the ways into the section go on differently
        # (Kimi: more calls, or whitespace after the section's end), none goes on: each keeps its first part only,
        # a subset of the grammar (any one continuation after another way's tag could be wider than it).
        tails = {json.dumps(tail) for _, _, tail in split}  # (key order kept: a schema's order is the one it asks)
        after = split[0][2] if len(tails) == 1 else []
        by_begin: dict[str, tuple[list[Format], str]] = {}
        for branch, (content, end, _tail) in zip(branches, split, strict=True):
            known = by_begin.get(branch.begin)
            if known is None:
                by_begin[branch.begin] = ([content], end)
            elif known[1] != end:
                raise _NoTag(f"the section opens with {branch.begin!r} in two ways that end differently")
            elif content not in known[0]:
                known[0].append(content)
        tags = []
        for begin, (contents, end) in by_begin.items():
            content = contents[0] if len(contents) == 1 else {"type": "or", "elements": contents}
            if not end and _unbounded(content):
                raise _NoTag(f"the calls after {begin!r} repeat without a closing literal to end a tag")
            tags.append({"type": "tag", "begin": begin, "content": content, "end": end})
        used = [w for w in self.words if any(b.startswith(w) for b in by_begin)]
        return tags, after, used

    def _walk(self, pending: list[p.Parser], budget: list[int]) -> Iterator[_Branch]:
        """Walk the section from its start, through every alternative, to the first literal: a trigger word."""
        if not pending:
            return
        node, rest = pending[0], pending[1:]
        match node:
            case Eps() | Peek() | Negate() | Commit() | JsonNotKnownInvalid() | Space():
                yield from self._walk(rest, budget)  # whitespace before the trigger is free text
            case Seq(items=items):
                yield from self._walk([*items, *rest], budget)
            case Rule(body=body) | Tag(child=body) | Atomic(child=body) | Recover(child=body):
                yield from self._walk([body, *rest], budget)
            case Choice(items=items):
                _spend(budget, len(items))
                for item in items:
                    yield from self._walk([item, *rest], budget)
            case Repeat(child=child, min=lo, max=hi) if hi != 0:
                more = [] if hi == 1 else [Repeat(child, max(lo - 1, 0), hi - 1 if hi > 0 else -1)]
                if lo == 0:
                    _spend(budget, 2)
                    yield from self._walk(rest, budget)
                yield from self._walk([child, *more, *rest], budget)
            case Repeat():
                yield from self._walk(rest, budget)
            case Literal(text=text) if text:
                if not any(text.startswith(w) for w in self.words):
                    raise _NoTag(f"the tool-call section can start with {text!r}, which is no trigger word")
                while rest and isinstance(rest[0], Literal):  # literals right after it belong to the begin
                    text += rest[0].text
                    rest = rest[1:]
                yield _Branch(text, tuple(rest))
            case Literal():
                yield from self._walk(rest, budget)
            case _:
                raise _NoTag(f"the tool-call section can start with {describe(node)}, not with a trigger word")

    def split(self, branch: _Branch) -> tuple[Format, str, list[Format]]:
        """A branch's rest as (content, end, what may follow): the end is the last literal before a part that may
        be empty (more calls, whitespace), which follows the tag instead."""
        rest = list(_flatten(branch.rest))
        cut = len(rest)
        while cut and _nullable(rest[cut - 1]):
            cut -= 1
        head, tail = rest[:cut], rest[cut:]
        end = ""
        if head and isinstance(head[-1], Literal):
            end = head.pop().text
        content = self.lower_items(head)
        body: Format = (
            content[0]
            if len(content) == 1
            else {"type": "sequence", "elements": content}
            if content
            else {"type": "const_string", "value": ""}
        )
        return body, end, self.lower_items(tail)

    # -- lowering ----------------------------------------------------------------------------------------------------
    def lower_items(self, items: Sequence[p.Parser]) -> list[Format]:
        """Formats for nodes in sequence (``until(D)`` followed by ``D`` becomes one tag)."""
        nodes = list(_flatten(items))
        out: list[Format] = []
        i = 0
        while i < len(nodes):
            node = nodes[i]
            nxt = nodes[i + 1] if i + 1 < len(nodes) else None
            until = _plain_until(node)
            if until is not None and isinstance(nxt, Literal) and nxt.text in until.delimiters:
                others = [d for d in until.delimiters if d != nxt.text]
                text: Format = {"type": "any_text", "excludes": others} if others else {"type": "any_text"}
                out.append({"type": "tag", "begin": "", "content": text, "end": nxt.text})
                i += 2
                continue
            lowered = self.lower(node)
            if lowered is not None:
                _append(out, lowered)
            i += 1
        return out

    def lower(self, node: p.Parser) -> Format | None:
        """The format for one node, or None for a node that matches only the empty string. A part with nothing
        xgrammar reads natively (JSON under a schema, text up to a delimiter) but something it cannot (Python
        literals, a constrained raw string) is one ``grammar``: its shared rules are then written once."""
        if _leaf_kinds(node) == {"other"} or _leaf_kinds(node) == {"other", "plain"}:
            return {"type": "grammar", "grammar": p.to_gbnf(node)}
        match node:
            case Eps() | Peek() | Negate() | Commit() | JsonNotKnownInvalid():
                return None
            case Literal(text=text):
                return {"type": "const_string", "value": text} if text else None
            case Space():
                return {"type": "regex", "pattern": WS_REGEX}
            case Seq(items=items):
                parts = self.lower_items(items)
                return None if not parts else parts[0] if len(parts) == 1 else {"type": "sequence", "elements": parts}
            case Choice(items=items):
                alts = [self.lower(item) for item in items]
                if any(a is None for a in alts):
                    present = [a for a in alts if a is not None]
                    if not present:
                        return None
                    inner = present[0] if len(present) == 1 else {"type": "or", "elements": present}
                    return {"type": "optional", "content": inner}
                return {"type": "or", "elements": alts}
            case Repeat(child=child, min=lo, max=hi):
                inner = self.lower(child)
                if inner is None or hi == 0:
                    return None
                if (lo, hi) == (1, 1):
                    return inner
                if (lo, hi) == (0, 1):
                    return {"type": "optional", "content": inner}
                if (lo, hi) == (0, -1):
                    return {"type": "star", "content": inner}
                if (lo, hi) == (1, -1):
                    return {"type": "plus", "content": inner}
                return {"type": "repeat", "min": lo, "max": hi, "content": inner}
            case Rule(body=body) if not _refers(body):
                return self.lower(body)
            case Tag(child=child) | Atomic(child=child) | Recover(child=child):
                return self.lower(child)
            case Schema(child=Json(flavor="json"), json_schema=schema, raw=False) if isinstance(schema, dict):
                return _json_schema(schema)
            case Json(kind=kind, flavor="json"):
                return _json_schema(JSON_KIND_SCHEMAS[kind])
        return {"type": "grammar", "grammar": p.to_gbnf(node)}  # autoparser's own GBNF for anything else


def _plain_until(node: p.Parser) -> Until | None:
    """``node`` as text up to a delimiter: an ``until`` itself, or a raw string value whose schema does not limit
    its text (the GBNF converter writes the same exclusion pattern for both)."""
    if isinstance(node, Until) and node.delimiters:
        return node
    if isinstance(node, Schema) and node.raw and isinstance(node.child, Until) and node.child.delimiters:
        schema = node.json_schema
        if schema is None or (isinstance(schema, dict) and not constrains_text(schema)):
            return node.child
    return None


def _leaf_kinds(node: p.Parser) -> set[str]:
    """What the leaves under ``node`` are: "native" (JSON, text up to a delimiter), "plain" (literals,
    whitespace) or "other"."""
    kinds: set[str] = set()
    for n in walk(node):
        match n:
            case Schema(child=Json(flavor="json"), raw=False) | Json(flavor="json") | Until():
                kinds.add("native")
            case Schema() if _plain_until(n) is not None:
                kinds.add("native")
            case Literal() | Space() | Eps() | Peek() | Negate() | Commit() | JsonNotKnownInvalid():
                kinds.add("plain")
            case Seq() | Choice() | Repeat() | Rule() | Tag() | Atomic() | Recover() | Schema():
                pass
            case _:
                kinds.add("other")
    return kinds


def _spend(budget: list[int], forks: int) -> None:
    budget[0] -= forks
    if budget[0] < 0:
        raise _NoTag("the section's start has too many alternatives to list as tags")


def _json_schema(schema: dict[str, object]) -> Format:
    return {"type": "json_schema", "json_schema": strict_schema(schema), "max_whitespace_cnt": MAX_SPACE}


def _append(out: list[Format], fmt: Format) -> None:
    """Append, splicing a sequence into its parent and joining adjacent constants and adjacent whitespace (two
    runs of at most 64 are kept to one: a subset of the grammar, which allows up to 128 there)."""
    if fmt["type"] == "sequence":
        for element in fmt["elements"]:
            _append(out, element)
        return
    last = out[-1] if out else None
    if last is not None and fmt["type"] == last["type"] == "const_string":
        out[-1] = {"type": "const_string", "value": last["value"] + fmt["value"]}
    elif last is not None and fmt == last == {"type": "regex", "pattern": WS_REGEX}:
        return
    else:
        out.append(fmt)


def _flatten(nodes: Sequence[p.Parser]) -> Iterator[p.Parser]:
    """Nodes in sequence, with nested sequences spliced in."""
    for node in nodes:
        if isinstance(node, Seq):
            yield from _flatten(node.items)
        elif isinstance(node, Eps):
            continue
        else:
            yield node


def _is_optional(node: p.Parser) -> bool:
    return isinstance(node, Repeat) and node.min == 0 and node.max == 1


def _nullable(node: p.Parser) -> bool:
    """Whether ``node`` may match nothing (then it can follow a tag that ended the call)."""
    match node:
        case Eps() | Space() | Peek() | Negate() | Commit() | JsonNotKnownInvalid():
            return True
        case Repeat(min=lo, child=child):
            return lo == 0 or _nullable(child)
        case Seq(items=items):
            return all(_nullable(i) for i in items)
        case Choice(items=items):
            return any(_nullable(i) for i in items)
        case Rule(body=child) | Tag(child=child) | Atomic(child=child) | Recover(child=child):
            return _nullable(child)
        case Literal(text=text):
            return not text
    return False


def _unbounded(fmt: Format) -> bool:
    """Whether a format repeats without bound outside a closed tag, a JSON value or a grammar: xgrammar 0.2 needs
    a non-empty end after such content ("When the content is unlimited, at least one end string must be
    non-empty")."""
    kind = fmt["type"]
    if kind in ("star", "plus", "any_text") or (kind == "repeat" and fmt["max"] == -1):
        return True
    if kind in ("sequence", "or"):
        return any(_unbounded(e) for e in fmt["elements"])
    if kind in ("optional", "repeat"):
        return _unbounded(fmt["content"])
    return False


def _refers(node: p.Parser) -> bool:
    """Whether a rule body refers to rules by name (recursion): it is then written as GBNF, whole."""
    return any(isinstance(n, Ref) for n in walk(node))
