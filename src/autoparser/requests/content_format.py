"""Which content shape a chat template expects: one string per message, or OpenAI's list of typed parts.

Serving stacks must decide before rendering whether ``[{"type": "text", "text": ...}, ...]`` reaches the template
as it is or joined into one string. vLLM decides from the template's syntax tree — a template that loops over a
message's ``content`` reads parts ("openai"), any other reads a string ("string") — and autoparser decides the same
way, so that its prompts match the ones vLLM renders. The walk follows variables assigned from ``messages`` (a
``loop_messages = messages[1:]``), the loop variables over them, and macro parameters that receive a message's
content; a loop over a variable named ``content`` outside macros counts too.

The syntax tree says what a template *can* read, not that every role reads it: :mod:`.profile` checks per role by
rendering.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Iterator
from typing import Literal

import jinja2
import jinja2.nodes as nodes

from ..template.environment import make_environment

__all__ = ["ContentFormat", "content_format"]

ContentFormat = Literal["string", "openai"]


@functools.lru_cache(maxsize=256)
def content_format(source: str) -> ContentFormat:
    """``"openai"`` if the template iterates over a message's content parts, else ``"string"`` (also for a
    template that does not parse: it will fail to render anyway, with its own error)."""
    try:
        tree = make_environment().parse(source)
    except (jinja2.TemplateSyntaxError, RecursionError, MemoryError):
        return "string"
    return "openai" if next(_content_loops(tree), None) is not None else "string"


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


def _aliases(tree: nodes.Template, name: str) -> list[str]:
    """``name`` and every variable assigned from it (transitively): ``{% set msgs = messages[1:] %}``."""
    found = [name]
    pending = deque([name])
    while pending:
        current = pending.popleft()
        for assign in tree.find_all(nodes.Assign):
            target = assign.target
            if isinstance(target, nodes.Name) and _reads(assign.node, current) and target.name not in found:
                found.append(target.name)
                pending.append(target.name)
    return found


def _message_variables(tree: nodes.Template) -> list[str]:
    """Loop variables of ``{% for message in messages %}`` (or over an alias of ``messages``)."""
    sources = _aliases(tree, "messages")
    return [
        loop.target.name
        for loop in tree.find_all(nodes.For)
        if isinstance(loop.target, nodes.Name) and any(_reads(loop.iter, s) for s in sources)
    ]


def _content_loops(tree: nodes.Template) -> Iterator[nodes.For]:
    """Loops over a message's content: directly, through a macro parameter, or over a variable named ``content``."""
    messages = _message_variables(tree)

    def is_content(node: nodes.Node) -> bool:
        return any(_reads(node, m, "content") for m in messages)

    content_params: dict[int, set[str]] = {}  # loop id -> macro parameters that receive a message's content
    in_macros: set[int] = set()
    for macro in tree.find_all(nodes.Macro):
        params = [arg.name for arg in macro.args]
        receiving: set[str] = set()
        for call in tree.find_all(nodes.Call):
            if not _is_name(call.node, macro.name):
                continue
            receiving.update(params[i] for i, arg in enumerate(call.args) if i < len(params) and is_content(arg))
            receiving.update(kw.key for kw in call.kwargs if kw.key in params and is_content(kw.value))
        for loop in macro.find_all(nodes.For):
            in_macros.add(id(loop))
            if receiving:
                content_params[id(loop)] = receiving
    for loop in tree.find_all(nodes.For):
        if not isinstance(loop.target, nodes.Name):
            continue
        if is_content(loop.iter) or (
            isinstance(loop.iter, nodes.Name)
            and (
                loop.iter.name in content_params.get(id(loop), ())
                or (id(loop) not in in_macros and loop.iter.name == "content")
            )
        ):
            yield loop
