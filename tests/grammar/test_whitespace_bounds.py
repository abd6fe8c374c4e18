"""Whitespace in a grammar is bounded, in every dialect, before every kind of argument value.

Unbounded whitespace is how constrained decoding loops: a model that may write another space always can. GBNF
bounds each run (``space``, ``json-ws``: 64 characters); the Lark grammar must bound the same runs, including the
whitespace llguidance's own JSON lexer lets lead a ``%json`` value. Left to its defaults, that lexer accepted any
amount of whitespace before a scalar argument once the call section could repeat (found by the grammar agreement
walks: the GBNF rejected what the Lark grammar let through).

The calls are the template's own spelling with a run of ``k`` spaces put before one argument's value; llguidance
judges the Lark grammar, the strict recognizer the GBNF.
"""

from __future__ import annotations

from typing import Any

import pytest

from autoparser import ChatTemplate
from autoparser.check.recognizer import accepts

from ..support import llg

USER = [{"role": "user", "content": "hi"}]
VALUES: dict[str, tuple[dict[str, Any], str]] = {
    "integer": ({"type": "integer"}, "1"),
    "boolean": ({"type": "boolean"}, "true"),
    "number": ({"type": "number"}, "2.5"),
    "object": ({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}, '{"a": 1}'),
    "array": ({"type": "array", "items": {"type": "integer"}}, "[1, 2]"),
}
# (template, how a call with the value after `k` spaces is written, the whitespace the template puts there itself)
FORMATS: dict[str, tuple[str, str]] = {
    "Qwen3.5-4B": (
        "<tool_call>\n<function=f>\n<parameter=v>\n{pad}{value}\n</parameter>\n</function>\n</tool_call>",
        "\n",
    ),
    "ByteDance-Seed-OSS": (
        "<seed:tool_call>\n<function=f>\n<parameter=v>{pad}{value}</parameter>\n</function>\n</seed:tool_call>",
        "",
    ),
    "GLM-4.7-Flash": ("<tool_call>f<arg_key>v</arg_key><arg_value>{pad}{value}</arg_value></tool_call>", ""),
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use": (
        '<tool_call>\n{{"name": "f", "arguments": {{"v":{pad}{value}}}}}\n</tool_call>',
        "",
    ),
}


def _grammars(template: str, schema: dict[str, Any]) -> tuple[str, str]:
    tool = {
        "type": "function",
        "function": {"name": "f", "parameters": {"type": "object", "properties": {"v": schema}, "required": ["v"]}},
    }
    params = ChatTemplate.load(template).apply(USER, tools=[tool], tool_choice="required", enable_thinking=False)
    assert params.grammar and params.lark_grammar
    return params.grammar, llg.compile_lark(params.lark_grammar)


# llguidance's JSON lexer lets its own whitespace (``whitespace_pattern``) lead a ``%json`` object or array where the
# grammar before it is ambiguous (a repeated call section, optional arguments): 128 characters in all where GBNF
# allows 64. So objects and arrays are spelled in Lark with the GBNF's own rules, and a scalar ``%json`` gets no
# whitespace at all: the dialects agree exactly (test_the_dialects_bound_it_alike).


def _seen(template: str, kind: str) -> tuple[int, dict[int, tuple[bool, bool]]]:
    """For runs of ``k`` spaces before the value: (GBNF accepts, Lark accepts); and the longest run the grammar's
    own whitespace takes there."""
    schema, value = VALUES[kind]
    gbnf, lark = _grammars(template, schema)
    shape, own = FORMATS[template]
    edge = 64 - len(own)
    seen = {}
    for k in (0, 1, 40, edge, edge + 1, 100, 127, 128, 129, 300, 2000):
        text = shape.format(pad=" " * k, value=value)
        seen[k] = (accepts(gbnf, text), llg.matches(lark, text))
    return edge, seen


@pytest.mark.parametrize("kind", sorted(VALUES))
@pytest.mark.parametrize("template", sorted(FORMATS))
def test_whitespace_before_a_value_is_bounded(template: str, kind: str) -> None:
    edge, seen = _seen(template, kind)
    assert seen[0] == (True, True)
    assert seen[edge][0] and not seen[edge + 1][0], f"GBNF's bound is not 64: {seen}"
    assert not any(seen[k][1] for k in (129, 300, 2000)), f"Lark lets unbounded whitespace lead the value: {seen}"


@pytest.mark.parametrize("kind", sorted(VALUES))
@pytest.mark.parametrize("template", sorted(FORMATS))
def test_the_dialects_bound_it_alike(template: str, kind: str) -> None:
    _, seen = _seen(template, kind)
    assert all(gbnf_ok == lark_ok for gbnf_ok, lark_ok in seen.values()), f"the dialects disagree: {seen}"
