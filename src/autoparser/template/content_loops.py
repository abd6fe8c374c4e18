"""Whether a template's Jinja tree loops over a message's content: vLLM's rule for the content format.

A template that loops over a message's ``content`` reads OpenAI's list of typed parts; any other reads one string
(:mod:`autoparser.requests.content_format` says why it matters). The walk follows variables assigned from
``messages`` (a ``loop_messages = messages[1:]``), the loop variables over them, and macro parameters that receive a
message's content; a loop over a variable named ``content`` outside macros counts too.

Read once, from the tree the environment parses to compile the template (:func:`.environment.context_scan`), before
the render guards rewrite it, from the one walk of it that every compile-time reading shares
(:func:`.scan.walk_tree`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import jinja2.nodes as nodes

from .scan import TreeNodes, walk_tree

__all__ = ["loops_over_content"]


@dataclass
class _Nodes:
    """The nodes the rule reads, in tree order, and the loops inside each macro."""

    assigns: list[nodes.Assign]
    loops: list[nodes.For]
    macros: list[nodes.Macro]
    calls: list[nodes.Call]
    macro_loops: dict[int, list[nodes.For]]


def _collect(walked: TreeNodes) -> _Nodes:
    return _Nodes(
        walked.of(nodes.Assign),
        walked.of(nodes.For),
        walked.of(nodes.Macro),
        walked.of(nodes.Call),
        walked.macro_loops,
    )


def _is_name(node: nodes.Node, name: str) -> bool:
    return isinstance(node, nodes.Name) and node.ctx == "load" and node.name == name


def _is_field(node: nodes.Node, name: str, key: str) -> bool:
    """``name.key`` or ``name["key"]``."""
    if isinstance(node, nodes.Getitem):
        return _is_name(node.node, name) and isinstance(node.arg, nodes.Const) and node.arg.value == key
    if isinstance(node, nodes.Getattr):
        return _is_name(node.node, name) and node.attr == key
    return False


def _reads(node: nodes.Node, name: str, key: str | None = None) -> bool:
    """``node`` is ``name`` (or ``name.key``), possibly filtered, tested or sliced."""
    if isinstance(node, nodes.Filter | nodes.Test):
        return node.node is not None and _reads(node.node, name, key)
    if isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Slice):
        return _reads(node.node, name, key)
    return _is_field(node, name, key) if key else _is_name(node, name)


def _aliases(found: _Nodes, name: str) -> list[str]:
    """``name`` and every variable assigned from it (transitively): ``{% set msgs = messages[1:] %}``."""
    aliases = [name]
    pending = deque([name])
    while pending:
        current = pending.popleft()
        for assign in found.assigns:
            target = assign.target
            if isinstance(target, nodes.Name) and _reads(assign.node, current) and target.name not in aliases:
                aliases.append(target.name)
                pending.append(target.name)
    return aliases


def _message_variables(found: _Nodes) -> list[str]:
    """Loop variables of ``{% for message in messages %}`` (or over an alias of ``messages``)."""
    sources = _aliases(found, "messages")
    return [
        loop.target.name
        for loop in found.loops
        if isinstance(loop.target, nodes.Name) and any(_reads(loop.iter, s) for s in sources)
    ]


def loops_over_content(tree: nodes.Template, walked: TreeNodes | None = None) -> bool:
    """Whether the (unguarded) tree loops over a message's content: directly, through a macro parameter, or over a
    variable named ``content`` outside macros (``walked``: its nodes, if walked already)."""
    found = _collect(walk_tree(tree) if walked is None else walked)
    messages = _message_variables(found)

    def is_content(node: nodes.Node) -> bool:
        return any(_reads(node, m, "content") for m in messages)

    content_params: dict[int, set[str]] = {}  # loop id -> macro parameters that receive a message's content
    in_macros: set[int] = set()
    for macro in found.macros:
        params = [arg.name for arg in macro.args]
        receiving: set[str] = set()
        for call in found.calls:
            if not _is_name(call.node, macro.name):
                continue
            receiving.update(params[i] for i, arg in enumerate(call.args) if i < len(params) and is_content(arg))
            receiving.update(kw.key for kw in call.kwargs if kw.key in params and is_content(kw.value))
        for loop in found.macro_loops[id(macro)]:
            in_macros.add(id(loop))
            if receiving:
                content_params[id(loop)] = receiving
    for loop in found.loops:
        if not isinstance(loop.target, nodes.Name):
            continue
        if is_content(loop.iter) or (
            isinstance(loop.iter, nodes.Name)
            and (
                loop.iter.name in content_params.get(id(loop), ())
                or (id(loop) not in in_macros and loop.iter.name == "content")
            )
        ):
            return True
    return False
