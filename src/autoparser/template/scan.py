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

__all__ = ["ContextScan", "TreeNodes", "Value", "generation_tail", "scan_context", "walk_tree"]

Value = bool | int | float | str


@dataclass(frozen=True, slots=True)
class ContextScan:
    """``names``: the variables the template reads that no loop or macro binds, in source order (locals a ``set``
    assigns are among them: a template may default an input so). ``constraints``: (variable, constants, tested as a
    boolean), one per place the tree constrains a variable."""

    names: tuple[str, ...] = ()
    constraints: tuple[tuple[str, tuple[Value, ...], bool], ...] = ()


@dataclass(frozen=True, slots=True)
class TreeNodes:
    """Every node of a tree below its root, in the order of Jinja's ``find_all`` (depth first, children in field
    order), and the loops inside each macro (by the macro's ``id``): the tree is walked once for every reading of
    it at compile time (the names read, this scan, :mod:`.content_loops`), where ``find_all`` walks it once per
    query through nested generators."""

    order: list[jinja2.nodes.Node]
    macro_loops: dict[int, list[jinja2.nodes.For]]

    def of(self, *kinds: type[jinja2.nodes.Node]) -> list[jinja2.nodes.Node]:
        """The nodes of these kinds, in tree order (``tree.find_all(kinds)``)."""
        return [node for node in self.order if isinstance(node, kinds)]


def walk_tree(tree: jinja2.nodes.Node) -> TreeNodes:
    """One iterative depth-first walk of ``tree`` (see :class:`TreeNodes`)."""
    order: list[jinja2.nodes.Node] = []
    macro_loops: dict[int, list[jinja2.nodes.For]] = {}
    Node, For, Macro = jinja2.nodes.Node, jinja2.nodes.For, jinja2.nodes.Macro
    stack: list[tuple[jinja2.nodes.Node, tuple[int, ...]]] = [(tree, ())]  # (node, the macros around it)
    while stack:
        node, macros = stack.pop()
        if node is not tree:
            order.append(node)
            if isinstance(node, For):
                for macro in macros:
                    macro_loops[macro].append(node)
            elif isinstance(node, Macro):
                macro_loops[id(node)] = []
                macros = (*macros, id(node))
        children: list[jinja2.nodes.Node] = []
        for name in node.fields:
            value = getattr(node, name, None)
            if isinstance(value, Node):
                children.append(value)
            elif isinstance(value, list):
                children.extend(item for item in value if isinstance(item, Node))
        stack.extend((child, macros) for child in reversed(children))
    return TreeNodes(order, macro_loops)


def scan_context(tree: jinja2.nodes.Template, walked: TreeNodes | None = None) -> ContextScan:
    """The scan of a parsed (not yet guarded) template tree (``walked``: its nodes, if walked already)."""
    walked = walk_tree(tree) if walked is None else walked
    bound = {"loop", "caller", "varargs", "kwargs"}
    for node in walked.of(jinja2.nodes.For, jinja2.nodes.Macro, jinja2.nodes.CallBlock):
        targets = [node.target] if isinstance(node, jinja2.nodes.For) else list(node.args)
        for target in targets:
            found = [target] if isinstance(target, jinja2.nodes.Name) else target.find_all(jinja2.nodes.Name)
            bound.update(n.name for n in found)
    names = dict.fromkeys(n.name for n in walked.of(jinja2.nodes.Name) if n.ctx == "load" and n.name not in bound)
    constraints = tuple((name, tuple(values), test) for name, values, test in _constraints(walked) if name in names)
    return ContextScan(tuple(names), constraints)


# What a generation-prompt block may hold for its output to be a function of the context variables it reads: no
# call (a macro, ``raise_exception``, ``strftime_now``), no statement but ``if`` and output, nothing that loads another
# template
_TAIL_NODES = (
    jinja2.nodes.If,
    jinja2.nodes.Output,
    jinja2.nodes.TemplateData,
    jinja2.nodes.Name,
    jinja2.nodes.Const,
    jinja2.nodes.Getattr,
    jinja2.nodes.Getitem,
    jinja2.nodes.Test,
    jinja2.nodes.Compare,
    jinja2.nodes.Operand,
    jinja2.nodes.And,
    jinja2.nodes.Or,
    jinja2.nodes.Not,
    jinja2.nodes.Concat,
    jinja2.nodes.CondExpr,
    jinja2.nodes.Filter,
    jinja2.nodes.Add,
)


def generation_tail(tree: jinja2.nodes.Template, walked: TreeNodes) -> tuple[str, ...] | None:
    """The context variables a template's generation prompt depends on, where the prompt rendered with
    ``add_generation_prompt`` is the one without it followed by text that depends on those alone: the template never
    reads ``add_generation_prompt`` (no variables: the two prompts are equal), or reads it once, in the test of its
    last top-level statement, ``{% if add_generation_prompt %}`` without an ``else``, whose body outputs constants
    and context variables no statement of the template assigns, through tests and filters but no call. None for any
    other template (the generation prompt is then what two renders differ by)."""
    reads = [n for n in walked.of(jinja2.nodes.Name) if n.name == "add_generation_prompt"]
    if not reads:
        return ()
    body = list(tree.body)
    while body and _empty_output(body[-1]):
        body.pop()
    if len(reads) != 1 or not body or walked.of(jinja2.nodes.Extends, jinja2.nodes.Include, jinja2.nodes.Import):
        return None
    last = body[-1]
    if not isinstance(last, jinja2.nodes.If) or last.test is not reads[0] or last.elif_ or last.else_:
        return None
    inside = [node for part in last.body for node in (part, *part.find_all(jinja2.nodes.Node))]
    if not all(isinstance(node, _TAIL_NODES) for node in inside):
        return None
    assigned = {n.name for n in walked.of(jinja2.nodes.Name) if n.ctx != "load"}
    names = dict.fromkeys(n.name for n in inside if isinstance(n, jinja2.nodes.Name))
    if assigned.intersection(names) or {"messages", "tools", "loop"}.intersection(names):
        return None
    return tuple(names)


def _empty_output(node: jinja2.nodes.Node) -> bool:
    return isinstance(node, jinja2.nodes.Output) and all(
        isinstance(part, jinja2.nodes.TemplateData) and not part.data for part in node.nodes
    )


def _constraints(walked: TreeNodes) -> Iterator[tuple[str, list[Value], bool]]:
    """(variable, constants, tested as a boolean) for each place the tree constrains a variable."""
    for node in walked.of(jinja2.nodes.Compare, jinja2.nodes.Test, jinja2.nodes.Filter, jinja2.nodes.Assign):
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
    for node in walked.of(jinja2.nodes.If, jinja2.nodes.CondExpr):
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
