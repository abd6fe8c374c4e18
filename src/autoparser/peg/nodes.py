"""Parser nodes: immutable data describing a PEG, with parsy-style operator sugar.

Nodes are plain frozen dataclasses, not closures, so one graph can be parsed (after compilation by
:mod:`.engine`), printed, walked and lowered to GBNF (:mod:`.lowering.gbnf`). Operators build new nodes:

* ``a + b``  sequence,   ``a | b``  ordered choice,   ``a << b``  sequence with optional whitespace between,
* ``~a``     negative lookahead;  a plain ``str`` operand becomes a literal.

Nodes compare by identity; build a graph once and reuse it (compiled forms are cached on the node).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from typing import Literal as TypingLiteral

from ..errors import GrammarError
from .charclass import CharClass

if TYPE_CHECKING:
    from .ast import ParseResult
    from .engine import CompiledParser

__all__ = [
    "COMMIT_TAG",
    "AnyChar",
    "Atomic",
    "Chars",
    "Choice",
    "Commit",
    "End",
    "Eps",
    "Gbnf",
    "Json",
    "JsonFlavor",
    "JsonKind",
    "JsonNotKnownInvalid",
    "Literal",
    "Negate",
    "Parser",
    "Peek",
    "Recover",
    "Ref",
    "Repeat",
    "Rule",
    "Schema",
    "Sequence",
    "Space",
    "Start",
    "StringContent",
    "Tag",
    "Until",
    "UntilViableJson",
    "coerce",
]

COMMIT_TAG = "commit"  # the AST tag of a Commit marker

JsonKind = TypingLiteral["value", "object", "array", "string", "number", "bool", "null"]
JsonFlavor = TypingLiteral["json", "python", "pythonic", "gemma"]


def coerce(value: Parser | str) -> Parser:
    """Turn a ``str`` operand into a :class:`Literal`; pass parsers through."""
    if isinstance(value, Parser):
        return value
    if isinstance(value, str):
        return Literal(value)
    raise TypeError(f"expected a Parser or str, got {type(value).__name__}")


def _check_bounds(what: str, lo: int, hi: int) -> None:
    """Repetition bounds: ``0 <= lo`` and ``hi == -1`` (unbounded) or ``hi >= lo``."""
    if lo < 0 or (hi >= 0 and hi < lo):
        raise GrammarError(f"{what}: bad bounds min={lo} max={hi}")


# The engine (:mod:`.engine`) and the grammar writers (:mod:`.lowering`) are built on these nodes, and the nodes'
# convenience methods (``parse``, ``to_gbnf``, ``to_lark``) call them: the package face (``autoparser.peg``) plugs
# them in here when it is imported, so this module imports neither (no import circle).
_BACKENDS: dict[str, Callable[..., Any]] = {}


def install_backends(
    *, compile: Callable[[Parser], CompiledParser], gbnf: Callable[..., str], lark: Callable[..., str]
) -> None:
    """Plug in the engine's compiler and the GBNF and Lark writers (called once, by ``autoparser.peg``)."""
    _BACKENDS.update(compile=compile, gbnf=gbnf, lark=lark)


class Parser:
    """Base class of every PEG node."""

    __slots__ = ("_compiled",)

    # -- operator sugar -------------------------------------------------------------------------
    def __add__(self, other: Parser | str) -> Parser:
        return Sequence.of(self, other)

    def __radd__(self, other: Parser | str) -> Parser:
        return Sequence.of(other, self)

    def __or__(self, other: Parser | str) -> Parser:
        return Choice.of(self, other)

    def __ror__(self, other: Parser | str) -> Parser:
        return Choice.of(other, self)

    def __lshift__(self, other: Parser | str) -> Parser:
        return Sequence.of(self, Space(), other)

    def __rlshift__(self, other: Parser | str) -> Parser:
        return Sequence.of(other, Space(), self)

    def __invert__(self) -> Parser:
        return Negate(self)

    # -- running --------------------------------------------------------------------------------
    def compile(self) -> CompiledParser:
        """Compile this graph (once; the result is cached on the node)."""
        compiled = getattr(self, "_compiled", None)
        if compiled is None:
            compiled = _BACKENDS["compile"](self)
            object.__setattr__(self, "_compiled", compiled)
        return compiled

    def parse(self, text: str, *, partial: bool = False, start: int = 0) -> ParseResult:
        """Parse ``text`` from ``start``; ``partial=True`` means more text may still arrive."""
        return self.compile().parse(text, partial=partial, start=start)

    def to_gbnf(self, *, lazy: bool = False) -> str:
        """GBNF grammar text for this parser (``lazy``: only the trigger rules, see :mod:`.lowering.gbnf`)."""
        return _BACKENDS["gbnf"](self, lazy=lazy)

    def to_lark(self, *, lazy: bool = False) -> str:
        """The same grammar in llguidance's Lark dialect (JSON schemas as ``%json``, see :mod:`.lowering.lark`)."""
        return _BACKENDS["lark"](self, lazy=lazy)

    def children(self) -> tuple[Parser, ...]:
        """Direct sub-parsers (rule references are not followed)."""
        return ()


_node = dataclass(frozen=True, slots=True, eq=False)


@_node
class Eps(Parser):
    """Always succeeds, consumes nothing."""


@_node
class Start(Parser):
    """Succeeds only at position 0."""


@_node
class End(Parser):
    """Succeeds only at the end of the input."""


@_node
class Literal(Parser):
    """Exact text. Cut off by the end of partial input, it needs more input."""

    text: str


@_node
class AnyChar(Parser):
    """Exactly one code point."""


@_node
class Chars(Parser):
    """Between ``min`` and ``max`` (``-1``: unbounded) code points from a character class."""

    char_class: CharClass
    spec: str
    min: int = 1
    max: int = -1

    def __post_init__(self) -> None:
        _check_bounds(f"chars({self.spec!r})", self.min, self.max)


@_node
class Sequence(Parser):
    """Children in order; all must match."""

    items: tuple[Parser, ...]

    @staticmethod
    def of(*parts: Parser | str) -> Parser:
        """Build a flattened sequence (nested sequences are spliced, epsilons dropped)."""
        items: list[Parser] = []
        for part in map(coerce, parts):
            if isinstance(part, Sequence):
                items.extend(part.items)
            elif not isinstance(part, Eps):
                items.append(part)
        if not items:
            return Eps()
        return items[0] if len(items) == 1 else Sequence(tuple(items))

    def children(self) -> tuple[Parser, ...]:
        return self.items


@_node
class Choice(Parser):
    """Ordered choice: the first alternative that does not fail wins."""

    items: tuple[Parser, ...]

    @staticmethod
    def of(*parts: Parser | str) -> Parser:
        """Build a flattened choice (nested choices are spliced)."""
        items: list[Parser] = []
        for part in map(coerce, parts):
            items.extend(part.items if isinstance(part, Choice) else (part,))
        if not items:
            raise ValueError("choice() needs at least one alternative")
        return items[0] if len(items) == 1 else Choice(tuple(items))

    def children(self) -> tuple[Parser, ...]:
        return self.items


@_node
class Repeat(Parser):
    """``child`` repeated ``min`` to ``max`` times (``max=-1``: unbounded)."""

    child: Parser
    min: int = 0
    max: int = -1

    def __post_init__(self) -> None:
        _check_bounds("repeat()", self.min, self.max)

    def children(self) -> tuple[Parser, ...]:
        return (self.child,)


@_node
class Peek(Parser):
    """Positive lookahead (``&p``): the child's outcome, consuming nothing."""

    child: Parser

    def children(self) -> tuple[Parser, ...]:
        return (self.child,)


@_node
class Negate(Parser):
    """Negative lookahead (``!p``): succeeds iff the child fails, consuming nothing."""

    child: Parser

    def children(self) -> tuple[Parser, ...]:
        return (self.child,)


@_node
class Space(Parser):
    """Zero or more ASCII whitespace characters (space, tab, LF, CR, VT, FF)."""


@_node
class Until(Parser):
    """Everything up to (not including) the first of ``delimiters``; no delimiters means the rest."""

    delimiters: tuple[str, ...]

    def __post_init__(self) -> None:
        if any(d == "" for d in self.delimiters):
            raise GrammarError("until(): delimiters must be non-empty strings")


@_node
class Commit(Parser):
    """Consumes nothing; records a zero-width ``commit`` AST node: the enclosing structure is now committed (a
    stream may announce it), so an enclosing :class:`Recover` keeps it even if what follows turns out malformed."""


@_node
class Recover(Parser):
    """``child``; or, when ``child`` fails after passing a :class:`Commit`, ``child`` as it stood on the longest
    prefix of the input on which it was still viable: exactly what a stream fed that prefix had shown. Its nodes
    that were unfinished there are flagged ``broken``; the match ends where that partial parse ended. Grammars
    (GBNF, Lark) are unaffected: recovery is leniency of the parser, not part of the language.

    ``rest`` (None: no resynchronisation): after a recovery, the rest of the broken structure is skipped up to the
    first of these stop strings, or — with ``balanced``, the opening brackets to count (``"{["``) — up to the
    bracket that closes what the structure had left open (counted from its start, outside strings quoted with
    ``quotes``; a closing bracket of an enclosing structure ends the rest before it), whichever comes first, or
    the end of the input; the skipped text becomes one AST node tagged ``rest_tag``. Then ``closers`` (the
    structure's end markers) are consumed in order where they follow, each after optional whitespace.

    ``whole_words``: where the longest viable prefix ends inside a word (letters, digits, ``_`` on both sides: a
    ``T`` still viable as the start of ``True``), the structure is kept as it stood before that word, so the rest
    holds the word whole. For structures whose pieces a stream shows only once complete (the prefix before the word
    shows the same)."""

    child: Parser
    rest: tuple[str, ...] | None = None
    balanced: str = ""
    quotes: str = '"'
    closers: tuple[str, ...] = ()
    rest_tag: str = "rest"
    whole_words: bool = False

    def children(self) -> tuple[Parser, ...]:
        return (self.child,)


@_node
class Rule(Parser):
    """A named sub-parser; referenced by :class:`Ref` (enables recursion). Creates an AST node."""

    name: str
    body: Parser
    trigger: bool = False

    def children(self) -> tuple[Parser, ...]:
        return (self.body,)


@_node
class Ref(Parser):
    """Reference to a :class:`Rule` by name, resolved when the graph is compiled."""

    name: str


@_node
class Atomic(Parser):
    """The child's AST nodes are dropped while it is incomplete (needs more input)."""

    child: Parser

    def children(self) -> tuple[Parser, ...]:
        return (self.child,)


@_node
class Tag(Parser):
    """Marks the matched span with a semantic tag in the AST (``reasoning``, ``tool-name``...)."""

    name: str
    child: Parser

    def children(self) -> tuple[Parser, ...]:
        return (self.child,)


@_node
class Schema(Parser):
    """Parses as ``child``; in GBNF emits the grammar of ``json_schema`` (``raw``: an unquoted string)."""

    child: Parser
    name: str
    json_schema: Any
    raw: bool = False

    def children(self) -> tuple[Parser, ...]:
        return (self.child,)


@_node
class Gbnf(Parser):
    """Parses as ``child``; in GBNF emits ``grammar`` verbatim."""

    child: Parser
    grammar: str

    def children(self) -> tuple[Parser, ...]:
        return (self.child,)


@_node
class Json(Parser):
    """A JSON (or Python-literal) value of the given kind, scanned by a dedicated fast scanner. ``private``: its
    scans are remembered apart, so what they find out about the values inside (an object that turns out malformed)
    is not known to the guards of other alternatives (:class:`JsonNotKnownInvalid`, :class:`UntilViableJson`).
    ``canonical``: a complete JSON object or array is decoded as strict JSON (no raw control character in a string)
    with no key twice in an object where it is so, and its span recorded on the parse's text
    (:attr:`.ast.AstNode.canonical_json`): a reader that needs that form (raw JSON tool arguments) then need not
    decode the value a second time to check it."""

    kind: JsonKind = "value"
    flavor: JsonFlavor = "json"
    private: bool = False
    canonical: bool = False


@_node
class JsonNotKnownInvalid(Parser):
    """Consumes nothing; fails only when this parse already knows the JSON value of ``kind`` here is malformed (a
    scan from an enclosing position recorded it). A cheap guard: a call attempted at every ``{`` of a long broken
    object fails at once instead of re-reading the object's members."""

    kind: JsonKind = "object"
    flavor: JsonFlavor = "json"


@_node
class UntilViableJson(Parser):
    """Text up to the next ``opener`` (``{`` or ``[``) where a JSON value of ``kind`` may start: openers at which the
    parse already found the value malformed are part of the text. Where every ``{`` may start a JSON tool call,
    this keeps a long malformed object one stretch of text instead of one item per brace. The text also ends at the
    first of ``stops`` (literal delimiters, as :class:`Until`)."""

    opener: str = "{"
    kind: JsonKind = "object"
    flavor: JsonFlavor = "json"
    stops: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if any(d == "" for d in self.stops):
            raise GrammarError("until_viable_json(): stops must be non-empty strings")


@_node
class StringContent(Parser):
    """The body of a quoted string up to (not including) the unescaped closing ``quote``."""

    quote: str = '"'
    flavor: JsonFlavor = "json"
