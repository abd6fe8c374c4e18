"""Jinja's compile of a template, made cheaper without changing what it produces.

A cold template pays Jinja's whole compile (lex, parse, code generation, Python's ``compile()``) before its first
reply, and that compile is most of the cold cost (bench/cold_bench.py). Jinja's code generator walks the tree many
times over — ``find_all`` per loop, a symbol analysis per branch, a name search per macro and loop — and every walk
asks each node for its children through two nested generators (``iter_fields``, ``iter_child_nodes``) that read the
fields again each time. :func:`freeze_children` gives each node of a finished tree its children once, as a tuple:
the code generator then walks the same nodes in the same order, and its output is the same string, in about three
quarters of the time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterator
from functools import partial
from typing import Any

import jinja2.lexer
import jinja2.nodes
from jinja2.lexer import (
    TOKEN_BLOCK_BEGIN,
    TOKEN_COMMENT_BEGIN,
    TOKEN_DATA,
    TOKEN_OPERATOR,
    TOKEN_VARIABLE_BEGIN,
    TOKEN_WHITESPACE,
    newline_re,
    whitespace_re,
)

__all__ = ["FastLexer", "fast_lexer", "freeze_children"]

_Node = jinja2.nodes.Node
_MISSING = object()


def freeze_children(tree: jinja2.nodes.Node) -> None:
    """Give every node of ``tree`` a fixed ``iter_child_nodes`` (an attribute of the node, so Jinja's class is left
    alone): the tree must not change afterwards. Iterative, as the tree may be deep."""
    stack = [tree]
    while stack:
        node = stack.pop()
        fields: list[tuple[str, Any]] = []
        children: list[jinja2.nodes.Node] = []
        for name in node.fields:
            value = getattr(node, name, _MISSING)  # (Jinja skips a field that is not set)
            if value is _MISSING:
                continue
            fields.append((name, value))
            if isinstance(value, list):
                children.extend(item for item in value if isinstance(item, _Node))
            elif isinstance(value, _Node):
                children.append(value)
        # A partial of a module function holds the children and fields, not the node: no reference cycle.
        node.iter_child_nodes = partial(_children, tuple(children), tuple(fields))  # type: ignore[method-assign]
        stack.extend(children)


def _children(
    children: tuple[jinja2.nodes.Node, ...],
    fields: tuple[tuple[str, Any], ...],
    exclude: Container[str] | None = None,
    only: Container[str] | None = None,
) -> Iterator[jinja2.nodes.Node]:
    """``Node.iter_child_nodes``: all the children, or those of the fields ``exclude`` and ``only`` select."""
    if exclude is None and only is None:
        return iter(children)
    return _selected(fields, exclude, only)


def _selected(
    fields: tuple[tuple[str, Any], ...], exclude: Container[str] | None, only: Container[str] | None
) -> Iterator[jinja2.nodes.Node]:
    # Jinja's rule: a field is taken when it is not excluded, or when it is one of ``only``.
    for name, value in fields:
        if (exclude is not None and name not in exclude) or (only is not None and name in only):
            if isinstance(value, list):
                yield from (item for item in value if isinstance(item, _Node))
            elif isinstance(value, _Node):
                yield value


class FastLexer(jinja2.lexer.Lexer):
    """Jinja's lexer with a faster tokenizer for what templates are made of (text, ``{{ }}``, ``{% %}``, ``{# #}``).

    Jinja tries its rules for a tag one after the other at each position, in Python: about 5 µs a token, most of a
    template's parse. Here the rules of a state are one alternation of Jinja's own patterns, in Jinja's order, so
    one match finds the rule Jinja's loop would; the root and comment rules are Jinja's as they are. Whitespace and
    comment tokens, which Jinja's ``wrap`` drops, are not made at all. Anything else — a raw block, line statements,
    a character no rule takes, unbalanced brackets, a ``state`` to start in — goes to Jinja's lexer, from the start,
    so that its errors stay Jinja's. tests/template/test_compiling.py compares the tokens with Jinja's.
    """

    def __init__(self, environment: jinja2.Environment) -> None:
        super().__init__(environment)
        self._supported = environment.line_statement_prefix is None and environment.line_comment_prefix is None
        root, rest = self.rules["root"]
        self._root, self._rest = root.pattern, rest.pattern
        index = root.pattern.groupindex
        self._begins = sorted(index.items(), key=lambda item: item[1])  # (state, group): Jinja takes the first set
        self._comment = self.rules[TOKEN_COMMENT_BEGIN][0].pattern
        self._tags = {state: _TagRules(self.rules[state]) for state in (TOKEN_BLOCK_BEGIN, TOKEN_VARIABLE_BEGIN)}

    def tokenize(
        self, source: str, name: str | None = None, filename: str | None = None, state: str | None = None
    ) -> jinja2.lexer.TokenStream:
        if state is None and self._supported:
            try:
                tokens = self._tokens(source)
            except _Unsupported:
                pass
            else:
                return jinja2.lexer.TokenStream(self.wrap(tokens, name, filename), name, filename)
        return super().tokenize(source, name, filename, state)

    def _tokens(self, source: str) -> list[tuple[int, str, str]]:
        """``tokeniter``'s tokens, without the whitespace and comment tokens ``wrap`` drops."""
        lines = newline_re.split(source)[::2]
        if not self.keep_trailing_newline and lines[-1] == "":
            del lines[-1]
        source = "\n".join(lines)
        tokens: list[tuple[int, str, str]] = []
        append = tokens.append
        pos, end, lineno, line_starting = 0, len(source), 1, True
        while pos < end:
            match = self._root.match(source, pos)
            if match is None:  # text to the end
                append((lineno, TOKEN_DATA, source[pos:]))
                break
            state, group = next((state, group) for state, group in self._begins if match.group(group) is not None)
            if state not in self._tags and state != TOKEN_COMMENT_BEGIN:
                raise _Unsupported  # a raw block
            text = match.group(1)
            lineno_after = lineno + text.count("\n")
            text = self._strip(text, match.group(group + 1), state, line_starting)
            if text:
                append((lineno, TOKEN_DATA, text))
            lineno = lineno_after
            pos = match.end()
            if state == TOKEN_COMMENT_BEGIN:
                comment = self._comment.match(source, pos)
                if comment is None:
                    raise _Unsupported  # a comment left open
                lineno += comment.group().count("\n")
                line_starting = comment.group().endswith("\n")
                pos = comment.end()
                continue
            append((lineno, state, match.group(group)))  # (a tag's opening holds no newline)
            pos, lineno = self._tags[state].read(source, pos, lineno, append)
            line_starting = source[pos - 1] == "\n"
        return tokens

    def _strip(self, text: str, sign: str, state: str, line_starting: bool) -> str:
        """The text before a tag, as the tag's whitespace control leaves it."""
        if sign == "-":
            return text.rstrip()
        if sign != "+" and self.lstrip_blocks and state != TOKEN_VARIABLE_BEGIN:
            start = text.rfind("\n") + 1  # the text's last line, before the tag
            if (start > 0 or line_starting) and whitespace_re.fullmatch(text, start):
                return text[:start]
        return text


_CLOSERS = {"{": "}", "(": ")", "[": "]"}


class _TagRules:
    """The rules inside a tag as one pattern, and the same without the tag's end (Jinja skips the end while
    brackets are open)."""

    def __init__(self, rules: list[Any]) -> None:
        self.end = rules[0].tokens
        self.every = _alternatives(rules)
        self.inner = _alternatives(rules[1:])

    def read(
        self, source: str, pos: int, lineno: int, append: Callable[[tuple[int, str, str]], None]
    ) -> tuple[int, int]:
        """Read the tag from ``pos`` to its end; the position after it and the line there."""
        brackets: list[str] = []
        while True:
            match = (self.inner if brackets else self.every).match(source, pos)
            if match is None:
                if pos >= len(source):
                    return pos, lineno  # the text ended inside the tag: the parser says so
                raise _Unsupported  # a character no rule takes
            kind, value = match.lastgroup, match.group()
            if kind == TOKEN_OPERATOR:
                if value in _CLOSERS:
                    brackets.append(_CLOSERS[value])
                elif value in ("}", ")", "]") and (not brackets or brackets.pop() != value):
                    raise _Unsupported  # unbalanced
            if kind != TOKEN_WHITESPACE:
                append((lineno, kind, value))  # type: ignore[arg-type]
            lineno += value.count("\n")
            pos = match.end()
            if kind == self.end:
                return pos, lineno


class _Unsupported(Exception):
    """What :class:`FastLexer` leaves to Jinja's own lexer (which then tokenizes the whole source)."""


_FLAGS = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"), (re.VERBOSE, "x"))


def _alternatives(rules: list[Any]) -> re.Pattern[str]:
    """One pattern trying Jinja's ``rules`` in their order at one position, each in a group named by its token
    (the outermost group closes last, so ``lastgroup`` names it): an alternation takes the first alternative that
    matches, as Jinja's loop over the rules does. Each pattern keeps its own flags (a verbose one ends in a
    newline, which closes a trailing comment)."""
    parts = []
    for rule in rules:
        pattern = rule.pattern
        flags = "".join(letter for flag, letter in _FLAGS if pattern.flags & flag)
        body = f"{pattern.pattern}\n" if pattern.flags & re.VERBOSE else pattern.pattern
        parts.append(f"(?P<{rule.tokens}>(?{flags}:{body}))" if flags else f"(?P<{rule.tokens}>{body})")
    return re.compile("|".join(parts))


_LEXERS: dict[tuple[Any, ...], FastLexer] = {}


def fast_lexer(environment: jinja2.Environment) -> FastLexer:
    """The :class:`FastLexer` for ``environment``'s syntax settings (made once per settings, as Jinja's are)."""
    key = (
        environment.block_start_string,
        environment.block_end_string,
        environment.variable_start_string,
        environment.variable_end_string,
        environment.comment_start_string,
        environment.comment_end_string,
        environment.line_statement_prefix,
        environment.line_comment_prefix,
        environment.trim_blocks,
        environment.lstrip_blocks,
        environment.newline_sequence,
        environment.keep_trailing_newline,
    )
    lexer = _LEXERS.get(key)
    if lexer is None:
        lexer = _LEXERS[key] = FastLexer(environment)
    return lexer
