"""Walking a parser graph: traversal, rule collection, and human descriptions for error messages."""

from __future__ import annotations

import json
from collections.abc import Iterator

from ..errors import GrammarError
from .nodes import (
    AnyChar,
    Atomic,
    Chars,
    End,
    Gbnf,
    Json,
    Literal,
    Negate,
    Parser,
    Ref,
    Rule,
    Schema,
    Start,
    StringContent,
    Tag,
)

__all__ = ["collect_rules", "describe", "rules_and_size", "walk"]


def walk(root: Parser) -> Iterator[Parser]:
    """Every node reachable from ``root`` once (by identity), depth first; references are not followed."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        stack.extend(reversed(node.children()))


def describe(node: Parser) -> str:
    """A short description of what ``node`` expects, for error messages."""
    match node:
        case Literal(text=text):
            return json.dumps(text, ensure_ascii=False)
        case Chars(char_class=cls):
            return cls.describe()
        case AnyChar():
            return "any character"
        case End():
            return "end of input"
        case Start():
            return "start of input"
        case Json(kind=kind, flavor=flavor):
            return f"{'Python' if flavor == 'python' else 'JSON'} {kind}"
        case StringContent(quote=quote):
            return f"string content closed by {quote}"
        case Rule(name=name) | Ref(name=name):
            return name
        case Tag(child=child) | Atomic(child=child) | Schema(child=child) | Gbnf(child=child):
            return describe(child)
        case Negate(child=child):
            return f"anything but {describe(child)}"
        case _:
            return type(node).__name__.lower()


def collect_rules(root: Parser) -> dict[str, Rule]:
    """Every :class:`Rule` reachable from ``root``, by name; conflicting definitions are an error."""
    return rules_and_size(root)[0]


def rules_and_size(root: Parser) -> tuple[dict[str, Rule], int]:
    """:func:`collect_rules`, and how many nodes are reachable from ``root`` (what a parser's memory grows with)."""
    rules: dict[str, Rule] = {}
    size = 0
    for node in walk(root):
        size += 1
        if isinstance(node, Rule):
            other = rules.setdefault(node.name, node)
            if other is not node and other.body is not node.body:
                raise GrammarError(f"rule {node.name!r} is defined twice with different bodies")
    return rules, size
