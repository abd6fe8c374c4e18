"""Parse results and the tagged AST.

A parse yields one :class:`ParseResult` (status, span, top-level AST nodes). Only ``tag()`` and ``rule()``
create AST nodes, so the tree holds exactly the parts a caller asked to see. Text is sliced lazily from
the input, so building nodes for long spans costs nothing until ``.text`` is read.

Nodes read their text through a :class:`TextBuffer` rather than holding the input string: a stream appends to
one buffer, and a ``str`` that nothing else references grows in place (CPython resizes it), so accumulating
``n`` characters one piece at a time stays O(n) even though earlier nodes still read from the buffer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from enum import IntEnum
from typing import ClassVar

from ..errors import ParseError

__all__ = ["AstNode", "ParseResult", "Status", "TextBuffer", "Visitor"]


class Status(IntEnum):
    """Outcome of a parse. ``NEED_MORE_INPUT`` only happens in partial mode."""

    FAIL = 0
    SUCCESS = 1
    NEED_MORE_INPUT = 2


class TextBuffer:
    """Append-only input text, shared by a parse's nodes (see the module docstring)."""

    __slots__ = ("canonical_json", "text")

    def __init__(self, text: str = "") -> None:
        self.text = text
        # Start -> end of the JSON objects and arrays in the text that a parse decoded as canonical JSON (strict, no
        # key twice in an object; see nodes.Json). Facts about the text: as it only grows, they stay true.
        self.canonical_json: dict[int, int] = {}

    def append(self, piece: str) -> None:
        """Append ``piece``; amortised O(len(piece)) as long as no one else holds a reference to :attr:`text`."""
        text = self.text
        self.text = ""  # drop the buffer's reference so the str below is resized in place, not copied
        text += piece
        self.text = text

    def __len__(self) -> int:
        return len(self.text)


class AstNode:
    """A tagged (or rule) span of the input, with its child nodes.

    ``settled``: the node was complete before the parse looked at the end of the input, so no continuation of a
    partial input can change it (a stream may treat it as final). ``broken``: a recovered node (see
    :class:`~.nodes.Recover`) that was still unfinished where its input stopped being viable; it is final, but its
    content is what it was at that point. ``cut_off``: a broken node whose input was still viable where the
    (complete) input ended: it was cut off rather than malformed.
    """

    __slots__ = ("_source", "broken", "children", "cut_off", "end", "is_partial", "rule", "settled", "start", "tag")

    def __init__(
        self,
        tag: str | None,
        rule: str | None,
        start: int,
        end: int,
        source: TextBuffer,
        children: list[AstNode],
        is_partial: bool,
        settled: bool = False,
    ) -> None:
        self.tag = tag
        self.rule = rule
        self.start = start
        self.end = end
        self._source = source
        self.children = children
        self.is_partial = is_partial
        self.settled = settled
        self.broken = False
        self.cut_off = False

    @property
    def text(self) -> str:
        """The matched text."""
        return self._source.text[self.start : self.end]

    @property
    def canonical_json(self) -> bool:
        """Whether the parse decoded exactly this node's span as a canonical JSON object or array (strict JSON, no key
        twice in an object: see :class:`~.nodes.Json`). False says only that it did not: the text may still be."""
        return self._source.canonical_json.get(self.start) == self.end

    def source_text(self, start: int, end: int) -> str:
        """The input between ``start`` and ``end``: what surrounds the node (markup a parser consumed untagged)."""
        return self._source.text[start:end]

    def walk(self) -> Iterator[AstNode]:
        """This node and all descendants, pre-order."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def __repr__(self) -> str:
        label = f"tag={self.tag!r}" if self.tag is not None else f"rule={self.rule!r}"
        partial = ", broken" if self.broken else ", partial" if self.is_partial else ""
        return f"AstNode({label}, {self.start}:{self.end}, {self.text!r}{partial})"


class ParseResult:
    """The outcome of parsing: status, consumed span, AST, and failure details."""

    __slots__ = ("_source", "end", "expected", "fail_pos", "frontier", "nodes", "settled_nodes", "start", "status")

    def __init__(
        self,
        status: Status,
        start: int,
        end: int,
        nodes: list[AstNode],
        source: TextBuffer,
        fail_pos: int,
        expected: frozenset[str],
    ) -> None:
        self.status = status
        self.start = start
        self.end = end
        self.nodes = nodes
        self._source = source
        self.fail_pos = fail_pos
        self.expected = expected
        # For NEED_MORE results: the primitive that first ran into the end, as (matcher, start, end), when it answered
        # NEED_MORE itself (see ParseSession.advance); None otherwise.
        self.frontier: tuple[object, int, int] | None = None
        # How many leading top-level nodes belong to items of the root's item loop that no longer input can change
        # (all of them for a complete parse). A node after them may be settled itself and still vanish, when the
        # item around it fails later.
        self.settled_nodes = 0

    @property
    def text(self) -> str:
        """The parsed input."""
        return self._source.text

    @property
    def success(self) -> bool:
        return self.status is Status.SUCCESS

    @property
    def fail(self) -> bool:
        return self.status is Status.FAIL

    @property
    def need_more_input(self) -> bool:
        return self.status is Status.NEED_MORE_INPUT

    def walk(self) -> Iterator[AstNode]:
        """Every AST node, pre-order."""
        for node in self.nodes:
            yield from node.walk()

    def tagged(self, tag: str) -> list[AstNode]:
        """All nodes carrying ``tag``, in input order."""
        return [node for node in self.walk() if node.tag == tag]

    def tag_text(self, tag: str) -> str:
        """Concatenated text of every node tagged ``tag`` (how content/reasoning are assembled)."""
        return "".join(node.text for node in self.walk() if node.tag == tag)

    def error(self) -> ParseError:
        """A :class:`ParseError` describing the furthest failure (for FAIL results)."""
        return ParseError(self.text, max(self.fail_pos, 0), self.expected)

    def __repr__(self) -> str:
        return f"ParseResult({self.status.name}, {self.start}:{self.end}, {len(self.nodes)} nodes)"


class Visitor:
    """Dispatch AST nodes to ``visit_<tag>`` / ``visit_rule_<rule>`` methods, pre-order.

    Tags and rule names are sanitised to identifiers (``tool-name`` → ``visit_tool_name``). Unhandled
    nodes go to :meth:`generic_visit`, which visits the children. The dispatch table is built once per
    subclass.
    """

    _dispatch: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls._dispatch = {name: name for name in dir(cls) if name.startswith("visit_")}

    def visit(self, node: AstNode | ParseResult) -> None:
        """Visit a result's nodes, or one node."""
        if isinstance(node, ParseResult):
            for child in node.nodes:
                self.visit(child)
            return
        method = self._method_for(node)
        if method is None:
            self.generic_visit(node)
        else:
            method(node)

    def generic_visit(self, node: AstNode) -> None:
        """Visit the children of a node nobody handles."""
        for child in node.children:
            self.visit(child)

    def _method_for(self, node: AstNode) -> Callable[[AstNode], object] | None:
        key = f"visit_{node.tag}" if node.tag is not None else f"visit_rule_{node.rule}"
        name = self._dispatch.get(key.replace("-", "_").replace(".", "_"))
        return getattr(self, name) if name else None
