"""The strict GBNF recognizer in ``autoparser.check.recognizer``.

It is checked four ways: hand-written cases for the syntax and the tricky semantics (nullable rules,
ambiguity, recursion), Python's ``re`` on random regular expressions (quantifier and group lowering),
a brute-force chart oracle on random small BNF grammars (the Earley core and ``prefix_ok``), and
llguidance on grammars where llguidance's greedy lexing cannot make a difference.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoparser.check.recognizer import (
    GbnfSyntaxError,
    Grammar,
    _compiled,
    _earley,
    accepts,
    earley_items,
    prefix_ok,
)
from tests.support.llg import gbnf_accepts

# --------------------------------------------------------------------------------------------------
# Syntax: elements


@pytest.mark.parametrize(
    ("gbnf", "good", "bad"),
    [
        ('root ::= "abc"', ["abc"], ["", "ab", "abcd", "abd"]),
        ('root ::= ""', [""], ["a"]),
        ('root ::= "a" "b"', ["ab"], ["a", "ba"]),
        ('root ::= "a" | "b" | "cd"', ["a", "b", "cd"], ["", "c", "ab"]),
        ("root ::= [a-cx]", ["a", "b", "c", "x"], ["d", "", "ab"]),
        ("root ::= [^a-c\\n]", ["d", "é", " "], ["a", "c", "\n", ""]),
        ("root ::= [-a]", ["-", "a"], ["b"]),
        ("root ::= [a-]", ["-", "a"], ["b"]),
        ("root ::= [[]", ["["], ["]"]),
        ("root ::= [^]", ["a", "\n"], [""]),  # negated empty class: any code point
        ("root ::= []", [], ["", "a", "]"]),  # empty class: nothing
        ("root ::= .", ["a", "\n", "\r", "😀", "é"], ["", "ab"]),
        ('root ::= "a" ("b" | "c") "d"', ["abd", "acd"], ["ad", "abcd"]),
        ('root ::= ("a" ("b" ("c")))', ["abc"], ["ab"]),
        ('root ::= x x\nx ::= "a" | "b"', ["aa", "ab", "ba"], ["a", "abc"]),
        ('root ::= "a"?', ["", "a"], ["aa"]),
        ('root ::= "a"*', ["", "a", "aaaa"], ["b", "ab"]),
        ('root ::= "a"+', ["a", "aaaa"], ["", "b"]),
        ('root ::= "ab"{2}', ["abab"], ["ab", "ababab", "aab"]),
        ('root ::= "a"{2,}', ["aa", "aaaaa"], ["", "a"]),
        ('root ::= "a"{1,3}', ["a", "aa", "aaa"], ["", "aaaa"]),
        ('root ::= "a"{,2}', ["", "a", "aa"], ["aaa"]),
        ('root ::= "a"{0} "b"', ["b"], ["ab"]),
        ('root ::= "a"{ 1 , 2 }', ["a", "aa"], ["", "aaa"]),
        ('root ::= ("a" | "bc"){2}', ["aa", "abc", "bcbc", "bca"], ["a", "bcb"]),
        ('root ::= "a"* *', ["", "aaa"], ["b"]),  # a quantifier applies to what precedes it
        ('root ::= ("a"?)+ "b"', ["b", "aab"], ["a"]),
        ('root ::= "a" *', ["", "aa"], []),  # blanks before a quantifier are allowed (as in llama.cpp)
    ],
)
def test_elements(gbnf: str, good: list[str], bad: list[str]) -> None:
    for text in good:
        assert accepts(gbnf, text), (gbnf, text)
    for text in bad:
        assert not accepts(gbnf, text), (gbnf, text)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (r'"\n"', "\n"),
        (r'"\r"', "\r"),
        (r'"\t"', "\t"),
        (r'"\\"', "\\"),
        (r'"\""', '"'),
        (r'"\["', "["),
        (r'"\]"', "]"),
        (r'"\x41\x7f"', "A\x7f"),
        (r'"\u00e9\u4E2D"', "é中"),
        (r'"\U0001F600"', "😀"),
        (r'"#"', "#"),  # not a comment inside a literal
        (r"[#]", "#"),  # nor inside a class
        (r"[\]]", "]"),
        (r"[\[]", "["),
        (r"[\\]", "\\"),
        (r'["]', '"'),
        (r"[\x00-\x1F]", "\x1f"),
        (r"[\u0100-\u017F]", "ſ"),
        (r"[\n\t]", "\t"),
        ('"héllo ☃"', "héllo ☃"),
        ('"<｜tool▁sep｜>"', "<｜tool▁sep｜>"),
    ],
)
def test_escapes(body: str, expected: str) -> None:
    gbnf = f"root ::= {body}"
    assert accepts(gbnf, expected)
    assert not accepts(gbnf, expected + "x")


def test_empty_alternatives() -> None:
    gbnf = 'root ::= "a" space "b"\nspace ::= | " " | "\\n"'
    assert [accepts(gbnf, t) for t in ["ab", "a b", "a\nb", "a  b"]] == [True, True, True, False]
    assert accepts('root ::= ( | "x" | )', "")
    assert accepts('root ::= "a" |', "")


def test_comments_and_blank_lines() -> None:
    gbnf = """
# leading comment

root ::= item ("," item)*   # trailing comment with "quotes" and [brackets]
# between rules
item ::= "x" # another
       | "#"

"""
    assert accepts(gbnf, "x,#,x")
    assert not accepts(gbnf, "x,")


def test_multiline_rules() -> None:
    gbnf = """root ::=
  "{" (
        "a"
      | "b"
  )+
  "}"
  | "[" "]"
tail ::= "t"
"""
    grammar = Grammar.parse(gbnf)
    assert list(grammar.rules) == ["root", "tail"]
    assert accepts(grammar, "{abba}")
    assert accepts(grammar, "[]")
    assert not accepts(grammar, "{}")
    assert accepts(grammar, "t", root="tail")


def test_crlf_line_endings() -> None:
    gbnf = 'root ::= a\r\n  "b"\r\na ::= "a" | "\\r"\r\n'
    assert accepts(gbnf, "ab")
    assert accepts(gbnf, "\rb")


def test_rule_names_and_root() -> None:
    gbnf = 'root ::= My-Rule-2\nMy-Rule-2 ::= "v"\n2d ::= "z"'
    assert accepts(gbnf, "v")
    assert accepts(gbnf, "z", root="2d")
    with pytest.raises(ValueError, match="no rule named 'start'"):
        accepts(gbnf, "v", root="start")


@pytest.mark.parametrize(
    ("gbnf", "line", "column", "message"),
    [
        ('root ::= "abc', 1, 10, "unterminated string literal"),
        ("root ::= [abc", 1, 10, "unterminated character class"),
        ('root ::= "a"\nx ::= "\\q"', 2, 8, r"unknown escape '\\q'"),
        ("root ::= [\\-]", 1, 11, r"unknown escape '\\-'"),
        ("root ::= [\\^a]", 1, 11, r"unknown escape '\\\^'"),
        ('root ::= "\\x4"', 1, 11, "exactly 2 hex digits"),
        ('root ::= "\\u12G4"', 1, 11, "exactly 4 hex digits"),
        ('root ::= "\\U00110000"', 1, 11, "out of range"),
        ('# comment\n\n  "b" ::= "c"', 3, 3, "expected a rule name"),
        ('root = "b"', 1, 6, "expected '::='"),
        # Not a rule start, so (liberally) a continuation of ``root``, where '=' makes no sense.
        ('root ::= "a"\nfoo = "b"', 2, 5, "unexpected '=' in the body of rule 'root'"),
        ('root ::= "a" x\n\ny ::= "b" zz', 1, 14, "undefined rule 'x'"),
        ('root ::= "a"\nroot ::= "b"', 2, 1, "already defined at line 1"),
        ('root ::= * "a"', 1, 10, "nothing to repeat"),
        ('root ::= ("a" | "b"', 1, 20, r"expected '\)'"),
        ('root ::= ("a"\nnext ::= "b")', 1, 14, r"expected '\)' to close the '\(' at line 1, column 10"),
        ('root ::= "a")', 1, 13, r"unexpected '\)'"),
        ('root ::= "a" b ::= "c"', 1, 16, "unexpected ':'"),
        ("root ::= [z-a]", 1, 11, "inverted range"),
        ('root ::= "a"{3,2}', 1, 13, "max < min"),
        ('root ::= "a"{}', 1, 14, "expected a repetition count"),
        ('root ::= "a"{,}', 1, 13, "at least one bound"),
        ('root ::= "a"{2', 1, 15, "expected '}'"),
    ],
)
def test_syntax_errors(gbnf: str, line: int, column: int, message: str) -> None:
    with pytest.raises(GbnfSyntaxError, match=message) as info:
        Grammar.parse(gbnf)
    assert (info.value.line, info.value.column) == (line, column)
    assert isinstance(info.value, ValueError)
    assert str(info.value).startswith(f"line {line}, column {column}: ")


def test_error_message_shows_the_line() -> None:
    with pytest.raises(GbnfSyntaxError) as info:
        Grammar.parse('root ::= a\na ::= "x" | missing')
    assert str(info.value).splitlines()[1:] == ['  a ::= "x" | missing', "  " + " " * 12 + "^"]


# --------------------------------------------------------------------------------------------------
# Semantics: nullable rules, ambiguity, recursion


def test_greedy_star_backs_off() -> None:
    gbnf = 'root ::= x "a"\nx ::= [a]*'
    assert [accepts(gbnf, "a" * n) for n in range(5)] == [False, True, True, True, True]


def test_nullable_rules() -> None:
    gbnf = 'root ::= a a\na ::= "x"?'
    assert [accepts(gbnf, "x" * n) for n in range(4)] == [True, True, True, False]
    chain = 'root ::= a b c "z" a\na ::= b?\nb ::= c | ""\nc ::= ("q" | a)?'
    for text in ["z", "qz", "qqqz", "zq", "qzq"]:
        assert accepts(chain, text), text
    assert not accepts(chain, "zqq")
    # Nullable and unit cycles must neither loop nor lose strings.
    cyclic = 'root ::= a\na ::= b | "x" | a a\nb ::= a | ""'
    assert all(accepts(cyclic, "x" * n) for n in range(6))
    assert not accepts(cyclic, "y")


def test_ambiguous_grammar() -> None:
    gbnf = 'root ::= root root | "a" | ""'
    assert accepts(gbnf, "a" * 40)
    assert not accepts(gbnf, "a" * 20 + "b")


def test_left_and_right_recursion() -> None:
    left = 'root ::= expr\nexpr ::= expr "+" term | term\nterm ::= [0-9]+ | "(" expr ")"'
    right = 'root ::= expr\nexpr ::= term "+" expr | term\nterm ::= [0-9]+ | "(" expr ")"'
    for gbnf in (left, right):
        for text in ["1", "1+2", "12+(3+4)+5", "((1))"]:
            assert accepts(gbnf, text), (gbnf, text)
        for text in ["", "+", "1+", "(1", "1++2", "()"]:
            assert not accepts(gbnf, text), (gbnf, text)


def _items_per_char(gbnf: str | Grammar, text: str, *, leo: bool = True) -> float:
    """The recognizer's work per character, counted in Earley items (a clock would depend on the machine)."""
    return earley_items(gbnf, text, leo=leo) / len(text)


def test_long_right_recursion_is_linear() -> None:
    """Leo's optimization: a 4,000-step right-recursive chain is exact and costs the same work per character as a
    short one; plain Earley's work per character grows with the chain (quadratic in all)."""
    gbnf = 'root ::= item root | item\nitem ::= "a" | "b" x\nx ::= "c"?'
    text = "ab" * 2000
    assert accepts(gbnf, text)
    assert not accepts(gbnf, text + "x")
    assert accepts(gbnf, "abc" * 1000)
    for unit in ("ab", "abc"):
        short, long = _items_per_char(gbnf, unit * 100), _items_per_char(gbnf, unit * 2000)
        assert long <= short * 1.05, (unit, short, long)
    # The measure sees quadratic work: without Leo, doubling the chain doubles the work per character.
    assert _items_per_char(gbnf, "ab" * 200, leo=False) > 1.9 * _items_per_char(gbnf, "ab" * 100, leo=False)


def test_leo_matches_plain_earley() -> None:
    gbnf = 'root ::= "a" root | b\nb ::= "b" b | c | ""\nc ::= "c" root'
    grammar = Grammar.parse(gbnf)
    start = list(grammar.rules).index("root")
    for text in ["", "aab", "abcab", "abcabc", "abbbcaaa", "ba", "cb", "abcb", "abbcac"]:
        for complete in (True, False):
            expected = _earley(grammar._tables, start, text, complete, leo=False)
            assert _earley(grammar._tables, start, text, complete) == expected, (text, complete)


# --------------------------------------------------------------------------------------------------
# prefix_ok


def test_prefix_ok() -> None:
    gbnf = 'root ::= "<tool>" [a-z]+ "</tool>"'
    whole = "<tool>abc</tool>"
    assert all(prefix_ok(gbnf, whole[:n]) for n in range(len(whole) + 1))
    assert prefix_ok(gbnf, "<tool>abc<")
    assert not prefix_ok(gbnf, "<tool>abc<x")
    assert not prefix_ok(gbnf, whole + " ")
    assert not prefix_ok(gbnf, "x")


def test_prefix_ok_ignores_dead_branches() -> None:
    """A branch that can never finish (an unproductive rule or an empty class) is not a viable prefix."""
    gbnf = 'root ::= "a" dead | "a" [] | "b" ok\ndead ::= dead "x"\nok ::= "c"*'
    assert not prefix_ok(gbnf, "a")
    assert prefix_ok(gbnf, "bcc")
    assert not prefix_ok('root ::= "a" dead\ndead ::= "x" dead', "")
    assert not accepts('root ::= "a" dead\ndead ::= "x" dead', "ax")


# --------------------------------------------------------------------------------------------------
# JSON and performance

JSON_GBNF = r"""
root   ::= ws value ws
value  ::= object | array | string | number | ("true" | "false" | "null")
object ::=
  "{" ws (
            string ws ":" ws value
    (ws "," ws string ws ":" ws value)*
  )? ws "}"
array  ::= "[" ws ( value (ws "," ws value)* )? ws "]"
string ::=
  "\"" (
    [^"\\\x00-\x1F] |
    "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\""
number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)?
ws     ::= | [ \t\n\r] ws
"""


@pytest.mark.parametrize(
    "text",
    ['{"a": [1, -2.5e+3, true, null, {"b": "\\u00e9\\n"}], "c": {}}', "[]", ' "x" ', "0", "-0.5E7"],
)
def test_json_accepts(text: str) -> None:
    assert accepts(JSON_GBNF, text)


@pytest.mark.parametrize(
    "text", ['{"a":}', "[1,]", "01", '"\\x"', '"\n"', "{a: 1}", "[1 2]", "tru", '{"a" 1}', "1.", ""]
)
def test_json_rejects(text: str) -> None:
    assert not accepts(JSON_GBNF, text)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None)
@given(json_values, st.booleans(), st.sampled_from([None, 1]))
def test_json_dumps_is_accepted(value: object, ascii_only: bool, indent: int | None) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    assert accepts(JSON_GBNF, text)
    assert prefix_ok(JSON_GBNF, text[: len(text) // 2])


def _hundred_rule_json() -> str:
    """JSON plus 90 keyword rules: about 100 rules, as in a generated tool-call grammar."""
    keywords = [f'kw-{i} ::= "keyword{i}" ws' for i in range(90)]
    union = "keyword ::= " + " | ".join(f"kw-{i}" for i in range(90))
    return JSON_GBNF.replace("| number |", "| number | keyword |") + "\n".join([union, *keywords]) + "\n"


def test_2000_chars_cost_linear_work() -> None:
    """A 2,000-character JSON text under a grammar of about 100 rules (as a generated tool-call grammar has), and a
    tag body full of near-misses of its closing tag: both decided, at the same work per character as a text a
    quarter as long (bench/recognizer_bench.py times it)."""
    gbnf = _hundred_rule_json()
    grammar = Grammar.parse(gbnf)
    assert len(grammar.rules) >= 98
    items = [{"name": f"n{i}", "args": [i, "x y", None, {"k": [1.5, True]}]} for i in range(60)]
    text = json.dumps(items)[:1990].rsplit("},", 1)[0] + "}]"
    text = text + " " * (2000 - len(text))
    assert len(text) == 2000
    assert accepts(grammar, text)
    assert accepts(grammar, text.replace('"n7"', "keyword89 "))
    assert not accepts(grammar, text[:-3] + "}" + text[-2:])
    quarter = json.dumps(items)[:500].rsplit("},", 1)[0] + "}]"
    assert accepts(grammar, quarter)
    assert _items_per_char(grammar, text) <= 1.05 * _items_per_char(grammar, quarter)

    tag = (
        'root ::= "<tag>" body "</tag>"\n'
        'body ::= ([^<] | "<" [^/] | "</" [^t] | "</t" [^a] | "</ta" [^g] | "</tag" [^>])*\n'
    )
    body = "a < b </t </ta </tagx </tag </x>" * 100
    text = "<tag>" + body[:1989] + "</tag>"
    assert accepts(tag, text)
    assert not accepts(tag, text + "x")
    quarter = "<tag>" + body[: 32 * 15] + "</tag>"  # whole repeats: a cut "</t" would run into "</tag>"
    assert accepts(tag, quarter)
    assert _items_per_char(tag, text) <= 1.05 * _items_per_char(tag, quarter)


def test_parsed_grammars_are_cached() -> None:
    gbnf = 'root ::= "cached"'
    assert accepts(gbnf, "cached")
    assert _compiled(gbnf) is _compiled(gbnf)


# --------------------------------------------------------------------------------------------------
# Unicode


def test_unicode_literals_and_classes() -> None:
    assert accepts('root ::= "<｜tool▁sep｜>" [一-龥]+', "<｜tool▁sep｜>中文")
    assert not accepts('root ::= "<｜tool▁sep｜>" [一-龥]+', "<｜tool▁sep｜>x")
    assert accepts("root ::= [^\\u0000-\\uFFFF]", "😀")  # an astral code point is one character
    assert not accepts("root ::= [^\\u0000-\\uFFFF]", "é")
    assert accepts('root ::= "\\u00e9" "é"', "éé")
    assert accepts("root ::= [😀-🙏]{2}", "😀🙏")
    assert not accepts("root ::= .", "e\u0301")  # two code points, not one


# --------------------------------------------------------------------------------------------------
# Oracle: random regular expressions, written both as GBNF and as a Python regex

# Each strategy yields (gbnf, python_regex) for the same language.
Pair = tuple[str, str]

_atoms: st.SearchStrategy[Pair] = st.sampled_from(
    [('"a"', "a"), ('"ab"', "ab"), ('""', ""), ("[a-b]", "[a-b]"), ("[^a]", "[^a]"), (".", "(?s:.)"), ('"\\n"', "\n")]
)
_quantifiers = st.sampled_from(
    [("?", "?"), ("*", "*"), ("+", "+"), ("{2}", "{2}"), ("{1,}", "{1,}"), ("{0,2}", "{0,2}"), ("{,2}", "{0,2}")]
)


def _extend(children: st.SearchStrategy[Pair]) -> st.SearchStrategy[Pair]:
    sequence = st.lists(children, min_size=2, max_size=3).map(
        lambda ps: (" ".join(g for g, _ in ps), "".join(r for _, r in ps))
    )
    alternation = st.lists(children, min_size=2, max_size=3).map(
        lambda ps: ("(" + " | ".join(g for g, _ in ps) + ")", "(?:" + "|".join(r for _, r in ps) + ")")
    )
    quantified = st.tuples(children, _quantifiers).map(lambda p: (f"({p[0][0]}){p[1][0]}", f"(?:{p[0][1]}){p[1][1]}"))
    return sequence | alternation | quantified


regular_pairs = st.recursive(_atoms, _extend, max_leaves=6)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(regular_pairs, st.text(alphabet="abc\n", max_size=6))
def test_regular_expressions_against_re(pair: Pair, text: str) -> None:
    gbnf, regex = pair
    assert accepts(f"root ::= {gbnf}", text) == (re.fullmatch(regex, text) is not None), (gbnf, regex)


# --------------------------------------------------------------------------------------------------
# Oracle: random small BNF grammars against a brute-force chart fixpoint

NONTERMINALS = ("root", "n1", "n2")
Bnf = dict[str, list[tuple[str, ...]]]

bnf_grammars: st.SearchStrategy[Bnf] = st.fixed_dictionaries(
    {
        name: st.lists(
            st.lists(st.sampled_from([*NONTERMINALS, "a", "b"]), max_size=3).map(tuple), min_size=1, max_size=3
        )
        for name in NONTERMINALS
    }
)


def render(grammar: Bnf) -> str:
    def symbol(s: str) -> str:
        return s if s in NONTERMINALS else f'"{s}"'

    return "\n".join(
        f"{name} ::= " + " | ".join(" ".join(map(symbol, p)) for p in prods) for name, prods in grammar.items()
    )


def oracle(grammar: Bnf, text: str) -> tuple[bool, bool]:
    """(accepts, prefix_ok) by least fixpoints over all spans of ``text``: slow but obviously right."""
    n = len(text)
    spans: set[tuple[str, int, int]] = set()  # (X, i, j): X derives text[i:j]

    def step(positions: set[int], s: str) -> set[int]:
        if s in NONTERMINALS:
            return {j for k in positions for j in range(k, n + 1) if (s, k, j) in spans}
        return {k + 1 for k in positions if k < n and text[k] == s}

    def ends(symbols: tuple[str, ...], i: int) -> set[int]:
        positions = {i}
        for s in symbols:
            positions = step(positions, s)
        return positions

    changed = True
    while changed:
        changed = False
        for name, prods in grammar.items():
            for i in range(n + 1):
                for j in set().union(*(ends(p, i) for p in prods)):
                    if (name, i, j) not in spans:
                        spans.add((name, i, j))
                        changed = True

    productive: set[str] = set()  # derives some string at all

    def all_productive(symbols: tuple[str, ...]) -> bool:
        return all(s not in NONTERMINALS or s in productive for s in symbols)

    changed = True
    while changed:
        changed = False
        for name, prods in grammar.items():
            if name not in productive and any(all_productive(p) for p in prods):
                productive.add(name)
                changed = True

    covers = {(name, n) for name in productive}  # (X, i): X derives text[i:] followed by anything

    def seq_covers(symbols: tuple[str, ...], i: int) -> bool:
        positions = {i}
        for index, s in enumerate(symbols):
            if all_productive(symbols[index:]) and (
                n in positions or (s in NONTERMINALS and any((s, k) in covers for k in positions))
            ):
                return True
            positions = step(positions, s)
        return n in positions

    changed = True
    while changed:
        changed = False
        for name, prods in grammar.items():
            for i in range(n + 1):
                if (name, i) not in covers and any(seq_covers(p, i) for p in prods):
                    covers.add((name, i))
                    changed = True
    return ("root", 0, n) in spans, ("root", 0) in covers


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bnf_grammars, st.text(alphabet="ab", max_size=6))
def test_random_grammars_against_oracle(grammar: Bnf, text: str) -> None:
    gbnf = render(grammar)
    assert (accepts(gbnf, text), prefix_ok(gbnf, text)) == oracle(grammar, text), gbnf


# --------------------------------------------------------------------------------------------------
# Cross-check with llguidance where greedy lexing cannot matter

AGREEING = {
    "arithmetic": (
        'root ::= expr\nexpr ::= term ("+" term)*\nterm ::= factor ("*" factor)*\nfactor ::= "1" | "(" expr ")"',
        "1+*()",
    ),
    "balanced": ('root ::= ("(" root ")")*', "()"),
    "lists": ('root ::= "[" ( item ("," item)* )? "]"\nitem ::= "a" | "b" | root', "[],ab"),
    "left-recursion": ('root ::= expr\nexpr ::= expr "+" term | term\nterm ::= "x" | "(" expr ")"', "x+()"),
    "nullable": ('root ::= a b a\na ::= "x"?\nb ::= ("y" a)*', "xy"),
    "unicode": ('root ::= ("é" | [α-γ] "x"? | "<｜tool▁sep｜>" | "\\u4E2D"{1,2})*', "éαβγxa<中"),
    "objects": (
        'root ::= "{" ws (kv (ws "," ws kv)*)? ws "}"\nkv ::= "k" ws ":" ws v\nv ::= [0-9] | root\nws ::= | " "',
        "{}k:1, ",
    ),
}


@pytest.mark.parametrize("name", list(AGREEING))
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_agrees_with_llguidance(name: str, data: st.DataObject) -> None:
    gbnf, alphabet = AGREEING[name]
    text = data.draw(st.text(alphabet=alphabet, max_size=8))
    assert accepts(gbnf, text) == gbnf_accepts(gbnf, text), text


def test_agrees_with_llguidance_on_json() -> None:
    for text in ['{"a": [1, {"b": null}]}', "[1,]", '"\\u00e9"', "01", ' [ "x" , -1.5e3 ] ', '{"a" 1}']:
        assert accepts(JSON_GBNF, text) == gbnf_accepts(JSON_GBNF, text), text


def test_disagreement_greedy_lexeme() -> None:
    """llguidance turns the terminal-only rule ``x`` into a greedy lexeme that swallows every ``a``, so
    nothing is left for the final ``"a"``. Under context-free (llama.cpp) semantics ``x`` derives
    ``"aa"`` and the string is in the language."""
    gbnf = 'root ::= x "a"\nx ::= [a]*'
    assert accepts(gbnf, "aaa")
    assert not gbnf_accepts(gbnf, "aaa")
    assert accepts(gbnf, "a") and gbnf_accepts(gbnf, "a")  # x empty: both agree


def test_disagreement_dot_and_newline() -> None:
    """In llama.cpp ``.`` matches any code point, newline included; llguidance maps it to a regex ``.``,
    which does not match ``\\n``. The recognizer follows llama.cpp."""
    gbnf = 'root ::= "<" . ">"'
    assert accepts(gbnf, "<\n>")
    assert not gbnf_accepts(gbnf, "<\n>")
    assert accepts(gbnf, "<x>") and gbnf_accepts(gbnf, "<x>")
