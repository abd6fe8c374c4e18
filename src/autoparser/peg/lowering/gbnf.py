"""Lowering a PEG node graph to a GBNF grammar (llama.cpp dialect).

PEG and CFG differ: lookaheads (``peek``/``negate``) cannot be expressed and emit nothing, making the
grammar slightly more permissive than the parser; ordered choice becomes plain alternation. Everything else
has an exact form:

* ``until(delims)`` becomes an exclusion pattern over the trie of the delimiters. Unlike the reference's
  pattern it is exact: text may end in a proper prefix of a delimiter (``x</`` before ``</think>``), and a
  character that starts a new delimiter is never swallowed by a mismatch branch. When a delimiter's first
  character recurs inside a delimiter the pattern would not be exact, so the delimiter automaton is written
  as right-recursive rules instead.
* ``space()`` is at most ``MAX_SPACE`` (64) whitespace characters: narrower than the parser, which reads any
  run, because unbounded whitespace lets a constrained model write spaces until max_tokens.
* ``schema()`` emits the grammar of its JSON schema (:mod:`.json_schema`); JSON leaves use generic JSON rules.
* Lazy grammars keep only what trigger rules reach, with ``root`` alternating the trigger rules.

Rule names are sanitized through :class:`~.gbnf_syntax.RuleSet`, which never lets two different source
names share a rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...errors import GrammarError
from ..graph import collect_rules
from ..nodes import (
    AnyChar,
    Atomic,
    Chars,
    Choice,
    Commit,
    End,
    Eps,
    Gbnf,
    Json,
    JsonNotKnownInvalid,
    Literal,
    Negate,
    Parser,
    Peek,
    Recover,
    Ref,
    Repeat,
    Rule,
    Schema,
    Sequence,
    Space,
    Start,
    StringContent,
    Tag,
    Until,
    UntilViableJson,
)
from .gbnf_syntax import (
    JSON_WS_BODY,
    JSON_WS_RULE,
    SPACE_BODY,
    SPACE_RULE,
    RuleSet,
    class_char,
    literal,
    sanitize_rule_name,
)

if TYPE_CHECKING:
    from .json_schema import JsonSchemaConverter

__all__ = ["JSON_KIND_SCHEMAS", "GrammarWriter", "to_gbnf", "until_pattern"]

# Precedence of an emitted expression, to decide where parentheses are needed.
EMPTY, ALT, SEQ, POSTFIX, ATOM = range(5)

ANY_CHAR_RULE = "any-char"
ANY_CHAR_BODY = r'[^\n] | "\n"'  # llguidance's "." excludes newline; this form means the same everywhere


@dataclass(frozen=True, slots=True)
class Expr:
    """A GBNF expression and its precedence."""

    text: str
    prec: int

    def wrapped(self, at_least: int) -> str:
        """The text, parenthesized if its precedence is below ``at_least``."""
        return self.text if self.prec >= at_least else f"({self.text})"


_EMPTY = Expr("", EMPTY)


def quantifier(lo: int, hi: int) -> str:
    """GBNF repetition suffix for ``lo``..``hi`` (``hi=-1``: unbounded)."""
    if hi < 0:
        return {0: "*", 1: "+"}.get(lo, f"{{{lo},}}")
    if lo == hi:
        return "" if lo == 1 else f"{{{lo}}}"
    return "?" if (lo, hi) == (0, 1) else f"{{{lo},{hi}}}"


def _negated_class(chars: set[str]) -> str:
    return "[^" + "".join(class_char(ch) for ch in sorted(chars)) + "]"


def _alternation(items: list[str]) -> str:
    return items[0] if len(items) == 1 else "(" + " | ".join(items) + ")"


def until_pattern(delimiters: tuple[str, ...], rules: RuleSet) -> Expr:
    """GBNF for "any text containing none of ``delimiters``" (which may end in a delimiter prefix)."""
    # Trie of the delimiters; a node is the prefix string. A node equal to a delimiter is terminal.
    terminals = set(delimiters)
    prefixes: dict[str, set[str]] = {}  # non-terminal, non-root prefix -> next characters
    for d in delimiters:
        for k in range(1, len(d)):
            if any(d[:j] in terminals for j in range(1, k + 1)):
                break  # a shorter delimiter ends here: the text stops before going deeper
            prefixes.setdefault(d[:k], set()).add(d[k])
    firsts = {d[0] for d in delimiters}
    if any(ch in firsts for d in delimiters for ch in d[1:]):
        return _until_automaton(delimiters, rules)
    paths = sorted(prefixes, key=lambda p: (len(p), p))
    outside = _negated_class(firsts)
    if not paths:  # single-character delimiters only
        return Expr(f"{outside}*", POSTFIX)
    path_alt = _alternation([literal(p) for p in paths])
    exits = [f"{literal(p)} {_negated_class(prefixes[p] | firsts)}" for p in paths]
    exit_alt = " | ".join(exits)
    return Expr(f"({outside} | {path_alt}* ({exit_alt}))* {path_alt}*", SEQ)


def _until_automaton(delimiters: tuple[str, ...], rules: RuleSet) -> Expr:
    """Exact right-recursive rules for the Aho–Corasick automaton of ``delimiters``."""
    alphabet = sorted({ch for d in delimiters for ch in d})
    terminals = set(delimiters)
    states = sorted({d[:k] for d in delimiters for k in range(len(d))}, key=lambda p: (len(p), p))
    states = [s for s in states if not any(s[:j] in terminals for j in range(1, len(s) + 1))]
    state_set = set(states)

    def step(state: str, ch: str) -> str | None:
        """Next state, or None when a delimiter completes."""
        text = state + ch
        for k in range(len(text) + 1):  # longest suffix of `text` that is a state (or a delimiter)
            suffix = text[k:]
            if any(suffix.endswith(d) for d in terminals):
                return None
            if suffix in state_set:
                return suffix
        return ""

    key = ("until-automaton", delimiters)
    names = {s: rules.reserve(f"until-{len(states)}-s{i}", (key, s)) for i, s in enumerate(states)}
    for state in states:
        alternatives = [f"{_negated_class(set(alphabet))} {names['']}"]
        for ch in alphabet:
            target = step(state, ch)
            if target is not None:
                alternatives.append(f"{literal(ch)} {names[target]}")
        alternatives.append('""')
        rules.define(names[state], " | ".join(alternatives))
    return Expr(names[""], ATOM)


class GrammarWriter:
    """Writes the GBNF for one parser graph into a :class:`RuleSet`."""

    def __init__(self, root: Parser, rules: RuleSet | None = None) -> None:
        self.root = root
        self.rules = rules if rules is not None else RuleSet()
        self.peg_rules = collect_rules(root)
        self._converter: JsonSchemaConverter | None = None
        self._untils: dict[tuple[str, ...], Expr] = {}
        for shared in ("root", SPACE_RULE, JSON_WS_RULE, ANY_CHAR_RULE):  # claim the fixed names first
            self.rules.reserve(shared, ("root",) if shared == "root" else None)

    @property
    def converter(self) -> JsonSchemaConverter:
        if self._converter is None:
            from .json_schema import JsonSchemaConverter

            self._converter = JsonSchemaConverter(self.rules)
        return self._converter

    def grammar(self, *, lazy: bool = False) -> str:
        """The full GBNF text."""
        return self.rules.render(self.lower(lazy=lazy))

    def lower(self, *, lazy: bool = False) -> str:
        """Lower the whole parser into :attr:`rules`; returns the root rule's name."""
        root_name = self.rules.reserve("root", ("root",))
        if lazy:
            triggers = [rule for rule in self.peg_rules.values() if rule.trigger]
            if not triggers:
                raise GrammarError("a lazy grammar needs at least one trigger_rule() in the parser")
            names = sorted(self.rule_name(rule.name) for rule in triggers)
            self.rules.define(root_name, " | ".join(names))
        else:
            self.rules.define(root_name, self.expr(self.root).text or '""')
        return root_name

    def rule_name(self, name: str) -> str:
        """The GBNF rule for PEG rule ``name`` (lowered on first use)."""
        key = ("peg-rule", name)
        existing = self.rules.lookup(key)
        if existing is not None:
            return existing
        rule = self.peg_rules.get(name)
        if rule is None:
            raise GrammarError(f"rule {name!r} is referenced but not defined")
        gbnf_name = self.rules.reserve(name, key)
        self.rules.define(gbnf_name, '""')  # placeholder while the (maybe recursive) body is lowered
        self.rules.define(gbnf_name, self.expr(rule.body).text or '""')
        return gbnf_name

    def _shared(self, name: str, body: str) -> Expr:
        """A rule shared by everything in the grammar (the JSON-schema converter uses the same keys)."""
        return Expr(self.rules.add(name, body), ATOM)

    def expr(self, node: Parser) -> Expr:
        """GBNF expression for ``node``."""
        match node:
            case Eps() | Start() | End() | Peek() | Negate() | Commit() | JsonNotKnownInvalid():
                return _EMPTY
            case Literal(text=text):
                return Expr(literal(text), ATOM) if text else _EMPTY
            case AnyChar():
                return self._shared(ANY_CHAR_RULE, ANY_CHAR_BODY)
            case Space():
                return self._shared(SPACE_RULE, SPACE_BODY)
            case Chars(char_class=cls, min=lo, max=hi):
                suffix = quantifier(lo, hi)
                return Expr(cls.gbnf() + suffix, POSTFIX if suffix else ATOM)
            case Sequence(items=items):
                parts = [e for e in self._sequence_parts(items) if e.prec != EMPTY]
                if not parts:
                    return _EMPTY
                if len(parts) == 1:
                    return parts[0]
                return Expr(" ".join(p.wrapped(SEQ) for p in parts), SEQ)
            case Choice(items=items):
                alts = [self.expr(item) for item in items]
                texts = list(dict.fromkeys(a.wrapped(ALT) if a.prec != EMPTY else '""' for a in alts))
                return Expr(" | ".join(texts), ALT) if len(texts) > 1 else alts[0]
            case Repeat(child=child, min=lo, max=hi):
                inner = self.expr(child)
                if inner.prec == EMPTY:
                    return _EMPTY
                suffix = quantifier(lo, hi)
                return Expr(inner.wrapped(ATOM) + suffix, POSTFIX) if suffix else inner
            case Until(delimiters=()) | UntilViableJson():
                any_rule = self._shared(ANY_CHAR_RULE, ANY_CHAR_BODY)
                return Expr(f"{any_rule.text}*", POSTFIX)
            case Until(delimiters=delimiters):
                return self._until(delimiters)
            case Rule(name=name) | Ref(name=name):
                return Expr(self.rule_name(name), ATOM)
            case Tag(child=child) | Atomic(child=child) | Recover(child=child):
                return self.expr(child)
            case Gbnf(grammar=grammar):
                return Expr(grammar, ALT) if grammar.strip() else _EMPTY
            case Schema():
                return self._schema(node)
            case Json(kind=kind, flavor="json"):
                return Expr(self.converter.convert(JSON_KIND_SCHEMAS[kind], f"json-{kind}"), ATOM)
            case Json(kind=kind, flavor="python" | "pythonic" as flavor):
                return Expr(self._python_rules(kind, flavor), ATOM)
            case StringContent(quote=quote, flavor=flavor):
                return Expr(self._string_content(quote, flavor), ATOM)
        raise GrammarError(f"cannot write GBNF for parser node of type {type(node).__name__}")

    def _sequence_parts(self, items: tuple[Parser, ...]) -> list[Expr]:
        """A sequence's parts, where text up to delimiters directly followed by one of them is one shared rule
        (:meth:`_until_then`)."""
        flat = _flattened(items)
        parts: list[Expr] = []
        i = 0
        while i < len(flat):
            until = flat[i]
            following = flat[i + 1] if i + 1 < len(flat) else None
            if isinstance(until, Until) and isinstance(following, Literal) and following.text in until.delimiters:
                parts.append(self._until_then(until.delimiters, following.text))
                i += 2
                continue
            parts.append(self.expr(until))
            i += 1
        return parts

    def _until_then(self, delimiters: tuple[str, ...], delimiter: str) -> Expr:
        """Text up to ``delimiters``, then ``delimiter``: a rule of its own, written once for every value that
        uses it. Tagged formats close every value with the same tag: with the pattern inline, a 1,000-tool request
        of six string parameters each was 20 MB of grammar (which the engine reads and compiles on every request).
        The delimiter belongs to the rule so that the rule is exact as one lexeme too (llguidance makes a rule of
        terminals alone one lexeme, matched greedily: the text alone could end in a prefix of the delimiter)."""
        key = ("until-then", delimiters, delimiter)
        name = self.rules.lookup(key)
        if name is None:
            name = self.rules.reserve("text-to-" + sanitize_rule_name(delimiter).strip("-"), key)
            self.rules.define(name, self._until(delimiters).wrapped(SEQ) + " " + literal(delimiter))
        return Expr(name, ATOM)

    def _until(self, delimiters: tuple[str, ...]) -> Expr:
        """The exclusion pattern, inline (llguidance would lex a rule of its own greedily), computed once per
        delimiter set: tagged formats close every value with the same tag."""
        expr = self._untils.get(delimiters)
        if expr is None:
            expr = self._untils[delimiters] = until_pattern(delimiters, self.rules)
        return expr

    def _schema(self, node: Schema) -> Expr:
        schema = node.json_schema
        if schema is None:
            return self.expr(node.child)
        if node.raw:
            if not isinstance(schema, dict):
                return self.expr(node.child)
            raw = self.converter.convert_raw_string(schema, node.name)
            return self.expr(node.child) if raw is None else Expr(raw, ALT)
        return Expr(self.converter.convert(schema, node.name), ALT)

    def _string_content(self, quote: str, flavor: str) -> str:
        if flavor in ("python", "pythonic"):
            char_rule = self._python_rules("dq-char" if quote == '"' else "sq-char")
            return f"{char_rule}*"
        name = "json-string-content" if quote == '"' else "json-sq-string-content"
        q = class_char(quote)
        body = f'([^{q}\\\\] | "\\\\" ([{q}\\\\/bfnrt] | "u" [0-9a-fA-F]{{4}}))*'
        return self._shared(name, body).text

    def _python_rules(self, kind: str, flavor: str = "python") -> str:
        """Rules for Python literals (dicts, lists, '...'/"..." strings, True/False/None; the ``pythonic`` flavor
        also spells the keywords true/false/null)."""
        ws = self._shared(JSON_WS_RULE, JSON_WS_BODY).text
        number = self.converter.convert({"type": "number"}, "json-number")
        dq = self._shared("py-dq-char", r'[^"\\] | "\\" ([^\n] | "\n")').text
        sq = self._shared("py-sq-char", r"""[^'\\] | "\\" ([^\n] | "\n")""").text
        string = self._shared("py-string", f'"\\"" {dq}* "\\"" | "\'" {sq}* "\'"').text
        if flavor == "pythonic":
            pre = "pyj"
            boolean = self._shared("pyj-bool", '"True" | "False" | "true" | "false"').text
            none = self._shared("pyj-none", '"None" | "null"').text
        else:
            pre = "py"
            boolean = self._shared("py-bool", '"True" | "False"').text
            none = self._shared("py-none", '"None"').text
        value = self.rules.reserve(f"{pre}-value")
        kv = self._shared(f"{pre}-kv", f'{string} {ws} ":" {ws} {value}').text
        sep = f'{ws} "," {ws}'
        dict_ = self._shared(f"{pre}-dict", f'"{{" {ws} ({kv} ({sep} {kv})*)? {ws} "}}"').text
        list_ = self._shared(f"{pre}-list", f'"[" {ws} ({value} ({sep} {value})*)? {ws} "]"').text
        self.rules.add(f"{pre}-value", f"{dict_} | {list_} | {string} | {number} | {boolean} | {none}")
        names = {
            "value": value,
            "object": dict_,
            "array": list_,
            "string": string,
            "number": number,
            "bool": boolean,
            "null": none,
            "dq-char": dq,
            "sq-char": sq,
        }
        return names[kind]


#: The JSON schema each kind of ``json()`` leaf stands for.
JSON_KIND_SCHEMAS: dict[str, dict[str, object]] = {
    "value": {},
    "object": {"type": "object"},
    "array": {"type": "array"},
    "string": {"type": "string"},
    "number": {"type": "number"},
    "bool": {"type": "boolean"},
    "null": {"type": "null"},
}


def to_gbnf(parser: Parser, *, lazy: bool = False) -> str:
    """GBNF grammar for ``parser``.

    ``lazy=False``: ``root`` is the whole parser. ``lazy=True``: only rules reachable from
    ``trigger_rule()`` nodes are written and ``root`` alternates the trigger rules (the grammar is
    activated by the sampler once a trigger word appears).
    """
    return GrammarWriter(parser).grammar(lazy=lazy)


def _flattened(items: tuple[Parser, ...]) -> list[Parser]:
    """``items`` with nested sequences spliced in (the same language: a sequence of sequences is one sequence)."""
    flat: list[Parser] = []
    for item in items:
        if isinstance(item, Sequence):
            flat.extend(_flattened(item.items))
        else:
            flat.append(item)
    return flat
