"""Exceptions raised by autoparser.

Every exception the library raises on purpose derives from :class:`AutoparserError`::

    AutoparserError
     ├── GrammarError (ValueError)   a parser graph or GBNF construct is malformed
     │    └── SchemaError            a JSON schema cannot be turned into a grammar (names the schema path)
     │         └── PatternError      a schema ``pattern`` uses regex syntax GBNF cannot express
     ├── TemplateError               a chat template failed to compile or render (names template and line)
     │    ├── RenderLimitError       a render ran past its time or size limit (RenderLimits)
     │    └── TemplateDecodeError    a template file is not UTF-8 (also a UnicodeDecodeError)
     ├── RequestError (ValueError)   a chat request is malformed or asks for what the template cannot render
     │                               (names the message or field)
     ├── ParseError                  input does not match a parser (only from strict parsing)
     └── ResponseTemplateError       an analysis has no transformers response template (NotImplementedError)

Misconfiguration errors also subclass :class:`ValueError` so generic handlers catch them.
"""

from __future__ import annotations

__all__ = [
    "AutoparserError",
    "GrammarError",
    "ParseError",
    "PatternError",
    "RenderLimitError",
    "RequestError",
    "ResponseTemplateError",
    "SchemaError",
    "TemplateDecodeError",
    "TemplateError",
]


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


class RequestError(AutoparserError, ValueError):
    """A chat request cannot be rendered as sent: a malformed message or tool, or content the template has no way to
    show (an image part for a template that reads strings). ``field`` locates it (``"messages[1].content[2]"``,
    ``"tools"``), so a server can answer with a 400 naming it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = message


class RenderLimitError(TemplateError):
    """A render ran past its time or size limit (``autoparser.template.RenderLimits``).

    ``limit`` names the ``RenderLimits`` field that was exceeded: ``"timeout"``, ``"max_output"`` or
    ``"analysis_timeout"``. Unlike other template errors this one says nothing about the inputs: the template is
    hostile or broken (or the limit too low), so analysis stops at the first one instead of trying further probe
    conversations.
    """

    def __init__(self, template: str, message: str, line: int | None = None, *, limit: str) -> None:
        super().__init__(template, message, line)
        self.limit = limit


class TemplateDecodeError(TemplateError, UnicodeDecodeError):
    """A template file is not valid UTF-8 (names the file and the line of the first bad byte).

    Also a :class:`UnicodeDecodeError` (with its ``encoding``/``object``/``start``/``end`` fields), so code
    written when ``from_file`` let the decode error escape — ``except UnicodeDecodeError`` — keeps working.
    """

    def __init__(self, template: str, error: UnicodeDecodeError) -> None:
        UnicodeDecodeError.__init__(self, error.encoding, error.object, error.start, error.end, error.reason)
        line = error.object.count(b"\n", 0, error.start) + 1
        message = f"not valid UTF-8: byte {error.object[error.start]:#04x} at offset {error.start} ({error.reason})"
        # TemplateError.__init__ would pass one argument on to UnicodeDecodeError.__init__, which takes five.
        self.args = (f"template {template}, line {line}: {message}",)
        self.template = template
        self.line = line
        self.reason = message

    def __str__(self) -> str:
        return str(self.args[0])  # UnicodeDecodeError's own __str__ would describe only the byte


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


class ResponseTemplateError(AutoparserError, NotImplementedError):
    """A template's output format cannot be written as a Hugging Face transformers ``response_template``.

    Raised by ``TemplateAnalysis.to_response_template()`` for dedicated formats and for generic shapes the
    declarative format cannot express; the message says why. Also a :class:`NotImplementedError`: the format is
    parsed by autoparser, just not describable to transformers.
    """
