"""Calls whose arguments are a dict in the template's own syntax (TAG_WITH_DICT, Gemma 4's family).

``<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:2,on:true,tags:[<|"|>a<|"|>],cfg:{k:<|"|>v<|"|>}}<tool_call|>``:
keys are bare words, strings are raw text between the template's delimiter tokens (nothing is escaped), everything
else is a bare literal; the analysis learns the tokens and separators (:class:`~...analysis.model.DictValues`). The
parser checks the dict's structure with the PEG engine's iterative scanner (a dict flavor of
:mod:`autoparser.peg.json_scan`: any depth, resumable while streaming) and tags the whole dict as TOOL_ARGS;
:func:`args_to_json` turns a complete dict into JSON text. While a call is incomplete its arguments are held back (see
the mapper), because a bare literal cannot be converted until it has ended; a call whose dict breaks keeps it as
written, with a warning.

Gemma 4's dedicated format (formats/gemma4/) reads its calls with these same pieces, under its own tokens.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable

from ... import peg as p
from ...analysis.model import DictValues, ToolsAnalysis
from ...peg.json_scan import OK, DictSyntax, dict_flavor, scan_json
from .. import tags
from ..request import ParseRequest
from . import undeclared

__all__ = ["GEMMA", "args_converter", "args_to_json", "dict_call", "dict_calls", "syntax_of"]

GEMMA = DictSyntax()  # Gemma 4's own: ``<|"|>`` strings, ``:`` and ``,``


def syntax_of(values: DictValues) -> DictSyntax:
    """The scanner's view of the analysed dict tokens."""
    return DictSyntax(values.quote_open, values.quote_close, values.colon, values.comma)


def dict_call(
    prefix: p.Parser, request: ParseRequest, syntax: DictSyntax, *, name_prefix: str = "", space: bool = True
) -> p.Parser:
    """One call (untagged): ``prefix`` (the call's opening markup), the name — ``name_prefix`` then a declared name,
    or an undeclared identifier, atomic and followed by ``{`` — which commits the call, then the dict (TOOL_ARGS).
    ``space``: whitespace may separate the prefix and the name prefix."""
    by_length = sorted(request.tools, key=lambda t: -len(t.name))
    name_end = p.peek(p.space() + "{")
    declared = p.choice(*(p.literal(t.name) + name_end for t in by_length)) if by_length else None
    other_name = p.tag(tags.TOOL_NAME, p.chars(undeclared.IDENTIFIER_CHARS))
    other = undeclared.not_declared(request.tools, name_end) + other_name + name_end
    names = [p.tag(tags.TOOL_NAME, declared)] if declared is not None else []
    names += undeclared.alternative(request, other)
    # (a prefix written with a space before the name, ``func get_weather{``, takes any whitespace there)
    lead = p.literal(name_prefix.rstrip()) if name_prefix.strip() else p.eps()
    if name_prefix.strip() and name_prefix != name_prefix.rstrip():
        lead = lead + p.space()
    head = prefix + (p.space() if space else p.eps()) + p.atomic(lead + p.choice(*names)) + p.commit()
    # The dict is read by the iterative scanner: any nesting depth, resumable while streaming.
    return head + p.space() + p.tag(tags.TOOL_ARGS, p.json_object(dict_flavor(syntax)))


def dict_calls(tools: ToolsAnalysis, request: ParseRequest) -> p.Parser:
    """One call of the generic TAG_WITH_DICT format, without its per-call or section markers (assemble.py adds
    them): the name prefix (``call:``), the name, the dict."""
    name_prefix = tools.function.name_prefix.lstrip()
    return dict_call(p.eps(), request, syntax_of(tools.dict_values), name_prefix=name_prefix)


@functools.lru_cache(maxsize=32)
def _tokenizer(syntax: DictSyntax) -> re.Pattern[str]:
    punct = "".join(re.escape(c) for c in ("{", "}", "[", "]", syntax.colon, syntax.comma))
    bare = "".join(re.escape(c) for c in sorted({"{", "}", "[", "]", syntax.colon, syntax.comma, syntax.quote_open[0]}))
    return re.compile(
        rf"""{re.escape(syntax.quote_open)}(?P<quoted>.*?){re.escape(syntax.quote_close)}
          | (?P<json>"(?:[^"\\]|\\.)*")
          | (?P<punct>[{punct}])
          | (?P<space>[ \t\n\r\v\f]+)
          | (?P<bare>[^{bare}]+)""",
        re.DOTALL | re.VERBOSE,
    )


_SPACE = " \t\n\r\v\f"  # what p.space() skips (not Unicode whitespace: that is part of a bare literal)
_PYTHON_LITERALS = {"True": "true", "False": "false", "None": "null"}  # Gemma renders None as `None`


def args_to_json(text: str, syntax: DictSyntax = GEMMA) -> str:
    """A complete argument dict as JSON text (key order and number spelling kept).

    ``text`` is what the call grammar accepted; anything else raises ValueError. Every string token (quoted or
    bare) is a key when the next token is the key separator; a bare literal stays as written if it is a JSON scalar
    (``True``/``False``/``None`` are read as JSON's), anything else is a string."""
    punctuation = {"{": "{", "}": "}", "[": "[", "]": "]", syntax.colon: ": ", syntax.comma: ", "}
    tokens: list[tuple[str, str]] = []
    pos = 0
    for match in _tokenizer(syntax).finditer(text):
        if match.start() != pos:
            break
        pos = match.end()
        kind = match.lastgroup or ""
        if kind != "space":
            tokens.append((kind, match.group(kind)))
    if pos != len(text):
        raise ValueError(f"not an argument dict at position {pos}: {text!r}")
    pieces: list[str] = []
    colon = ("punct", syntax.colon)
    for index, (kind, value) in enumerate(tokens):
        if kind == "punct":
            pieces.append(punctuation[value])
            continue
        is_key = index + 1 < len(tokens) and tokens[index + 1] == colon
        pieces.append(_scalar(kind, value, is_key))
    result = "".join(pieces)
    # The grammar guarantees JSON; check it without recursion (nesting may be deep) rather than hand out broken JSON.
    if scan_json(result, 0, "object", "json", False) != (OK, len(result)):
        raise ValueError(f"not an argument dict: {text[:80]!r}")
    return result


def args_converter(syntax: DictSyntax) -> Callable[[str, str], str]:
    """The mapper's converter (``convert_args(tool_name, text)``): every tool's dict reads the same way. Its
    ``close(text)`` tells the mapper how to close a dict cut off (mapper._repaired_conversion)."""

    def convert(name: str, text: str) -> str:
        del name  # the values carry their own types
        return args_to_json(text, syntax)

    convert.close = functools.partial(close_dict, syntax=syntax)  # type: ignore[attr-defined]
    return convert


def close_dict(text: str, syntax: DictSyntax = GEMMA) -> tuple[int, str]:
    """For a dict cut off: how much of ``text`` to keep (without a delimiter token cut off at its end) and what
    closes it (the open string's delimiter, then the open brackets)."""
    stack: list[str] = []
    quote = ""  # "token": inside delimiter tokens; '"': inside a JSON string
    i, n = 0, len(text)
    while i < n:
        if quote == "token":
            found = text.find(syntax.quote_close, i)
            if found < 0:
                break
            i, quote = found + len(syntax.quote_close), ""
            continue
        char = text[i]
        if quote == '"':
            i += 2 if char == "\\" else 1
            quote = "" if char == '"' else quote
            continue
        if text.startswith(syntax.quote_open, i):
            i, quote = i + len(syntax.quote_open), "token"
            continue
        if char == '"':
            quote = '"'
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
        elif stack and char == stack[-1]:
            stack.pop()
        i += 1
    token = syntax.quote_close if quote == "token" else syntax.quote_open if not quote else ""
    cut = next((k for k in range(len(token) - 1, 0, -1) if text.endswith(token[:k])), 0)
    closers = syntax.quote_close if quote == "token" else quote
    return n - cut, closers + "".join(reversed(stack))


def _scalar(kind: str, value: str, is_key: bool) -> str:
    """One key or leaf value as JSON text."""
    if kind == "quoted":
        return _ENCODE(value)
    if kind == "json":
        try:
            return _ENCODE(_DECODE(value))
        except ValueError:  # e.g. a bad escape: keep the text as written
            return _ENCODE(value)
    bare = value.strip(_SPACE)
    if is_key:
        return _ENCODE(bare)
    if bare in _PYTHON_LITERALS:
        return _PYTHON_LITERALS[bare]
    if bare in _JSON_LITERALS or _JSON_NUMBER.match(bare):
        return bare
    return _ENCODE(bare)  # anything else (NaN and Infinity included: not JSON) is a string


# One encoder and decoder for every token: json.dumps/loads with options build a new one per call.
_ENCODE = json.JSONEncoder(ensure_ascii=False).encode
_DECODE = json.JSONDecoder(strict=False).decode
_JSON_LITERALS = frozenset({"true", "false", "null"})
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?\Z")
