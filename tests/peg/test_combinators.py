"""Every combinator in complete and partial mode: accepted, rejected and need-more inputs.

Each row is (parser, input, partial, expected status, expected end). ``M`` = NEED_MORE_INPUT.
"""

from __future__ import annotations

import pytest

from autoparser import peg as p
from autoparser.errors import GrammarError, ParseError
from autoparser.peg import Status

S, F, M = Status.SUCCESS, Status.FAIL, Status.NEED_MORE_INPUT

CASES: list[tuple[str, p.Parser, str, bool, Status, int]] = [
    # eps / start / end
    ("eps", p.eps(), "abc", False, S, 0),
    ("start", p.start(), "abc", False, S, 0),
    ("start after", p.literal("a") + p.start(), "abc", False, F, 0),
    ("end empty", p.end(), "", False, S, 0),
    ("end early", p.end(), "x", False, F, 0),
    ("end partial", p.end(), "", True, M, 0),
    # literal
    ("literal", p.literal("<think>"), "<think>x", False, S, 7),
    ("literal mismatch", p.literal("<think>"), "<thonk>", False, F, 0),
    ("literal cut", p.literal("<think>"), "<thi", False, F, 0),
    ("literal cut partial", p.literal("<think>"), "<thi", True, M, 0),
    ("literal empty input partial", p.literal("<think>"), "", True, M, 0),
    ("literal mismatch partial", p.literal("<think>"), "<tx", True, F, 0),
    ("empty literal", p.literal(""), "abc", False, S, 0),
    # any
    ("any", p.any(), "é", False, S, 1),
    ("any astral", p.any(), "😀x", False, S, 1),
    ("any eof", p.any(), "", False, F, 0),
    ("any eof partial", p.any(), "", True, M, 0),
    # chars
    ("chars", p.chars("[a-z]"), "abc1", False, S, 3),
    ("chars none", p.chars("[a-z]"), "1abc", False, F, 0),
    ("chars bounded", p.chars("[a-z]", 1, 2), "abc", False, S, 2),
    ("chars min", p.chars("[0-9]", 3, 5), "12x", False, F, 0),
    ("chars min partial at eof", p.chars("[0-9]", 3, 5), "12", True, M, 2),
    ("chars min partial not eof", p.chars("[0-9]", 3, 5), "12x", True, F, 0),
    ("chars zero", p.chars("[0-9]", 0), "x", False, S, 0),
    ("chars negated", p.chars("[^<\\n]"), "ab\nc", False, S, 2),
    ("chars escapes", p.chars("[\\]\\[\\-]"), "[]-x", False, S, 3),
    ("chars hex", p.chars("[\\x41-\\x43]"), "ABCD", False, S, 3),
    ("chars unicode range", p.chars("[\\u4e00-\\u9fff]"), "中文x", False, S, 2),
    ("chars astral", p.chars("[\\U0001F600-\\U0001F64F]"), "😀😃a", False, S, 2),
    ("chars no brackets", p.chars("a-c"), "abcd", False, S, 3),
    ("chars multibyte marker", p.chars("[｜▁a-z]"), "｜tool▁sep｜>", False, S, 10),
    # sequence
    ("seq", p.literal("a") + "b", "abc", False, S, 2),
    ("seq fail", p.literal("a") + "b", "ac", False, F, 0),
    ("seq partial", p.literal("a") + "bc", "ab", True, M, 1),
    ("seq str left", "a" + p.literal("b"), "ab", False, S, 2),
    # choice
    ("choice first", p.literal("a") | "b", "a", False, S, 1),
    ("choice second", p.literal("a") | "b", "b", False, S, 1),
    ("choice none", p.literal("a") | "b", "c", False, F, 0),
    ("choice ordered", p.literal("a") | "ab", "ab", False, S, 1),
    ("choice need-more commits", p.literal("abc") | "ab", "ab", True, M, 0),
    ("choice str left", "a" | p.literal("b"), "b", False, S, 1),
    # optional / zero_or_more / one_or_more / repeat
    ("optional present", p.optional("a"), "ab", False, S, 1),
    ("optional absent", p.optional("a"), "b", False, S, 0),
    ("optional partial", p.optional("ab"), "a", True, M, 0),
    ("zero_or_more", p.zero_or_more("ab"), "ababa", False, S, 4),
    ("zero_or_more partial tail", p.zero_or_more("ab"), "ababa", True, M, 4),
    ("zero_or_more none", p.zero_or_more("ab"), "x", False, S, 0),
    ("one_or_more", p.one_or_more("a"), "aaab", False, S, 3),
    ("one_or_more none", p.one_or_more("a"), "b", False, F, 0),
    ("one_or_more empty partial", p.one_or_more("a"), "", True, M, 0),
    ("one_or_more empty complete", p.one_or_more("a"), "", False, F, 0),
    ("one_or_more nullable child", p.one_or_more(p.optional("a")), "b", False, S, 0),
    ("repeat exact", p.repeat("ab", 2), "ababab", False, S, 4),
    ("repeat exact short", p.repeat("ab", 2), "abx", False, F, 0),
    ("repeat exact short partial", p.repeat("ab", 2), "ab", True, M, 2),
    ("repeat range", p.repeat("a", 1, 3), "aaaa", False, S, 3),
    ("repeat unbounded", p.repeat("a", 2, -1), "aaaa", False, S, 4),
    ("repeat zero", p.repeat("a", 0, 0), "aaa", False, S, 0),
    # lookaheads
    ("peek ok", p.peek("a") + "ab", "ab", False, S, 2),
    ("peek fail", p.peek("b"), "ab", False, F, 0),
    ("peek partial", p.peek("abc"), "ab", True, M, 0),
    ("negate ok", ~p.literal("b") + "a", "a", False, S, 1),
    ("negate fail", ~p.literal("a") + "a", "a", False, F, 0),
    ("negate partial", p.negate("abc"), "ab", True, M, 0),
    ("negate complete short", p.negate("abc"), "ab", False, S, 0),
    # space
    ("space", p.space(), " \t\r\n\v\fx", False, S, 6),
    ("space none", p.space(), "x", False, S, 0),
    ("space not nbsp", p.space(), "\u00a0", False, S, 0),
    ("lshift", p.literal("a") << "b", "a \n b", False, S, 5),
    ("lshift str left", "a" << p.literal("b"), "ab", False, S, 2),
    # until / until_one_of / rest
    ("until", p.until("</think>"), "abc</think>d", False, S, 3),
    ("until absent", p.until("</think>"), "abc", False, S, 3),
    ("until absent partial", p.until("</think>"), "abc", True, M, 3),
    ("until partial delimiter", p.until("</think>"), "abc</thi", True, M, 3),
    ("until partial delimiter complete", p.until("</think>"), "abc</thi", False, S, 8),
    ("until lone lt partial", p.until("</think>"), "a<", True, M, 1),
    ("until lt not prefix", p.until("</think>"), "a<b", True, M, 3),
    ("until at start", p.until("</think>"), "</think>", False, S, 0),
    ("until one of", p.until_one_of(["<tool_call>", "<function="]), "ab<function=x", False, S, 2),
    ("until one of earliest", p.until_one_of(["<b>", "<a>"]), "x<a><b>", False, S, 1),
    ("until one of partial", p.until_one_of(["<b>", "<abc>"]), "x<ab", True, M, 1),
    ("until nested delimiters", p.until_one_of(["ab", "xabyz"]), "..xab", True, M, 2),
    ("until unicode", p.until("<｜tool▁sep｜>"), "名前<｜tool▁sep｜>x", False, S, 2),
    ("until unicode partial", p.until("<｜tool▁sep｜>"), "名前<｜tool", True, M, 2),
    ("rest", p.rest(), "abc", False, S, 3),
    ("rest partial", p.rest(), "abc", True, M, 3),
    # rules and refs (recursion)
    ("rule", p.rule("greeting", p.literal("hi")), "hi", False, S, 2),
    # atomic / tag / schema / gbnf pass through parsing
    ("atomic", p.atomic("abc"), "abc", False, S, 3),
    ("atomic partial", p.atomic("abc"), "ab", True, M, 0),
    ("tag", p.tag("t", "abc"), "abc", False, S, 3),
    ("schema", p.schema(p.json(), "x", {"type": "integer"}), "12 ", False, S, 2),
    ("gbnf", p.with_gbnf(p.literal("a"), '"a"'), "a", False, S, 1),
]


@pytest.mark.parametrize(
    ("parser", "text", "partial", "status", "end"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_combinator(parser: p.Parser, text: str, partial: bool, status: Status, end: int) -> None:
    result = parser.parse(text, partial=partial)
    assert (result.status, result.end) == (status, end)
    if status is F:
        assert result.nodes == []


def test_recursive_rule_balanced_parens() -> None:
    parens = p.rule("parens", p.zero_or_more("(" + p.ref("parens") + ")"))
    grammar = parens + p.end()
    assert grammar.parse("(()(()))").success
    assert grammar.parse("(()").fail
    assert grammar.parse("(()", partial=True).need_more_input


def test_ref_to_undefined_rule_is_a_clear_error() -> None:
    with pytest.raises(GrammarError, match="'missing' is referenced but not defined"):
        (p.literal("a") + p.ref("missing")).parse("a")


def test_conflicting_rule_definitions_are_rejected() -> None:
    with pytest.raises(GrammarError, match="defined twice"):
        (p.rule("x", "a") + p.rule("x", "b")).parse("ab")


def test_same_rule_used_twice_is_fine() -> None:
    word = p.rule("word", p.chars("[a-z]"))
    assert (word + " " + word).parse("ab cd").end == 5


@pytest.mark.parametrize(
    "build",
    [
        lambda: p.chars("[z-a]"),
        lambda: p.chars("[]"),
        lambda: p.chars("[\\x4]"),
        lambda: p.chars("[a-z]", 3, 1),
        lambda: p.repeat("a", 2, 1),
        lambda: p.until(""),
        lambda: p.until_one_of([]),
        lambda: p.until_one_of("abc"),
        lambda: p.tag("", "a"),
        lambda: p.rule("", "a"),
        lambda: p.json("yaml"),
        lambda: p.json_string_content("`"),
        lambda: p.literal(3),  # type: ignore[arg-type]
    ],
)
def test_malformed_parsers_raise_grammar_error(build: object) -> None:
    with pytest.raises(GrammarError):
        build()  # type: ignore[operator]


def test_operands_must_be_parsers_or_strings() -> None:
    with pytest.raises(TypeError):
        p.literal("a") + 3  # type: ignore[operator]


def test_sequences_and_choices_flatten() -> None:
    seq = p.literal("a") + "b" + ("c" + p.literal("d"))
    assert isinstance(seq, p.Parser) and len(seq.items) == 4  # type: ignore[attr-defined]
    alt = p.literal("a") | "b" | (p.literal("c") | "d")
    assert len(alt.items) == 4  # type: ignore[attr-defined]
    assert isinstance(p.sequence(p.eps(), "a"), type(p.literal("a")))


class TestAst:
    def test_tags_nest_and_carry_spans(self) -> None:
        parser = p.tag("call", "<f=" + p.tag("name", p.chars("[a-z]")) + ">" + p.tag("body", p.until("</f>")))
        result = parser.parse("<f=abc>xyz</f>")
        (call,) = result.nodes
        assert (call.tag, call.start, call.end, call.text) == ("call", 0, 10, "<f=abc>xyz")
        assert [(n.tag, n.text) for n in call.children] == [("name", "abc"), ("body", "xyz")]

    def test_rule_nodes_carry_the_rule_name(self) -> None:
        result = p.rule("greeting", p.tag("word", "hi")).parse("hi")
        (node,) = result.nodes
        assert (node.tag, node.rule) == (None, "greeting")
        assert node.children[0].tag == "word"

    def test_partial_tag_is_marked(self) -> None:
        result = p.tag("content", p.rest()).parse("abc", partial=True)
        assert result.nodes[0].is_partial
        assert not p.tag("content", p.rest()).parse("abc").nodes[0].is_partial

    def test_atomic_drops_incomplete_nodes(self) -> None:
        name = p.atomic(p.tag("tool-name", p.literal("get_weather")))
        assert name.parse("get_wea", partial=True).nodes == []
        assert name.parse("get_weather", partial=True).tagged("tool-name")[0].text == "get_weather"
        # without atomic the half-received name would be visible
        assert p.tag("tool-name", p.literal("get_weather")).parse("get_wea", partial=True).nodes

    def test_failed_branches_leave_no_orphans(self) -> None:
        parser = (p.tag("a", "x") + "1") | (p.tag("b", "x") + "2")
        assert [n.tag for n in parser.parse("x2").walk()] == ["b"]
        repeated = p.zero_or_more(p.tag("item", "ab") + ";")
        assert [n.text for n in repeated.parse("ab;ab;ab").walk()] == ["ab", "ab"]

    def test_lookaheads_create_no_nodes(self) -> None:
        assert p.peek(p.tag("x", "a")).parse("a").nodes == []
        assert (~p.tag("x", "b") + "a").parse("a").nodes == []

    def test_visitor_dispatches_by_tag_and_rule(self) -> None:
        seen: list[str] = []

        class Collect(p.Visitor):
            def visit_tool_name(self, node: p.AstNode) -> None:
                seen.append("name:" + node.text)

            def visit_rule_call(self, node: p.AstNode) -> None:
                seen.append("call")
                self.generic_visit(node)

        parser = p.rule("call", "<" + p.tag("tool-name", p.chars("[a-z]")) + p.tag("other", ">"))
        Collect().visit(parser.parse("<abc>"))
        assert seen == ["call", "name:abc"]

    def test_walk_and_repr(self) -> None:
        result = p.tag("a", p.tag("b", "x")).parse("x")
        assert [n.tag for n in result.walk()] == ["a", "b"]
        assert "tag='a'" in repr(result.nodes[0]) and "SUCCESS" in repr(result)


class TestErrors:
    def test_error_reports_furthest_failure_with_merged_expectations(self) -> None:
        parser = p.literal("<a>") + (p.literal("x") | "y") + p.end()
        result = parser.parse("<a>z")
        err = result.error()
        assert isinstance(err, ParseError)
        assert (err.pos, err.line, err.column) == (3, 1, 4)
        assert err.expected == {'"x"', '"y"'}
        assert 'expected "x" or "y"' in str(err) and "^" in str(err)

    def test_error_line_and_column(self) -> None:
        parser = p.literal("a\nb") + "c"
        err = parser.parse("a\nbd").error()
        assert (err.line, err.column) == (2, 2)
        assert "end of input" in str((p.literal("a") + "b").parse("a").error())

    def test_lookahead_failures_do_not_pollute_expectations(self) -> None:
        parser = ~p.literal("<x>") + p.literal("b")
        assert parser.parse("c").error().expected == {'"b"'}

    def test_parse_rejects_bad_arguments(self) -> None:
        with pytest.raises(TypeError):
            p.literal("a").parse(b"a")  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            p.literal("a").parse("a", start=5)

    def test_parse_from_offset(self) -> None:
        assert p.literal("b").parse("ab", start=1).end == 2
