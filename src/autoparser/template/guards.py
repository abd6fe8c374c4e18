"""Where the render limits (:mod:`.limits`) hook into Jinja.

Most checks are *guard filters* that :func:`add_guards` wraps around expressions in the parsed template before it
is compiled. A filter compiles to a plain Python call, much cheaper than the sandbox's ``call()`` path (overriding
``call()`` instead made normal renders 5–15% slower), and each guard returns its argument — or, for a large
loop, an iterator over the same items — so the rendered text is byte-identical to plain Jinja. The guards check:

* every ``{% for %}`` iterable (deadline, per item when large);
* every value that is kept — ``{% set %}`` values and blocks, ``{% with %}`` values, macro and ``{% call %}``
  parameters on entry (size);
* every call result (deadline and size): runaway recursion keeps returning from its leaves, and a macro's
  output cannot grow past the limit by being reused;
* the width argument of ``center``/``ljust``/``rjust``/``zfill``/``expandtabs`` method calls (before they
  allocate).

:class:`BoundedSandbox` intercepts ``*`` and ``**`` (which also stops Jinja folding them at compile time, so
``'x' * 10**10`` is refused at render time, with a line number, instead of allocating while compiling), and
:func:`install` replaces the filters whose result size comes from a number (``center``, ``indent``, ``batch``,
``slice``) with checked versions.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jinja2.filters
import jinja2.nodes
import jinja2.runtime
import jinja2.visitor
from jinja2 import Environment
from jinja2.sandbox import ImmutableSandboxedEnvironment

from .limits import SIZED, UNCHECKED_ITEMS, active_budget, monotonic

__all__ = ["BoundedSandbox", "add_guards", "install"]

# Filter names the guards are registered under: not identifiers any real template uses (and harmless if one did).
_LOOP = "autoparser_guard_loop__"
_VALUE = "autoparser_guard_value__"
_RESULT = "autoparser_guard_result__"
_WIDTH = "autoparser_guard_width__"

# Sized iterables that loops commonly run over, whose length is cheap to ask for.
_SMALL_LOOP_TYPES = (list, tuple, dict, str, range, type({}.keys()), type({}.values()), type({}.items()))

# str methods whose first argument is the length of the result.
_WIDTH_METHODS = frozenset({"center", "ljust", "rjust", "zfill", "expandtabs"})


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox with ``*`` and ``**`` checked against the active render budget."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any) -> Any:
        budget = active_budget()
        if budget is not None:
            budget.check_time()
            if operator == "*":
                budget.check_repeat(left, right)
            else:
                budget.check_power(left, right)
        return super().call_binop(context, operator, left, right)


def _guard_loop(iterable: Any) -> Any:
    budget = active_budget()
    if budget is None:
        return iterable
    if monotonic() > budget.deadline:
        raise budget.timed_out()
    # Small loops run as they are (nested ones are checked each time they start); large ones, and generators
    # (filters such as items or map have no length), are checked per item. An exact type test:
    # isinstance(x, Sized) is an ABC check, several times slower.
    if issubclass(type(iterable), _SMALL_LOOP_TYPES) and len(iterable) <= UNCHECKED_ITEMS:
        return iterable
    return budget.checked(iterable)


def _guard_value(value: Any) -> Any:
    if issubclass(type(value), SIZED):  # inlined Budget.check_size: this runs for every {% set %}
        budget = active_budget()
        if budget is not None and len(value) > budget.max_size:
            raise budget.too_big(len(value))
    return value


def _guard_result(value: Any) -> Any:
    budget = active_budget()
    if budget is not None:
        if monotonic() > budget.deadline:
            raise budget.timed_out()
        if issubclass(type(value), SIZED) and len(value) > budget.max_size:
            raise budget.too_big(len(value))
    return value


def _guard_width(width: Any) -> Any:
    budget = active_budget()
    if budget is not None:
        budget.check_width(width)
    return width


def _center(value: Any, width: int = 80) -> str:
    budget = active_budget()
    if budget is not None:
        budget.check_width(width)
    return jinja2.filters.do_center(value, width)


def _indent(s: str, width: int | str = 4, first: bool = False, blank: bool = False) -> str:
    budget = active_budget()
    unit = len(width) if isinstance(width, str) else width
    if budget is not None and isinstance(unit, int) and isinstance(s, str):
        budget.check_width(len(s) + unit * (s.count("\n") + 2))  # every line may get the indent
    return jinja2.filters.do_indent(s, width, first, blank)


def _batch(value: Any, linecount: int, fill_with: Any = None) -> Iterator[list[Any]]:
    budget = active_budget()
    if budget is not None:
        budget.check_count(linecount)
    return jinja2.filters.do_batch(value, linecount, fill_with)


def _slice(value: Any, slices: int, fill_with: Any = None) -> Iterator[list[Any]]:
    budget = active_budget()
    if budget is not None:
        budget.check_count(slices)
    return jinja2.filters.sync_do_slice(value, slices, fill_with)


def install(env: Environment) -> None:
    """Register the guard filters and the checked ``center``/``indent``/``batch``/``slice`` filters."""
    env.filters.update(
        {_LOOP: _guard_loop, _VALUE: _guard_value, _RESULT: _guard_result, _WIDTH: _guard_width},
        center=_center,
        indent=_indent,
        batch=_batch,
        slice=_slice,
    )


def add_guards(tree: jinja2.nodes.Template) -> None:
    """Wrap the guard filters around the expressions listed in the module docstring (in place)."""
    _Guards().visit(tree)


def _guard(name: str, node: jinja2.nodes.Expr | None, lineno: int) -> jinja2.nodes.Filter:
    # ``node=None`` stands for a block's captured output, as in ``{% set x | upper %}...{% endset %}``.
    return jinja2.nodes.Filter(node, name, [], [], None, None, lineno=lineno)


class _Guards(jinja2.visitor.NodeTransformer):
    def visit_For(self, node: jinja2.nodes.For) -> jinja2.nodes.Node:
        self.generic_visit(node)
        node.iter = _guard(_LOOP, node.iter, node.lineno)
        return node

    def visit_Assign(self, node: jinja2.nodes.Assign) -> jinja2.nodes.Node:
        self.generic_visit(node)
        if not _builds_nothing(node.node):
            node.node = _guard(_VALUE, node.node, node.lineno)
        return node

    def visit_AssignBlock(self, node: jinja2.nodes.AssignBlock) -> jinja2.nodes.Node:
        self.generic_visit(node)
        node.filter = _guard(_VALUE, node.filter, node.lineno)
        return node

    def visit_With(self, node: jinja2.nodes.With) -> jinja2.nodes.Node:
        self.generic_visit(node)
        node.values = [value if _builds_nothing(value) else _guard(_VALUE, value, node.lineno) for value in node.values]
        return node

    def visit_Macro(self, node: jinja2.nodes.Macro) -> jinja2.nodes.Node:
        self.generic_visit(node)
        _guard_parameters(node)
        return node

    def visit_CallBlock(self, node: jinja2.nodes.CallBlock) -> jinja2.nodes.Node:
        # ``call`` must stay a Call node (Jinja hands it the block as ``caller``), so only its parts are visited;
        # what it returns is output, which the render loop counts.
        self.generic_visit(node.call)
        node.defaults = [self.visit(default) for default in node.defaults]
        node.body = [self.visit(statement) for statement in node.body]
        _guard_parameters(node)
        return node

    def visit_Call(self, node: jinja2.nodes.Call) -> jinja2.nodes.Node:
        self.generic_visit(node)
        if isinstance(node.node, jinja2.nodes.Getattr) and node.node.attr in _WIDTH_METHODS and node.args:
            node.args[0] = _guard(_WIDTH, node.args[0], node.lineno)
        return _guard(_RESULT, node, node.lineno)


def _builds_nothing(node: jinja2.nodes.Node) -> bool:
    """Whether an assigned expression only names a value that already exists or was checked where it was made
    (most ``{% set %}`` statements: ``set content = message.content``, ``set ns = namespace(...)``), so that
    guarding it would only cost time."""
    if isinstance(node, jinja2.nodes.Filter) and node.name == _RESULT:
        return True
    return isinstance(node, (jinja2.nodes.Const, jinja2.nodes.Name, jinja2.nodes.Getattr, jinja2.nodes.Getitem))


def _guard_parameters(node: jinja2.nodes.Macro | jinja2.nodes.CallBlock) -> None:
    """Check the macro's arguments when it is entered: a recursive macro could otherwise double a string per call."""
    checks: list[jinja2.nodes.Node] = [
        jinja2.nodes.ExprStmt(_guard(_VALUE, jinja2.nodes.Name(arg.name, "load"), node.lineno), lineno=node.lineno)
        for arg in node.args
    ]
    node.body[:0] = checks
