"""Jinja's compile of a template, made cheaper without changing what it produces.

A cold template pays Jinja's whole compile (lex, parse, code generation, Python's ``compile()``) before its first
reply, and that compile is most of the cold cost (bench/cold_bench.py). Jinja's code generator walks the tree many
times over — ``find_all`` per loop, a symbol analysis per branch, a name search per macro and loop — and every walk
asks each node for its children through two nested generators (``iter_fields``, ``iter_child_nodes``) that read the
fields again each time. :func:`freeze_children` gives each node of a finished tree its children once, as a tuple:
the code generator then walks the same nodes in the same order, and its output is the same string, in about three
quarters of the time.
"""

from __future__ import annotations

from collections.abc import Container, Iterator
from functools import partial
from typing import Any

import jinja2.nodes

__all__ = ["freeze_children"]

_Node = jinja2.nodes.Node
_MISSING = object()


def freeze_children(tree: jinja2.nodes.Node) -> None:
    """Give every node of ``tree`` a fixed ``iter_child_nodes`` (an attribute of the node, so Jinja's class is left
    alone): the tree must not change afterwards. Iterative, as the tree may be deep."""
    stack = [tree]
    while stack:
        node = stack.pop()
        fields: list[tuple[str, Any]] = []
        children: list[jinja2.nodes.Node] = []
        for name in node.fields:
            value = getattr(node, name, _MISSING)  # (Jinja skips a field that is not set)
            if value is _MISSING:
                continue
            fields.append((name, value))
            if isinstance(value, list):
                children.extend(item for item in value if isinstance(item, _Node))
            elif isinstance(value, _Node):
                children.append(value)
        # A partial of a module function holds the children and fields, not the node: no reference cycle.
        node.iter_child_nodes = partial(_children, tuple(children), tuple(fields))  # type: ignore[method-assign]
        stack.extend(children)


def _children(
    children: tuple[jinja2.nodes.Node, ...],
    fields: tuple[tuple[str, Any], ...],
    exclude: Container[str] | None = None,
    only: Container[str] | None = None,
) -> Iterator[jinja2.nodes.Node]:
    """``Node.iter_child_nodes``: all the children, or those of the fields ``exclude`` and ``only`` select."""
    if exclude is None and only is None:
        return iter(children)
    return _selected(fields, exclude, only)


def _selected(
    fields: tuple[tuple[str, Any], ...], exclude: Container[str] | None, only: Container[str] | None
) -> Iterator[jinja2.nodes.Node]:
    # Jinja's rule: a field is taken when it is not excluded, or when it is one of ``only``.
    for name, value in fields:
        if (exclude is not None and name not in exclude) or (only is not None and name in only):
            if isinstance(value, list):
                yield from (item for item in value if isinstance(item, _Node))
            elif isinstance(value, _Node):
                yield value
