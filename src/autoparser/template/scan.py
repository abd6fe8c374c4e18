"""What a template's Jinja tree says about its context variables: which it reads, and what it compares them with.

Read once, from the tree the environment parses to compile the template (:func:`.environment.context_scan`), before
the render guards rewrite it. The reasoning-switch probe (:mod:`.switches`) starts from it: a variable the template
tests as a boolean (``if thinking``, ``thinking is true``) or compares with, or defaults to, a constant (``==
"enabled"``, ``in ["low", "minimal"]``, ``default(false)``, ``set x = x if x is defined else "high"``) may switch
reasoning.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import jinja2.nodes

__all__ = ["ContextScan", "Value", "scan_context"]

Value = bool | int | float | str


@dataclass(frozen=True, slots=True)
class ContextScan:
    """``names``: the variables the template reads that no loop or macro binds, in source order (locals a ``set``
    assigns are among them: a template may default an input so). ``constraints``: (variable, constants, tested as a
    boolean), one per place the tree constrains a variable."""

    names: tuple[str, ...] = ()
    constraints: tuple[tuple[str, tuple[Value, ...], bool], ...] = ()


def scan_context(tree: jinja2.nodes.Template) -> ContextScan:
    """The scan of a parsed (not yet guarded) template tree."""
    bound = {"loop", "caller", "varargs", "kwargs"}
    for node in tree.find_all((jinja2.nodes.For, jinja2.nodes.Macro, jinja2.nodes.CallBlock)):
        targets = [node.target] if isinstance(node, jinja2.nodes.For) else list(node.args)
        for target in targets:
            found = [target] if isinstance(target, jinja2.nodes.Name) else target.find_all(jinja2.nodes.Name)
            bound.update(n.name for n in found)
    names = dict.fromkeys(n.name for n in tree.find_all(jinja2.nodes.Name) if n.ctx == "load" and n.name not in bound)
    constraints = tuple((name, tuple(values), test) for name, values, test in _constraints(tree) if name in names)
    return ContextScan(tuple(names), constraints)


def _constraints(tree: jinja2.nodes.Template) -> Iterator[tuple[str, list[Value], bool]]:
    """(variable, constants, tested as a boolean) for each place the tree constrains a variable."""
    for node in tree.find_all((jinja2.nodes.Compare, jinja2.nodes.Test, jinja2.nodes.Filter, jinja2.nodes.Assign)):
        if isinstance(node, jinja2.nodes.Compare):
            name = _subject(node.expr)
            if name:
                yield name, [v for op in node.ops for v in _constants(op.expr)], False
        elif isinstance(node, jinja2.nodes.Test):
            name = _subject(node.node)
            if name and node.name in ("true", "false", "boolean"):
                yield name, [], True
            elif name and node.name in ("sameas", "eq", "equalto") and node.args:
                yield name, _constants(node.args[0]), False
        elif isinstance(node, jinja2.nodes.Filter):
            if node.name == "default" and isinstance(node.node, jinja2.nodes.Name) and node.args:
                yield node.node.name, _constants(node.args[0]), False
        elif isinstance(node.target, jinja2.nodes.Name):
            yield node.target.name, _constants(node.node), False
    for node in tree.find_all((jinja2.nodes.If, jinja2.nodes.CondExpr)):
        for name in _truth_tested(node.test):
            yield name, [], True


def _subject(node: jinja2.nodes.Node) -> str:
    """The variable a comparison is about: ``x``, or ``x`` behind filters (``x | lower``)."""
    while isinstance(node, jinja2.nodes.Filter) and node.node is not None:
        node = node.node
    return node.name if isinstance(node, jinja2.nodes.Name) else ""


def _constants(node: jinja2.nodes.Node | None) -> list[Value]:
    """The constants of an expression: a constant (``-1`` too), a list or tuple of them, or either branch of ``a if t
    else b``."""
    if isinstance(node, jinja2.nodes.Const) and isinstance(node.value, bool | int | float | str):
        return [node.value]
    if isinstance(node, jinja2.nodes.Neg) and isinstance(node.node, jinja2.nodes.Const):
        value = node.node.value
        return [-value] if isinstance(value, int | float) and not isinstance(value, bool) else []
    if isinstance(node, jinja2.nodes.List | jinja2.nodes.Tuple):
        return [v for item in node.items for v in _constants(item)]
    if isinstance(node, jinja2.nodes.CondExpr):
        return [*_constants(node.expr1), *_constants(node.expr2)]
    return []


def _truth_tested(node: jinja2.nodes.Node) -> list[str]:
    """Variables an ``if`` tests for truth: ``x``, ``not x``, and the operands of ``and``/``or``."""
    if isinstance(node, jinja2.nodes.Name):
        return [node.name]
    if isinstance(node, jinja2.nodes.Not):
        return _truth_tested(node.node)
    if isinstance(node, jinja2.nodes.And | jinja2.nodes.Or):
        return [*_truth_tested(node.left), *_truth_tested(node.right)]
    return []
