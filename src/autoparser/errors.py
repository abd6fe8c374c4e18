"""Exceptions raised by autoparser.

Every exception the library raises on purpose derives from :class:`AutoparserError`::

    AutoparserError
     ├── GrammarError (ValueError)   a parser graph or GBNF construct is malformed
     │    └── SchemaError            a JSON schema cannot be turned into a grammar (names the schema path)
     │         └── PatternError      a schema ``pattern`` uses regex syntax GBNF cannot express
     ├── TemplateError               a chat template failed to compile or render (names template and line)
     └── ParseError                  input does not match a parser (only from strict parsing)

Misconfiguration errors also subclass :class:`ValueError` so generic handlers catch them.
"""

from __future__ import annotations

__all__ = ["AutoparserError", "GrammarError", "ParseError", "PatternError", "SchemaError", "TemplateError"]


class AutoparserError(Exception):
    """Base class of every error raised by autoparser."""


class GrammarError(AutoparserError, ValueError):
    """A parser graph or grammar construct is malformed (unknown rule, bad character class, ...)."""


class SchemaError(GrammarError):
    """A JSON schema cannot be converted to a grammar.

    ``path`` is the JSON-pointer-like location of the offending sub-schema (``"#/properties/x"``).
    """

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"schema {path}: {message}")
        self.path = path
        self.reason = message


class PatternError(SchemaError):
    """A regular expression (a schema ``pattern``) uses syntax that cannot become GBNF."""

    def __init__(self, path: str, pattern: str, position: int, message: str) -> None:
        super().__init__(path, f"pattern {pattern!r} at offset {position}: {message}")
        self.pattern = pattern
        self.position = position


class TemplateError(AutoparserError):
    """A chat template failed to compile or render.

    ``template`` names the template, ``line`` is the Jinja source line when known.
    """

    def __init__(self, template: str, message: str, line: int | None = None) -> None:
        where = f"{template}, line {line}" if line is not None else template
        super().__init__(f"template {where}: {message}")
        self.template = template
        self.line = line
        self.reason = message


class ParseError(AutoparserError):
    """Input did not match a parser.

    Carries the furthest position reached, what was expected there, and renders a caret excerpt
    lazily in ``str()`` so that building the error stays cheap.
    """

    def __init__(self, text: str, pos: int, expected: frozenset[str] | set[str] = frozenset()) -> None:
        super().__init__(text, pos)
        self.text = text
        self.pos = pos
        self.expected = frozenset(expected)

    @property
    def line(self) -> int:
        """1-based line number of :attr:`pos`."""
        return self.text.count("\n", 0, self.pos) + 1

    @property
    def column(self) -> int:
        """1-based column (code points) of :attr:`pos`."""
        return self.pos - (self.text.rfind("\n", 0, self.pos) + 1) + 1

    def __str__(self) -> str:
        want = "expected " + " or ".join(sorted(self.expected)) if self.expected else "unexpected input"
        line_start = self.text.rfind("\n", 0, self.pos) + 1
        line_end = self.text.find("\n", self.pos)
        if line_end < 0:
            line_end = len(self.text)
        excerpt = self.text[line_start:line_end]
        found = repr(self.text[self.pos : self.pos + 20]) if self.pos < len(self.text) else "end of input"
        caret = " " * len(excerpt[: self.pos - line_start].expandtabs()) + "^"
        return (
            f"{want} at line {self.line}, column {self.column} (position {self.pos}), found {found}\n"
            f"{excerpt.expandtabs()}\n{caret}"
        )
