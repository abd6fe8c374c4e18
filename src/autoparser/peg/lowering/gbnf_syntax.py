"""GBNF text primitives: escaping, collision-free rule names, and grammar rendering.

Everything that writes GBNF (the PEG lowering in :mod:`.gbnf` and the JSON-schema converter in
:mod:`.json_schema`) goes through :class:`RuleSet`, so rule names are sanitized one way and two different
source names can never end up sharing a rule (``get_data`` and ``get-data`` both become ``get-data``
after sanitizing; the second one gets ``get-data-2``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable

from ...errors import GrammarError

__all__ = [
    "JSON_WS_BODY",
    "JSON_WS_RULE",
    "MAX_SPACE",
    "SPACE_BODY",
    "SPACE_RULE",
    "WS_REGEX",
    "RuleSet",
    "class_char",
    "literal",
    "rule_references",
    "sanitize_rule_name",
]

#: The most whitespace a grammar allows in one place. Unbounded whitespace is the known way constrained decoding
#: fails: a model that drifts into spaces or newlines may write them until max_tokens, since the grammar never
#: forces anything else. 64 covers a template's line breaks and deep pretty-printed JSON (Cohere indents a call by 8
#: and its arguments by 4 per level).
MAX_SPACE = 64
#: Rule used for the PEG ``space()`` parser: up to MAX_SPACE of the whitespace models write between markers
#: (space, tab, LF, CR). Narrower than the parser, which reads any run of ASCII whitespace.
SPACE_RULE = "space"
SPACE_BODY = rf"[ \t\n\r]{{0,{MAX_SPACE}}}"
#: Whitespace allowed between JSON tokens (RFC 8259: space, tab, LF, CR), bounded the same way.
JSON_WS_RULE = "json-ws"
JSON_WS_BODY = rf"[ \t\n\r]{{0,{MAX_SPACE}}}"
#: The same whitespace as a regex (llguidance's ``whitespace_pattern`` for ``%json`` schemas).
WS_REGEX = rf"[ \t\n\r]{{0,{MAX_SPACE}}}"

_INVALID_NAME_CHARS = re.compile(r"[^A-Za-z0-9-]+")
_IDENT = re.compile(r"[A-Za-z0-9-]+")

_LITERAL_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_CLASS_ESCAPES = {
    "\\": "\\\\", "]": "\\]", "[": "\\[", "^": "\\x5E", "-": "\\x2D", "\n": "\\n", "\r": "\\r", "\t": "\\t",
}


def _escape_control(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02X}" if code < 0x20 or code == 0x7F else ch


_LITERAL_TABLE = {c: f"\\x{c:02X}" for c in (*range(0x20), 0x7F)} | {ord(k): v for k, v in _LITERAL_ESCAPES.items()}


def literal(text: str) -> str:
    """Quote ``text`` as a GBNF string literal (non-ASCII is written as-is, controls as ``\\xHH``)."""
    return '"' + text.translate(_LITERAL_TABLE) + '"'


def class_char(ch: str) -> str:
    """Escape one character for use inside a GBNF character class ``[...]``."""
    return _CLASS_ESCAPES.get(ch) or _escape_control(ch)


def sanitize_rule_name(name: str) -> str:
    """Replace every run of characters outside ``[A-Za-z0-9-]`` by ``-`` (the reference's rule)."""
    cleaned = _INVALID_NAME_CHARS.sub("-", name)
    return cleaned or "rule"


_NOT_NAMES = re.compile(r'"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]|\{[^}]*\}')


def rule_references(body: str) -> list[str]:
    """Names of the rules referenced by a GBNF rule body (literals, classes and repetition bounds are skipped)."""
    return _IDENT.findall(_NOT_NAMES.sub(" ", body))


class RuleSet:
    """An ordered collection of named GBNF rules with collision-free name allocation.

    ``reserve(wanted, key)`` hands out a sanitized name; the same ``key`` always gets the same name,
    and a different key whose sanitized form collides gets a numbered suffix. ``define`` sets a body.
    ``render`` writes only the rules reachable from the root, sorted by name.
    """

    __slots__ = ("_bodies", "_by_key", "_taken")

    def __init__(self) -> None:
        self._bodies: dict[str, str] = {}
        self._by_key: dict[Hashable, str] = {}
        self._taken: set[str] = set()

    def reserve(self, wanted: str, key: Hashable | None = None) -> str:
        """Allocate (or look up) the rule name for ``key`` (defaults to ``wanted`` itself)."""
        key = ("name", wanted) if key is None else key
        existing = self._by_key.get(key)
        if existing is not None:
            return existing
        base = sanitize_rule_name(wanted)
        name, counter = base, 1
        while name in self._taken:
            counter += 1
            name = f"{base}-{counter}"
        self._taken.add(name)
        self._by_key[key] = name
        return name

    def lookup(self, key: Hashable) -> str | None:
        """The name reserved for ``key``, if any."""
        return self._by_key.get(key)

    def define(self, name: str, body: str) -> str:
        """Set the body of an already reserved (or fresh) rule name; returns the name."""
        self._taken.add(name)
        self._bodies[name] = body
        return name

    def add(self, wanted: str, body: str, key: Hashable | None = None) -> str:
        """Reserve a name for ``key`` and define it; a second call with the same key keeps the first body."""
        name = self.reserve(wanted, key)
        self._bodies.setdefault(name, body)
        return name

    def __contains__(self, name: object) -> bool:
        return name in self._bodies

    def body(self, name: str) -> str:
        """Body of a defined rule."""
        return self._bodies[name]

    @property
    def names(self) -> Iterable[str]:
        """Names of the defined rules, in definition order."""
        return self._bodies.keys()

    def reachable(
        self, roots: Iterable[str], references: Callable[[str], list[str]] = rule_references
    ) -> set[str]:
        """Names reachable from ``roots`` through the rule references ``references`` finds in a body."""
        seen: set[str] = set()
        stack = list(roots)
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            if name not in self._bodies:
                raise GrammarError(f"rule {name!r} is referenced but not defined")
            seen.add(name)
            stack.extend(references(self._bodies[name]))
        return seen

    def render(self, root: str = "root") -> str:
        """GBNF text: the rules reachable from ``root``, one per line, sorted by name."""
        keep = self.reachable([root])
        return "".join(f"{name} ::= {self._bodies[name]}\n" for name in sorted(keep))
