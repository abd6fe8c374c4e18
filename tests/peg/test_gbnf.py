"""PEG → GBNF: exact text for representative parsers, and acceptance checked by real engines.

Two checks apply:
* llguidance (``tests.support.llg``): a real constrained-decoding engine. Its GBNF import turns
  terminal-only rules into greedy lexemes, so it can reject strings that GBNF semantics accept when a
  lexeme could stop early (e.g. content ending in a delimiter prefix, ``x</`` before ``</think>``).
* the strict recognizer (``tests.support.gbnf_recognizer``): exact context-free semantics. Used for every
  check, and as the only check where greedy lexing is known to disagree (marked ``strict only``).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoparser import peg as p
from autoparser.check.recognizer import accepts as strict_accepts
from autoparser.errors import GrammarError
from autoparser.peg.lowering.gbnf_syntax import RuleSet, rule_references, sanitize_rule_name
from tests.support.llg import gbnf_accepts


def root_body(gbnf: str) -> str:
    return next(line for line in gbnf.splitlines() if line.startswith("root ::= "))[len("root ::= ") :]


class TestText:
    def test_literals_sequences_choices(self) -> None:
        parser = p.literal("a\"b\n") + (p.literal("x") | p.literal("y") + "z") + p.end()
        assert parser.to_gbnf() == 'root ::= "a\\"b\\n" ("x" | "y" "z")\n'

    def test_repetitions(self) -> None:
        cases = {
            p.optional("a"): '"a"?',
            p.zero_or_more("a"): '"a"*',
            p.one_or_more("a" + p.literal("b")): '("a" "b")+',
            p.repeat("a", 3): '"a"{3}',
            p.repeat("a", 2, -1): '"a"{2,}',
            p.repeat("a", 2, 4): '"a"{2,4}',
            p.repeat(p.optional("a"), 2, 4): '("a"?){2,4}',
        }
        for parser, body in cases.items():
            assert root_body(parser.to_gbnf()) == body

    def test_chars_and_any(self) -> None:
        assert root_body(p.chars("[a-z_]", 1, 8).to_gbnf()) == "[a-z_]{1,8}"
        assert root_body(p.chars("[^\\n\\]]", 0).to_gbnf()) == "[^\\n\\]]*"
        gbnf = (p.literal("<") + p.any()).to_gbnf()
        assert 'root ::= "<" any-char' in gbnf and 'any-char ::= [^\\n] | "\\n"' in gbnf

    def test_lookaheads_and_anchors_emit_nothing(self) -> None:
        parser = p.start() + ~p.literal("x") + p.peek("a") + "a" + p.end()
        assert parser.to_gbnf() == 'root ::= "a"\n'

    def test_space_is_bounded(self) -> None:
        """Up to 64 whitespace characters (unbounded whitespace lets a constrained model write spaces until
        max_tokens); the parser reads any run."""
        gbnf = (p.literal("a") << "b").to_gbnf()
        assert "space ::= [ \\t\\n\\r]{0,64}" in gbnf
        text = "a \t\r\n" + " " * 60 + "b"
        assert gbnf_accepts(gbnf, text) and strict_accepts(gbnf, text)
        too_long = "a" + " " * 65 + "b"
        assert (p.literal("a") << "b").parse(too_long).end == len(too_long)
        assert not gbnf_accepts(gbnf, too_long) and not strict_accepts(gbnf, too_long)

    def test_until_pattern(self) -> None:
        body = root_body(p.until("</tag>").to_gbnf())
        assert body == (
            '([^<] | ("<" | "</" | "</t" | "</ta" | "</tag")* ("<" [^/<] | "</" [^<t] | "</t" [^<a] | '
            '"</ta" [^<g] | "</tag" [^<>]))* ("<" | "</" | "</t" | "</ta" | "</tag")*'
        )

    def test_until_pattern_written_once_for_every_value(self) -> None:
        """Tagged values closed by the same tag share one rule (the text and the tag): the grammar grows by a reference
        per value, not by the pattern (a 1,000-tool request of six string parameters each was 20 MB with it inline);
        llguidance reads that rule as one lexeme, exactly."""
        value = p.literal("<v>") + p.until("</v>") + "</v>"
        one = (value + p.end()).to_gbnf()
        many = (p.sequence(*[value] * 50) + p.end()).to_gbnf()
        assert one.count("[^<]") == many.count("[^<]") == 1
        assert many.count("text-to-v") == 51  # the rule and 50 references
        text = "<v>a<b</v" + "</v>" + "<v>x</v>" * 49
        assert gbnf_accepts(many, text) and strict_accepts(many, text)
        assert not gbnf_accepts(many, "<v>a</v>b</v>" + "<v>x</v>" * 49)

    def test_until_with_recurring_first_char_uses_an_automaton(self) -> None:
        gbnf = (p.until(">>>") + ">>>").to_gbnf()
        assert "until-" in gbnf

    def test_rest(self) -> None:
        assert root_body(p.rest().to_gbnf()) == "any-char*"

    def test_rules_and_recursion(self) -> None:
        parens = p.rule("parens", p.zero_or_more("(" + p.ref("parens") + ")"))
        gbnf = parens.to_gbnf()
        assert gbnf == 'parens ::= ("(" parens ")")*\nroot ::= parens\n'
        assert strict_accepts(gbnf, "(()())") and not strict_accepts(gbnf, "(()")

    def test_tags_and_atomic_are_transparent(self) -> None:
        assert p.tag("x", p.atomic(p.literal("a"))).to_gbnf() == 'root ::= "a"\n'

    def test_with_gbnf_emits_verbatim(self) -> None:
        assert root_body((p.with_gbnf(p.rest(), '[a-z]+') + "!").to_gbnf()) == '([a-z]+) "!"'

    def test_lazy_grammar_keeps_only_trigger_rules(self) -> None:
        content = p.rule("content", p.until("<tool_call>"))
        call = p.trigger_rule("tool-call", p.literal("<tool_call>") + p.rule("args", p.chars("[a-z]")) + "</tool_call>")
        other = p.trigger_rule("alt-call", p.literal("[CALL]"))
        parser = content + p.zero_or_more(call | other)
        lazy = parser.to_gbnf(lazy=True)
        assert lazy.splitlines() == [
            'alt-call ::= "[CALL]"',
            "args ::= [a-z]+",
            "root ::= alt-call | tool-call",
            'tool-call ::= "<tool_call>" args "</tool_call>"',
        ]
        assert "content ::=" in parser.to_gbnf(lazy=False)

    def test_lazy_grammar_without_trigger_is_an_error(self) -> None:
        with pytest.raises(GrammarError, match="trigger_rule"):
            p.literal("a").to_gbnf(lazy=True)

    def test_rule_names_never_collide(self) -> None:
        tools = ["get_data", "get-data", "get data", "get.data"]
        parser = p.choice(*(p.rule(f"tool-{name}", p.literal(name)) for name in tools))
        gbnf = parser.to_gbnf()
        names = [line.split(" ::= ")[0] for line in gbnf.splitlines() if line.startswith("tool-")]
        assert names == ["tool-get-data", "tool-get-data-2", "tool-get-data-3", "tool-get-data-4"]
        for name in tools:
            assert strict_accepts(gbnf, name) and gbnf_accepts(gbnf, name)

    def test_user_rules_named_like_builtin_rules(self) -> None:
        parser = p.rule("space", p.literal("S")) + p.space() + p.rule("root", p.literal("R"))
        gbnf = parser.to_gbnf()
        assert strict_accepts(gbnf, "S  R") and not strict_accepts(gbnf, "S R R")


class TestRuleSet:
    def test_sanitize(self) -> None:
        assert sanitize_rule_name("special_function") == "special-function"
        assert sanitize_rule_name("a..b__c") == "a-b-c"
        assert sanitize_rule_name("") == "rule"

    def test_references_skip_literals_and_classes(self) -> None:
        assert rule_references('"a b" [x-y] foo-1 (bar)* x{2,3} "\\" q"') == ["foo-1", "bar", "x"]

    def test_undefined_reference(self) -> None:
        rules = RuleSet()
        rules.define("root", "missing")
        with pytest.raises(GrammarError, match="'missing' is referenced but not defined"):
            rules.render()


# --- acceptance by real engines ------------------------------------------------------------------

THINK = p.optional("<think>" + p.tag("reasoning", p.until("</think>")) + "</think>") + p.space()
CHAT = THINK + p.tag("content", p.until("<tool_call>")) + p.zero_or_more(
    p.trigger_rule("tool-call", "<tool_call>" << p.tag("args", p.json()) << "</tool_call>") + p.space()
) + p.end()
TAGGED = p.one_or_more(
    "<parameter=" + p.chars("[a-z_]") + ">" + p.until("</parameter>") + "</parameter>" + p.space()
) + p.end()
UNICODE = p.tag("c", p.until("<｜tool▁sep｜>")) + "<｜tool▁sep｜>" + p.chars("[一-龥]", 1, 3) + p.end()
PY = p.literal("[") + p.python_value() + "]" + p.end()

ACCEPTANCE = [
    ("chat", CHAT, [
        "Hello",
        "<think>hmm < / </thin</think>\n\nHi <b>there</b>",
        'Sure.<tool_call>\n{"name": "f", "arguments": {"a": [1, 2.5, null]}}\n</tool_call>\n',
        '<tool_call>{"a":1}</tool_call><tool_call> [] </tool_call>',
        "<think></think>",
    ], [
        "<tool_call>{bad json}</tool_call>",
        '<tool_call>{"a":1}</tool_call>trailing',
        "<tool_call>{}",
    ]),
    ("tagged", TAGGED, [
        "<parameter=path>\nsrc/a.py\n</parameter>\n<parameter=code>x < y </param</parameter>",
    ], ["<parameter=Path>x</parameter>", "<parameter=a>x</parameter>junk", ""]),
    ("unicode", UNICODE, ["名前<｜tool▁sep｜>中文", "<｜tool▁sep｜>字"], ["x<｜tool▁sep｜>abc", "x<｜tool sep｜>中"]),
    ("python", PY, ["[{'a': [True, None], \"b\": 'it\\'s'}]", "[1.5]"], ["[true]", "[{'a' 1}]"]),
]


@pytest.mark.parametrize(("name", "parser", "good", "bad"), ACCEPTANCE, ids=[a[0] for a in ACCEPTANCE])
def test_grammar_accepts_what_the_parser_accepts(name: str, parser: p.Parser, good: list[str], bad: list[str]) -> None:
    gbnf = parser.to_gbnf()
    for text in good:
        assert parser.parse(text).success, text
        assert strict_accepts(gbnf, text), text
        assert gbnf_accepts(gbnf, text), text
    for text in bad:
        assert not parser.parse(text).success, text
        assert not strict_accepts(gbnf, text), text
        assert not gbnf_accepts(gbnf, text), text


def test_lazy_grammar_accepts_the_tool_call_section() -> None:
    gbnf = CHAT.to_gbnf(lazy=True)
    call = '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'
    assert gbnf_accepts(gbnf, call) and strict_accepts(gbnf, call)
    assert not gbnf_accepts(gbnf, "Hello " + call)


def test_ordered_choice_fallback_strict_only() -> None:
    """strict only: an unclosed <think> is content for the PEG (the optional block fails, content takes
    over). GBNF accepts it too, but llguidance's lexer commits to the "<think>" token and cannot back up."""
    text = "<think>unclosed thoughts are content"
    assert CHAT.parse(text).tag_text("content") == text
    assert strict_accepts(CHAT.to_gbnf(), text)


def test_content_ending_in_a_delimiter_prefix_strict_only() -> None:
    """strict only: llguidance lexes `x</` + `</think>` greedily; GBNF semantics accept it, as the parser does."""
    parser = p.until("</think>") + "</think>"
    gbnf = parser.to_gbnf()
    for text in ["x</</think>", "a<</think>", "<</think>", "x</thin</think>"]:
        assert parser.parse(text).success
        assert strict_accepts(gbnf, text), text


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="<>/tagx", max_size=14),
    st.sampled_from([("</tag>",), ("<a>", "</tag>"), (">>>",), ("aa", "ab")]),
)
def test_until_grammar_is_exact(text: str, delimiters: tuple[str, ...]) -> None:
    """until(D) followed by end: the grammar accepts exactly the texts containing no delimiter."""
    parser = p.until_one_of(delimiters) + p.end()
    expected = parser.parse(text).success
    assert expected == (not any(d in text for d in delimiters))
    assert strict_accepts(parser.to_gbnf(), text) == expected
