"""PEG → Lark (llguidance dialect): the same language as the GBNF, with llguidance-native forms.

Checked with llguidance itself. The Lark grammar must accept and reject what the GBNF grammar does (the acceptance
table of ``test_gbnf``), and where greedy lexing made llguidance stricter than GBNF semantics (content ending in a
delimiter prefix), the fused stop lexemes make the Lark grammar exact.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoparser import peg as p
from autoparser.check.recognizer import accepts
from autoparser.peg.lowering.lark import gbnf_body_to_lark
from tests.support import llg
from tests.support.llg import gbnf_accepts

from .test_gbnf import ACCEPTANCE, CHAT


def lark_accepts(parser: p.Parser, text: str, *, lazy: bool = False) -> bool:
    return llg.matches(llg.compile_lark(parser.to_lark(lazy=lazy)), text)


def rule_line(lark: str, name: str) -> str:
    return next(line for line in lark.splitlines() if line.split("[")[0].split(":")[0] == name)


@pytest.mark.parametrize(("name", "parser", "good", "bad"), ACCEPTANCE, ids=[a[0] for a in ACCEPTANCE])
def test_lark_accepts_what_the_gbnf_accepts(name: str, parser: p.Parser, good: list[str], bad: list[str]) -> None:
    for text in good:
        assert lark_accepts(parser, text), text
    for text in bad:
        assert not lark_accepts(parser, text), text


def test_lazy_grammar_is_the_trigger_rules() -> None:
    call = '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'
    assert lark_accepts(CHAT, call, lazy=True)
    assert not lark_accepts(CHAT, "Hello " + call, lazy=True)


class TestText:
    def test_start_rule_and_lowercase_names(self) -> None:
        parser = p.rule("Tool-Get", p.literal("a")) + p.rule("tool-get", p.literal("b"))
        lark = parser.to_lark()
        assert lark.splitlines()[:2] == ["%llguidance {}", "start: root"]
        names = [line.split(":")[0] for line in lark.splitlines()]
        assert names == [n.lower() for n in names] and len(set(names)) == len(names)
        assert lark_accepts(parser, "ab") and not lark_accepts(parser, "ba")

    def test_objects_and_arrays_are_the_gbnf_rules_scalars_native_json(self) -> None:
        """An object or array is spelled with the GBNF converter's rules, not ``%json``: llguidance's JSON lexer lets
        its own whitespace lead a ``%json`` container where the grammar before it is ambiguous (up to 64 characters
        more than GBNF allows). A scalar has no whitespace of its own, so it stays native."""
        schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 2}}, "required": ["n"]}
        parser = p.literal("<a>") + p.schema(p.json(), "args", schema) + "</a>"
        lark = parser.to_lark()
        assert rule_line(lark, "args") == 'args: "{" json-ws args-n-kv json-ws "}"' and "%json" not in lark
        scalar = {"type": "integer", "minimum": 2}
        lark = (p.literal("<a>") + p.schema(p.json(), "n", scalar) + "</a>").to_lark()
        native = {**scalar, "x-guidance": {"whitespace_flexible": False}}
        assert rule_line(lark, "n") == "n: %json " + json.dumps(native)
        assert lark_accepts(parser, '<a>{"n": 3}</a>')
        assert not lark_accepts(parser, '<a>{"n": 1}</a>')
        assert not lark_accepts(parser, '<a>{"m": 3}</a>')

    @pytest.mark.parametrize(
        ("schema", "text"),
        [
            ({"type": "object", "properties": {"n": {"type": "integer"}}}, '{"n": 1, "extra": 2}'),
            ({"type": "object", "properties": {"o": {"type": "object", "properties": {"a": {}}}}}, '{"o": {"b": 1}}'),
            ({"type": "array", "items": {"type": "object", "properties": {"a": {}}}}, '[{"a": 1, "b": 2}]'),
            ({"type": "object", "properties": {"n": {"type": "integer"}}}, '{"n":' + " " * 65 + "1}"),
            ({"type": "array"}, "[1," + "\n" * 65 + "2]"),
        ],
    )
    def test_json_is_the_language_gbnf_describes(self, schema: dict[str, object], text: str) -> None:
        """No extra keys unless the schema allows them, no more than 64 whitespace characters between tokens: what
        GBNF rejects, Lark rejects (llguidance would otherwise read a schema without additionalProperties as open,
        and JSON whitespace as unbounded)."""
        parser = p.schema(p.json(), "args", schema)
        assert not gbnf_accepts(parser.to_gbnf(), text)
        assert not lark_accepts(parser, text)
        within = text.replace(" " * 65, " " * 64).replace("\n" * 65, "\n" * 64)
        if within != text:
            assert gbnf_accepts(parser.to_gbnf(), within) and lark_accepts(parser, within)

    def test_open_objects_stay_open(self) -> None:
        schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": True}
        parser = p.schema(p.json(), "args", schema)
        text = '{"n": 1, "extra": 2}'
        assert gbnf_accepts(parser.to_gbnf(), text) and lark_accepts(parser, text)

    def test_generic_json_leaves(self) -> None:
        """A scalar leaf is native JSON; any value (objects, arrays) the GBNF rules."""
        lark = (p.json() + p.json_string()).to_lark()
        scalar = '{"type": "string", "x-guidance": {"whitespace_flexible": false}}'  # no whitespace in or before it
        assert f"json-string: %json {scalar}" in lark
        assert rule_line(lark, "root") == "root: value json-string"
        assert rule_line(lark, "value") == "value: object | array | string | number | boolean | null"

    def test_until_then_delimiter_is_one_stop_lexeme(self) -> None:
        parser = p.literal("<think>") + p.until("</think>") + p.space() + p.literal("</think>\n") + "x"
        lark = parser.to_lark()
        assert 'until-think[stop="</think>"]: /(?s:.*)/' in lark
        assert rule_line(lark, "root") == 'root: "<think>" until-think "\\n" "x"'

    def test_until_of_several_delimiters_is_a_stop_lexeme_holding_none_of_them(self) -> None:
        parser = p.until_one_of(["<a>", "<b>"]) + "<a>"
        lark = parser.to_lark()
        assert 'stop="<a>"' in lark and "& ~/" in lark
        assert lark_accepts(parser, "x<b<a>") and not lark_accepts(parser, "x<b><a>")
        assert lark_accepts(parser, "<a>") and lark_accepts(parser, "x<<a>") and not lark_accepts(parser, "x<a><a>")

    def test_until_after_an_optional_part_stays_an_exclusion_pattern(self) -> None:
        # One long lexeme would outrun the optional part's own first lexeme (llguidance never backs up).
        parser = p.optional(p.literal("[B]")) + p.until_one_of(["<a>", "<b>"]) + "<a>"
        assert "stop=" not in parser.to_lark()
        assert lark_accepts(parser, "[B]x<b<a>") and lark_accepts(parser, "x<a>")
        assert not lark_accepts(parser, "x<b><a>")

    def test_character_classes(self) -> None:
        names: dict[str, str] = {}
        assert gbnf_body_to_lark(r"[a-z\x2D_]+", names) == r"/[a-z\x{2D}\x{5F}]/+"
        assert gbnf_body_to_lark(r'[^\n\]"] "\\"', names) == r'/[^\x{A}\x{5D}\x{22}]/ "\\"'
        assert gbnf_body_to_lark("[一-龥]{1,3}", names) == "/[\\x{4E00}-\\x{9FA5}]/{1,3}"


def test_content_ending_in_a_delimiter_prefix_is_exact() -> None:
    """GBNF through llguidance rejects ``x</`` + ``</think>`` (greedy lexing); the stop lexeme gets it right."""
    parser = p.until("</think>") + "</think>"
    for text in ["x</</think>", "a<</think>", "<</think>", "x</thin</think>", "</think>"]:
        assert parser.parse(text).success
        assert lark_accepts(parser, text), text
    assert not lark_accepts(parser, "a</think></think>")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=" <>/tgkx", max_size=16))
def test_free_text_after_a_repeated_reasoning_end_is_exact(text: str) -> None:
    """A whole-output grammar after a prompt that closed the reasoning block: the end may come again, then free
    text holding no marker, then maybe the calls. The end and the whitespace before it are one lexeme, so the free
    text stays one lexeme too. (With a lexeme per character, as the until of markers whose first characters recur
    inside others is written, llguidance's greedy lexer held ``</`` to the start of ``</t>``.)"""
    calls = p.optional(p.space() + p.literal("<tg>") + "x" + p.literal("</tg>"))
    parser = p.optional(p.space() + p.literal("</t>")) + p.space() + p.until_one_of(["</t>", "<tg>", "tk"]) + calls
    lark = parser.to_lark()
    assert "lead-" in lark, lark
    assert lark_accepts(parser, text) == accepts(parser.to_gbnf(), text), text


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="<>/tagx", max_size=14), st.sampled_from(["</tag>", ">>>", "aa"]))
def test_fused_until_is_exact(text: str, delimiter: str) -> None:
    """until(D) D end: Lark accepts exactly what the parser accepts."""
    parser = p.until(delimiter) + delimiter + p.end()
    assert lark_accepts(parser, text) == parser.parse(text).success


def test_constrained_raw_string_is_a_stop_lexeme_with_its_regex() -> None:
    """A raw string schema followed by its closing literal is one lexeme: exact even when the value ends in a
    prefix of the closing marker (llguidance cannot back out of a half-matched marker)."""
    quote = '<|"|>'
    for schema, good, bad in [
        ({"type": "string", "maxLength": 5}, ["abc", "a<|", '<|"', ""], ["abcdef", 'a<|"|>b']),
        ({"type": "string", "enum": ["Paris", "Tokyo"]}, ["Paris", "Tokyo"], ["Pari", "ParisTokyo"]),
        ({"type": "string", "pattern": "^[a-z]+[0-9]{2}$"}, ["ab12"], ["ab1", "ab123", "12"]),
    ]:
        parser = p.literal("k:" + quote) + p.schema(p.until(quote), "v", schema, raw=True) + p.literal(quote) + "}"
        lark = parser.to_lark()
        assert '[stop="<|\\"|>"]' in lark, lark
        for value in good:
            assert lark_accepts(parser, f"k:{quote}{value}{quote}}}"), (schema, value)
        for value in bad:
            assert not lark_accepts(parser, f"k:{quote}{value}{quote}}}"), (schema, value)
