"""regex → GBNF: grammars checked with llguidance against Python's ``re`` (search semantics)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoparser.errors import PatternError, SchemaError
from autoparser.peg.lowering.gbnf_syntax import RuleSet, rule_references
from autoparser.peg.lowering.regex_gbnf import regex_to_gbnf
from tests.support.llg import compile_gbnf, gbnf_accepts


def grammar(pattern: str, *, quoted: bool) -> str:
    rules = RuleSet()
    name = regex_to_gbnf(pattern, rules, "p", path="#/pattern", quoted=quoted)
    rules.define("root", f'"\\"" {name} "\\""' if quoted else name)
    return rules.render()


def raw_accepts(pattern: str, text: str) -> bool:
    return gbnf_accepts(grammar(pattern, quoted=False), text)


def quoted_accepts(pattern: str, text: str) -> bool:
    """Whether the JSON string ``json.dumps(text)`` (raw UTF-8, canonical escapes) is accepted."""
    return gbnf_accepts(grammar(pattern, quoted=True), json.dumps(text, ensure_ascii=False))


def python_search(pattern: str, text: str) -> bool:
    """ECMA ``pattern.test(text)`` for the ASCII subset: Python's ``$`` also matches before a final
    newline and its classes are Unicode-aware, so translate ``$`` to ``\\Z`` and use re.ASCII
    (and ECMA's ``(?<name>`` to ``(?P<name>``)."""
    translated = re.sub(r"(?<!\\)\$", r"\\Z", pattern).replace("(?<y", "(?P<y")
    return re.search(translated, text, re.ASCII) is not None


# (pattern, accepted, rejected) — raw mode; the expectations are also checked against Python's re.
CASES = [
    ("^abc$", ["abc"], ["", "ab", "abcd", "xabc"]),
    ("abc", ["abc", "xxabcyy", "a\nabc\n"], ["ab", "acb", ""]),
    ("^abc", ["abc", "abcdef"], ["xabc"]),
    ("abc$", ["abc", "zabc", "ab abc", "abcabc"], ["abcd", "abc\n"]),
    ("^a|b$", ["a", "ab", "b", "cb"], ["c", "ba"]),
    ("^(a|bc)+$", ["a", "bcabc", "aaa"], ["", "b", "abd"]),
    ("^(?:ab)*$", ["", "ab", "abab"], ["a", "aba"]),
    ("^(?<year>\\d{4})-(?P<m>\\d\\d)$", ["2024-01"], ["224-01", "2024-1"]),
    ("^a{2}$", ["aa"], ["a", "aaa"]),
    ("^a{2,}$", ["aa", "aaaaa"], ["a"]),
    ("^a{1,3}$", ["a", "aaa"], ["", "aaaa"]),
    ("^a{0,2}b$", ["b", "ab", "aab"], ["aaab"]),
    ("^a+?b*?c??$", ["a", "abbc", "aac"], ["", "bc"]),
    ("^[a-c]+$", ["abcabc"], ["abd", ""]),
    ("^[^a-c]+$", ["xyz", "1 2"], ["xaz"]),
    ("^[-a]$", ["-", "a"], ["b"]),
    ("^[a-]$", ["-", "a"], ["b"]),
    ("^[\\^x]$", ["^", "x"], ["a"]),
    ("^[\\]\\\\]$", ["]", "\\"], ["["]),
    ("^[\\d\\s]+$", ["1 2\t3"], ["1a"]),
    ("^[\\b\\-\\D]+$", ["\b-x"], ["1"]),
    ("^[\\w.-]+@[\\w-]+\\.[a-z]{2,}$", ["john.doe@example.com"], ["john@example", "a b@c.de"]),
    ("^\\D\\W\\S$", ["a!b"], ["1!b", "aab", "a! "]),
    ("^\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\/\\$\\^$", [".*+?()[]{}|/$^"], ["a"]),
    ("^.$", ["a", "é", " "], ["\n", "\r", "ab", ""]),
    ("^\\t\\n\\x41\\u0042\\cJ\\0$", ["\t\nAB\n\x00"], ["\t\nAB\n0"]),
    ("^a{b$", ["a{b"], ["ab"]),
    ("^a{1,x}$", ["a{1,x}"], ["a"]),
    ("^x}]$", ["x}]"], ["x"]),
    ("^(a|)b$", ["ab", "b"], ["aab"]),
    ("^$", [""], ["a"]),
    ("^(|a)$", ["", "a"], ["aa"]),
    ("^[+-]?\\d+(\\.\\d+)?$", ["-1.5", "+2", "30"], ["1.", ".5", "--1"]),
    ("^(\\(\\d{3}\\) )?\\d{3}-\\d{4}$", ["(555) 123-4567", "123-4567"], ["(555)123-4567"]),
    ("^[A-Z][a-z]*( [A-Z][a-z]*)*$", ["Ada Lovelace", "X"], ["ada", "Ada  L"]),
    # nested quantifiers: flattened when the counts form an interval, else a helper rule
    ("^(?:(?:a)*)*$", ["", "aaa"], ["b"]),
    ("^(?:a{2}){3}$", ["a" * 6], ["a" * 5, "a" * 7]),
    ("^(?:a{2,3}){2}$", ["a" * 4, "a" * 5, "a" * 6], ["a" * 3, "a" * 7]),
    ("^(?:a{2,}b?)*$", ["", "aa", "aaab", "aabaa"], ["a", "ab", "aaba"]),
    ("^(?:a{2,})*$", ["", "aa", "aaa"], ["a"]),
    ("^(?:(?:ab){2}){0,2}$", ["", "abab", "abababab"], ["ab", "ababab"]),
    ("^x(?:a*){0}y$", ["xy"], ["xay"]),
    ("^(?:a{1,2}){1,3}$", ["a", "a" * 6], ["", "a" * 7]),
]


# Where Python differs from ECMA-262: its "." matches "\r" and it has no "\c" escape.
ECMA_ONLY = {"^.$", "^\\t\\n\\x41\\u0042\\cJ\\0$"}


@pytest.mark.parametrize(("pattern", "accepted", "rejected"), CASES)
def test_raw_patterns(pattern: str, accepted: list[str], rejected: list[str]) -> None:
    python_agrees = pattern not in ECMA_ONLY
    for text in accepted:
        assert not python_agrees or python_search(pattern, text), (pattern, text)
        assert raw_accepts(pattern, text), (pattern, text)
    for text in rejected:
        assert not python_agrees or not python_search(pattern, text), (pattern, text)
        assert not raw_accepts(pattern, text), (pattern, text)


@pytest.mark.parametrize(("pattern", "accepted", "rejected"), CASES)
def test_quoted_patterns(pattern: str, accepted: list[str], rejected: list[str]) -> None:
    for text in accepted:
        assert quoted_accepts(pattern, text), (pattern, text)
    for text in rejected:
        assert not quoted_accepts(pattern, text), (pattern, text)


def test_quoted_mode_uses_json_escapes() -> None:
    g = grammar('^a"b\\\\c\\nd\\x1f$', quoted=True)
    assert gbnf_accepts(g, '"a\\"b\\\\c\\nd\\u001f"')
    assert gbnf_accepts(g, '"a\\"b\\\\c\\nd\\u001F"')  # either hex case
    assert not gbnf_accepts(g, '"a"b\\\\c\\nd\\u001f"')  # unescaped quote
    assert not gbnf_accepts(g, '"a\\"b\\\\c\nd\\u001f"')  # raw newline is not valid JSON
    assert not gbnf_accepts(g, '"a\\"b\\\\c\\u000ad\\u001f"')  # only canonical escapes


def test_quoted_classes_offer_escaped_forms() -> None:
    g = grammar("^[^a]*$", quoted=True)
    assert gbnf_accepts(g, json.dumps('x"\\\n\t\x00\x1f\x7f', ensure_ascii=True))
    assert gbnf_accepts(g, '"\\u001F\\u007F"')
    assert not gbnf_accepts(g, '"\x7f"')  # DEL stays escaped, like the generic char rule
    assert not gbnf_accepts(g, json.dumps("xa"))
    assert gbnf_accepts(grammar("^.+$", quoted=True), json.dumps('a"\\\t\x02'))
    assert not gbnf_accepts(grammar("^.+$", quoted=True), json.dumps("a\nb"))
    dot_all = grammar("^[\\s\\S]{2}$", quoted=True)
    assert gbnf_accepts(dot_all, '"A\\n"')
    assert not gbnf_accepts(dot_all, '"\\u0041\\n"')  # A is written as itself (as llguidance's %json does)
    assert not gbnf_accepts(dot_all, '"A"')


def test_huge_upper_bounds_are_dropped() -> None:
    assert raw_accepts("^a{1,1000000}$", "a" * 50) and not raw_accepts("^a{1,1000000}$", "")


def test_unicode() -> None:
    assert raw_accepts("^\\uD83D\\uDE00+$", "😀😀")
    assert raw_accepts("^\\u{1F600}$", "😀")
    assert raw_accepts("^[^\\x00-\\x7F]+$", "éü😀")
    assert not raw_accepts("^[^\\x00-\\x7F]+$", "éaü")
    assert raw_accepts("^[é-ë]$", "ê")
    assert quoted_accepts("^[é-ë]$", "ê")
    assert raw_accepts("^\\s$", "\u2028") and raw_accepts("^\\s$", "\u3000")
    assert not raw_accepts("^.$", "\u2028")


def test_rules_are_terminal_only_and_shared() -> None:
    rules = RuleSet()
    first = regex_to_gbnf("^a(b|c)*$", rules, "tool-x", path="#/pattern", quoted=True)
    again = regex_to_gbnf("^a(b|c)*$", rules, "tool-x", path="#/pattern", quoted=True)
    other = regex_to_gbnf("^a(b|c)*$", rules, "tool-x", path="#/pattern", quoted=False)
    assert first == again == "tool-x" and other == "tool-x-2"
    unanchored = regex_to_gbnf("x", rules, "y", path="#/pattern", quoted=True)
    assert set(rule_references(rules.body(unanchored))) == {"char"}
    assert rule_references(rules.body(first)) == []


ERRORS = [
    ("(a", 0, "missing ')'"),
    ("a)", 1, "unbalanced"),
    ("a(b))", 4, "unbalanced"),
    ("(a)\\1", 3, "backreference"),
    ("(?<n>a)\\k<n>", 7, "named backreference"),
    ("(?=a)", 0, "lookaround"),
    ("(?!a)", 0, "lookaround"),
    ("(?<=a)b", 0, "lookaround"),
    ("(?<!a)b", 0, "lookaround"),
    ("(?i)a", 0, "unsupported group"),
    ("\\bword", 0, "word boundary"),
    ("a\\B", 1, "word boundary"),
    ("a^b", 1, "start/end"),
    ("a$b", 1, "end of the pattern"),
    ("(^a)", 1, "start/end"),
    ("(a$)", 2, "start/end"),
    ("*a", 0, "nothing to repeat"),
    ("a|?", 2, "nothing to repeat"),
    ("{2}", 0, "nothing to repeat"),
    ("a**", 2, "nested quantifier"),
    ("a{2}{3}", 4, "nested quantifier"),
    ("a{3,2}", 1, "out of order"),
    ("a{200000}", 1, "above"),
    ("[b-a]", 1, "out of order"),
    ("[\\d-z]", 1, "range bound"),
    ("[]", 0, "matches nothing"),
    ("[a", 0, "unterminated"),
    ("\\p{L}", 0, "property"),
    ("a\\", 1, "lone backslash"),
    ("\\q", 0, "unknown escape"),
    ("\\x4", 0, "hex digits"),
    ("\\u12", 0, "hex digits"),
    ("\\u{110000}", 0, "invalid"),
    ("\\uD800", 0, "surrogate"),
    ("\\uD83D\\u0041", 0, "surrogate"),
    ("\\c1", 0, "letter"),
    ("\\07", 0, "octal"),
]


@pytest.mark.parametrize(("pattern", "offset", "fragment"), ERRORS)
def test_errors(pattern: str, offset: int, fragment: str) -> None:
    with pytest.raises(PatternError) as info:
        regex_to_gbnf(pattern, RuleSet(), "p", path="#/properties/x/pattern", quoted=False)
    err = info.value
    assert isinstance(err, SchemaError)
    assert (err.pattern, err.position, err.path) == (pattern, offset, "#/properties/x/pattern")
    assert fragment in str(err) and "#/properties/x/pattern" in str(err)


def test_non_string_pattern_and_deep_nesting() -> None:
    with pytest.raises(PatternError):
        regex_to_gbnf(5, RuleSet(), "p", path="#/pattern", quoted=True)  # type: ignore[arg-type]
    with pytest.raises(PatternError, match="too deeply"):
        regex_to_gbnf("(" * 5000 + ")" * 5000, RuleSet(), "p", path="#/pattern", quoted=True)


# Random patterns over constructs whose ECMA and Python (re.ASCII, $ → \Z) semantics agree on the
# alphabet below ("." differs only on "\r" and the Unicode line separators, which are left out).
ATOMS = st.sampled_from(["a", "b", "\\d", ".", "[ab]", "[^a]", "\\s", "\\w", "[a-c\\d]", '"', "\\\\", "\\n",
                         "[\\x00-\\x1f]", "é"])
QUANTIFIERS = st.sampled_from(["*", "+", "?", "{2}", "{1,2}", "{0,}", "*?", "{2,}", "{0,2}", "{3}", "{2,3}"])
PATTERNS = st.tuples(
    st.sampled_from(["", "^"]),
    st.recursive(ATOMS, lambda inner: st.one_of(
        st.tuples(inner, inner).map("".join),
        st.tuples(inner, inner).map(lambda t: f"({t[0]}|{t[1]})"),
        st.tuples(inner, QUANTIFIERS).map(lambda t: f"(?:{t[0]}){t[1]}"),
    ), max_leaves=6),
    st.sampled_from(["", "$"]),
).map("".join)
TEXTS = st.text(alphabet=st.sampled_from(list('ab1 "\\\n\t\x01éz')), max_size=6)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=PATTERNS, text=TEXTS)
def test_fuzz_agrees_with_python(pattern: str, text: str) -> None:
    expected = python_search(pattern, text)
    assert raw_accepts(pattern, text) == expected
    assert quoted_accepts(pattern, text) == expected


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=12) | st.text(alphabet=st.sampled_from(list("ab-^$\\|()[]{}*+?.,:=!<>0123dDswbBuxc")),
                                      max_size=12))
def test_arbitrary_patterns_give_valid_grammars_or_pattern_errors(pattern: str) -> None:
    for quoted in (False, True):
        try:
            text = grammar(pattern, quoted=quoted)
        except PatternError as err:
            assert 0 <= err.position <= len(pattern)
            return
        compile_gbnf(text)  # llguidance accepts the GBNF
