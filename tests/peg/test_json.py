"""JSON and Python-literal parsers: complete values, cut-off values, malformed values."""

from __future__ import annotations

import json

import pytest

from autoparser import peg as p
from autoparser.peg import Status

S, F, M = Status.SUCCESS, Status.FAIL, Status.NEED_MORE_INPUT

VALUE_CASES = [
    ('{"a": [1, 2.5e-3, "x\\n\\u00e9"], "b": {"c": null}, "d": true}', S, S, None),
    ('{ }', S, S, None),
    ("[]", S, S, None),
    ('  {"a": 1}', F, F, None),  # values do not skip leading whitespace
    ('{"a": 1}  tail', S, S, 8),  # nor consume trailing text
    ('"plain"', S, S, None),
    ('"tab\tinside"', S, S, None),  # raw control characters are tolerated, as models emit them
    ("-0.5E+10", S, M, None),  # a number at the end never commits in partial mode
    ("12,", S, S, 2),
    ("true", S, S, None),
    ("false", S, S, None),
    ("null", S, S, None),
    ('{"a": 1,}', F, F, None),
    ('{"a" 1}', F, F, None),
    ("{'a': 1}", F, F, None),
    ("[1 2]", F, F, None),
    ("[01]", F, F, None),
    ("01", F, F, None),
    ("1.", F, M, None),
    ("-", F, M, None),
    ("NaN", F, F, None),
    ("[Infinity]", F, F, None),
    ('"bad \\x escape"', F, F, None),
    ('{"a": [1, 2', F, M, None),
    ('{"a": "unterminated', F, M, None),
    ('{"a": "esc \\', F, M, None),
    ('{"a": "esc \\u00', F, M, None),
    ('{"a": tr', F, M, None),
    ('{"a"', F, M, None),
    ("[", F, M, None),
    ("", F, M, None),
    ('{"a": }', F, F, None),
    ("]", F, F, None),
]


@pytest.mark.parametrize(("text", "complete", "partial", "end"), VALUE_CASES)
def test_json_value(text: str, complete: Status, partial: Status, end: int | None) -> None:
    parser = p.json()
    full = parser.parse(text)
    assert full.status is complete
    if complete is S:
        assert full.end == (len(text) if end is None else end)
    assert parser.parse(text, partial=True).status is partial


@pytest.mark.parametrize(
    ("parser", "good", "bad"),
    [
        (p.object(), '{"k": [1]}', "[1]"),
        (p.array(), '[{"k": 1}]', '{"k": 1}'),
        (p.string(), '"s\\"q"', "'s'"),
        (p.number(), "-12.5e3", "+1"),
        (p.bool(), "false", "null"),
        (p.null(), "null", "nil"),
    ],
)
def test_json_kinds(parser: p.Parser, good: str, bad: str) -> None:
    assert parser.parse(good).end == len(good)
    assert parser.parse(bad).fail


def test_json_kind_partial_prefixes() -> None:
    assert p.bool().parse("fal", partial=True).need_more_input
    assert p.null().parse("nu", partial=True).need_more_input
    assert p.object().parse("", partial=True).need_more_input
    assert p.number().parse("12", partial=True).need_more_input
    assert p.number().parse("12", partial=False).success


def test_deeply_nested_json_does_not_recurse() -> None:
    text = "[" * 5000 + "]" * 5000
    assert p.json().parse(text).end == len(text)
    assert p.json().parse(text[:-1], partial=True).need_more_input
    assert p.json().parse(text[:-1]).fail


def test_huge_integer_is_accepted() -> None:
    text = "[" + "9" * 6000 + "]"  # beyond Python's int-parsing digit limit: the scanner takes over
    assert p.json().parse(text).end == len(text)


def test_every_prefix_of_a_value_needs_more_or_is_complete() -> None:
    text = json.dumps({"name": "get_weather", "arguments": {"city": "Zürich", "days": [1, 2], "x": None}})
    for cut in range(len(text)):
        result = p.json().parse(text[:cut], partial=True)
        assert result.status is M, text[:cut]
    assert p.json().parse(text, partial=True).success


def test_member_and_string_content() -> None:
    member = p.json_member("name", '"' + p.tag("name", p.json_string_content()) + '"')
    result = member.parse('"name" :  "get_\\"weather"')
    assert result.success and result.tag_text("name") == 'get_\\"weather'
    assert p.member("k", p.number()).parse('"k":1 ').end == 5
    assert p.json_member("ключ", p.null()).parse('"ключ": null').success
    assert p.string_content().parse('abc"', partial=True).end == 3
    assert p.string_content().parse("abc", partial=True).need_more_input
    assert p.string_content().parse("abc").fail
    assert p.string_content("'", "python").parse("it\\'s'").end == 5


def test_member_key_is_json_escaped() -> None:
    assert p.json_member('a"b', p.null()).parse('"a\\"b": null').success


class TestPythonLiterals:
    @pytest.mark.parametrize(
        "text",
        [
            "{'a': [True, False, None], \"b\": 1.5, 'c': {'d': 'it\\'s'}}",
            "'single'",
            '"double"',
            "None",
            "[1, -2, 3.5e2]",
            "{}",
        ],
    )
    def test_accepts(self, text: str) -> None:
        assert p.python_value().parse(text).end == len(text)
        assert p.json("python").parse(text).end == len(text)

    @pytest.mark.parametrize("text", ["true", "null", "{'a' 1}", "[1,,2]", "'unterminated"])
    def test_rejects(self, text: str) -> None:
        assert p.python_value().parse(text).fail

    def test_partial(self) -> None:
        assert p.python_value().parse("{'a': Tr", partial=True).need_more_input
        assert p.python_value().parse("['x\\", partial=True).need_more_input

    def test_kinds(self) -> None:
        assert p.object("python").parse("{'a': 1}").success
        assert p.string("python").parse("'a'").success
        assert p.bool("python").parse("True").success
        assert p.null("python").parse("None").success
        assert p.array("python").parse("{}").fail


class TestPythonicLiterals:
    """The ``pythonic`` flavor: Python literals whose keywords may also be spelt the JSON way, mixed freely."""

    @pytest.mark.parametrize(
        "text",
        ["{'a': [True, false, None, null], \"b\": true}", "true", "null", "False", "[{'k': 'it\\'s'}, 1.5e3]"],
    )
    def test_accepts(self, text: str) -> None:
        assert p.json("pythonic").parse(text).end == len(text)

    @pytest.mark.parametrize("text", ["TRUE", "nil", "{'a' 1}", "[1,,2]", "'unterminated", "Null"])
    def test_rejects(self, text: str) -> None:
        assert p.json("pythonic").parse(text).fail

    def test_partial(self) -> None:
        assert p.json("pythonic").parse("[tr", partial=True).need_more_input
        assert p.json("pythonic").parse("{'a': nu", partial=True).need_more_input
        assert p.json("pythonic").parse("[Tru", partial=True).need_more_input

    def test_kinds(self) -> None:
        for word in ("True", "true", "False", "false"):
            assert p.bool("pythonic").parse(word).success
            assert p.null("pythonic").parse(word).fail
        for word in ("None", "null"):
            assert p.null("pythonic").parse(word).success
            assert p.bool("pythonic").parse(word).fail
        assert p.string("pythonic").parse("'a'").success

    def test_gbnf_takes_both_spellings(self) -> None:
        grammar = (p.literal("[") + p.json("pythonic") + "]").to_gbnf()
        assert '"True" | "False" | "true" | "false"' in grammar
        assert '"None" | "null"' in grammar
        assert "true" not in (p.literal("[") + p.python_value() + "]").to_gbnf()


# --- canonical JSON (json(canonical=True): raw JSON tool arguments) ------------------------------------------------

CANONICAL_CASES = [
    ('{"a": [1, {"b": "x\\n\\u00e9"}], "c": {"a": null}}', True),  # a key again in another object is fine
    ("[1, 2]", True),
    ('{"a": 1, "a": 2}', False),  # a key twice in one object
    ('{"a": {"b": 1, "c": [{"d": 0, "d": 0}]}}', False),  # (at any depth)
    ('{"a": "tab\tinside"}', False),  # a raw control character in a string: valid for the parser, not strict
    ('{"a": 1', False),  # cut off
]


@pytest.mark.parametrize(("text", "canonical"), CANONICAL_CASES)
def test_a_canonical_value_is_recorded_on_the_text(text: str, canonical: bool) -> None:
    """The parser's own decode of the value tells canonical JSON (strict, no key twice in an object) from the rest,
    so a reader of raw JSON arguments need not decode them again; the parse itself is the same either way."""
    checked = p.tag("v", p.json(canonical=True)) + p.space() + p.end()
    result = checked.parse(text)
    assert result.status == p.tag("v", p.json()).parse(text).status
    nodes = result.tagged("v")
    assert bool(nodes and nodes[0].canonical_json) == canonical
    plain = (p.tag("v", p.json()) + p.space() + p.end()).parse(text).tagged("v")
    assert not (plain and plain[0].canonical_json)  # recorded only where asked for


def test_canonical_spans_are_exact() -> None:
    """Only the span the decode covered: a node starting or ending elsewhere is not taken for it."""
    text = '{"a": {"b": 1}} tail'
    result = (p.tag("v", p.json(canonical=True)) + p.tag("t", p.until_one_of(["\n"]))).parse(text)
    value, tail = result.tagged("v")[0], result.tagged("t")[0]
    assert value.canonical_json and not tail.canonical_json
