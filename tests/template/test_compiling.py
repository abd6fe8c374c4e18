"""The cheaper compile (template/compiling.py) changes nothing Jinja produces: the same tokens, the same errors, the
same generated code, the same children under ``exclude``/``only``, for every template the project holds."""

from __future__ import annotations

from pathlib import Path

import jinja2
import jinja2.lexer
import jinja2.nodes
import jinja2.parser
import pytest

from autoparser.template import bundled_templates
from autoparser.template.compiling import FastLexer, freeze_children
from autoparser.template.environment import make_environment
from autoparser.template.guards import add_guards

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "src/autoparser/templates").glob("*.jinja")) + sorted((ROOT / "tests/data").rglob("*.jinja"))

# Whitespace control on every side, trim/lstrip corners, comments, numbers, strings with escapes and newlines,
# brackets inside tags, and what goes to Jinja's lexer: raw blocks, unbalanced brackets, characters no rule takes,
# tags and comments left open, identifiers Jinja refuses.
CASES = [
    "",
    "text only\n",
    "a\r\nb\rc\n\n",
    "{{ x }}",
    "  {% if a %}\n  x\n  {% endif %}\n",
    "  {%+ if a %}x{% endif %}",
    "x  {%- if a -%}  y  {%- endif -%}  \n z",
    "{#- c -#}  x",
    "x\n  {# c #}\n y",
    "x\n  {#- c #}\n y",
    "{# a\nb #}{{ a }}",
    "  {{- a -}}  ",
    "  {{ a }}\n{% set x = 1 %}   \n",
    "{%- if (a) -%} {{ {'a': [1, 2.5e3, 0x1f, 0o7, 0b1, 1_000, 1.5_0]} }}{% endif %}",
    "{{ 'a\\nb' ~ \"c\\\"d\" ~ 'multi\nline' }}",
    "{{ '\\u00e9\\t' }}",
    "{{ a.b[0] | c(d=1, *e, **f) }}{{ x if y else z }}",
    "{{ a // b ** c != d >= e <= f }}",
    "{{ 1.5.x }}",
    "{% set x = {'%}': '}}'} %}{{ x['%}'] }}",
    "{{ ({'a': 1}) }}",
    "{% raw %}{{ x }}{% endraw %}",
    "{{ (a }}",
    "{{ a) }}",
    "{{ [a) }}",
    "{{ $ }}",
    "{{ a",
    "{% if a",
    "{# open",
    "{{ a\u00b7b }}",
    "{{ \u00e9t\u00e9 }}",
    "x\n" * 3 + "{{ 1 +\n 2 }}\n{% for i in x %}\n{{ i }}\n{% endfor %}",
]


def tokens(lexer: jinja2.lexer.Lexer, source: str) -> object:
    """Every token, or the error the lexer raises (its type, message and line)."""
    try:
        return [tuple(token) for token in lexer.tokenize(source)]
    except jinja2.TemplateSyntaxError as err:
        return ("error", err.message, err.lineno)


@pytest.mark.parametrize("source", [p.read_text(encoding="utf-8") for p in FILES] + CASES)
def test_fast_lexer_tokens_are_jinjas(source: str) -> None:
    env = make_environment()
    fast = env.lexer
    assert isinstance(fast, FastLexer)  # the environment tokenizes with it
    assert tokens(fast, source) == tokens(jinja2.lexer.get_lexer(env), source)


def test_the_parser_reads_the_fast_lexers_tokens() -> None:
    env = make_environment()
    source = "{% for m in messages %}{{- m.content }}{% endfor %}"
    stream = jinja2.parser.Parser(env, source).stream
    assert stream.current.type == "block_begin"
    assert isinstance(env.lexer, FastLexer)


@pytest.mark.parametrize("name", bundled_templates())
def test_frozen_children_give_jinjas_code_and_children(name: str) -> None:
    env = make_environment()
    source = (ROOT / "src/autoparser/templates" / f"{name}.jinja").read_text(encoding="utf-8")
    plain, frozen = (jinja2.parser.Parser(env, source).parse() for _ in range(2))
    add_guards(plain)
    add_guards(frozen)
    freeze_children(frozen)
    nodes = [frozen]
    for node in nodes:  # every node, with and without a selection of fields (the code generator uses both)
        fields = node.fields
        selections = [{}, {"only": fields[:1]}, {"exclude": fields[:1]}, {"exclude": fields[1:], "only": fields[:1]}]
        for selection in selections:
            assert list(node.iter_child_nodes(**selection)) == list(
                jinja2.nodes.Node.iter_child_nodes(node, **selection)
            )
        nodes.extend(jinja2.nodes.Node.iter_child_nodes(node))
    assert "iter_child_nodes" in frozen.__dict__  # the instance has its own; Jinja's class is untouched
    assert "iter_child_nodes" not in jinja2.nodes.Template.__dict__
    assert env.compile(frozen, raw=True) == env.compile(plain, raw=True)
