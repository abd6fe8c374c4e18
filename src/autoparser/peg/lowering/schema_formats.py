"""Shared GBNF building blocks for JSON schemas: generic JSON rules, string formats, integer ranges.

Generic rules (``value``, ``string``, ``char`` ...) are reserved under fixed keys (``("json", kind)``)
so every user of a :class:`RuleSet` (the schema converter, the regex lowering, the PEG lowering) shares
one definition and a foreign rule that happens to be called ``value`` cannot be picked up by accident.
JSON values never carry trailing whitespace; whitespace between tokens is ``json-ws``.
"""

from __future__ import annotations

from .gbnf_syntax import JSON_WS_BODY, JSON_WS_RULE, RuleSet, literal

__all__ = [
    "ANY_JSON_CHAR",
    "ANY_RAW_CHAR",
    "FORMATS",
    "MAX_REPEAT",
    "format_rule",
    "int_range",
    "json_rule",
    "json_ws",
    "repeat",
]

#: Largest repetition count written into a grammar. Larger lower bounds are errors; larger upper bounds
#: are dropped (the grammar gets slightly more permissive instead of unusable for engines).
MAX_REPEAT = 100_000

ANY_JSON_CHAR = "char"
ANY_RAW_CHAR = "raw-char"

# Templates: ``{name}`` placeholders are replaced by the (possibly suffixed) names of other generic rules.
_GENERIC: dict[str, str] = {
    "value": "{object} | {array} | {string} | {number} | {boolean} | {null}",
    "object": '"{{" {ws} ( {member} ( {ws} "," {ws} {member} )* )? {ws} "}}"',
    "member": '{string} {ws} ":" {ws} {value}',
    "array": '"[" {ws} ( {value} ( {ws} "," {ws} {value} )* )? {ws} "]"',
    "string": '"\\"" {char}* "\\""',
    # JSON as llguidance writes it (so GBNF and Lark's %json describe the same strings): characters that need no
    # escape are written as themselves, so \u escapes only spell control characters and \/ is not used.
    "char": r'[^"\\\x00-\x1F\x7F] | "\\" ( ["\\bfnrt] | "u" ( "00" [01] [0-9a-fA-F] | "007" [fF] ) )',
    # One code point of a string body, for minLength/maxLength (with no surrogate escapes, one char rule).
    "code-point": r'[^"\\\x00-\x1F\x7F] | "\\" ( ["\\bfnrt] | "u" ( "00" [01] [0-9a-fA-F] | "007" [fF] ) )',
    "raw-char": '[^\\n] | "\\n"',  # any code point (llguidance's "." does not match a newline)
    "number": '"-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?',
    "integer": '"-"? ( "0" | [1-9] [0-9]* )',
    "boolean": '"true" | "false"',
    "null": '"null"',
}
_DEPENDENCIES = {
    kind: [dep for dep in ("object", "array", "string", "number", "boolean", "null", "member", "value", "char")
           if "{" + dep + "}" in body]
    for kind, body in _GENERIC.items()
}

_HEX = "[0-9a-fA-F]"
_TIME_HOUR = '( [01] [0-9] | "2" [0-3] )'
_TIME = (
    f'{_TIME_HOUR} ":" [0-5] [0-9] ":" ( [0-5] [0-9] | "60" ) ( "." [0-9]+ )? '
    f'( [zZ] | ( "+" | "-" ) {_TIME_HOUR} ":" [0-5] [0-9] )'
)
_DATE = '[0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] )'
_UUID = " \"-\" ".join(f"{_HEX}{{{n}}}" for n in (8, 4, 4, 4, 12))
#: Exact syntax of the supported ``format`` values (RFC 3339 full-date / full-time / date-time, RFC 4122);
#: ``date-time`` is ``date [Tt] time`` built from the other two rules.
FORMATS: dict[str, str | None] = {"date": _DATE, "time": _TIME, "date-time": None, "uuid": _UUID}


def json_ws(rules: RuleSet) -> str:
    """The ``json-ws`` rule (shared by name with the PEG lowering, which defines the same body)."""
    return rules.add(JSON_WS_RULE, JSON_WS_BODY)


def json_rule(rules: RuleSet, kind: str) -> str:
    """Name of the generic rule ``kind`` (``value``, ``string``, ``char``, ``raw-char``, ...), defining it once."""
    key = ("json", kind)
    existing = rules.lookup(key)
    if existing is not None:  # reserved: defined, or being defined further up a recursive call
        return existing
    name = rules.reserve(kind, key)
    names = {dep: json_rule(rules, dep) for dep in _DEPENDENCIES[kind]}
    if "{ws}" in _GENERIC[kind]:
        names["ws"] = json_ws(rules)
    return rules.define(name, _GENERIC[kind].format(**names))


def format_rule(rules: RuleSet, fmt: str) -> str:
    """Name of the rule for the unquoted text of string format ``fmt`` (a key of :data:`FORMATS`)."""
    key = ("json-format", fmt)
    existing = rules.lookup(key)
    if existing is not None:
        return existing
    body = FORMATS[fmt]
    if body is None:
        body = f"{format_rule(rules, 'date')} [Tt] {format_rule(rules, 'time')}"
    return rules.define(rules.reserve(fmt, key), body)


def repeat(atom: str, lo: int, hi: int | None) -> str:
    """``atom`` repeated ``lo..hi`` times (``hi=None``: unbounded); ``atom`` must already be atomic."""
    if hi == 0:
        return '""'
    if (lo, hi) == (0, None):
        return f"{atom}*"
    if (lo, hi) == (1, None):
        return f"{atom}+"
    if (lo, hi) == (0, 1):
        return f"{atom}?"
    if (lo, hi) == (1, 1):
        return atom
    if hi is None:
        return f"{atom}{{{lo},}}"
    return f"{atom}{{{lo}}}" if lo == hi else f"{atom}{{{lo},{hi}}}"


# ---------------------------------------------------------------------------------- integer ranges
def _digit_range(lo: str, hi: str) -> str:
    return literal(lo) if lo == hi else f"[{lo}-{hi}]"


def _alternation(options: list[str]) -> str:
    return options[0] if len(options) == 1 else "( " + " | ".join(options) + " )"


def _same_length(lo: str, hi: str) -> str:
    """Digit strings of the same length between ``lo`` and ``hi`` inclusive (``lo <= hi``)."""
    n = len(lo)
    if lo == hi:
        return literal(lo)
    if n == 1:
        return _digit_range(lo, hi)
    if lo == "0" * n and hi == "9" * n:
        return repeat("[0-9]", n, n)
    if lo[0] == hi[0]:
        return f"{literal(lo[0])} {_same_length(lo[1:], hi[1:])}"
    options: list[str] = []
    first, last = int(lo[0]), int(hi[0])
    if lo[1:] != "0" * (n - 1):  # lo's leading digit with a constrained tail
        options.append(f"{literal(lo[0])} {_same_length(lo[1:], '9' * (n - 1))}")
        first += 1
    if hi[1:] != "9" * (n - 1):
        tail = f"{literal(hi[0])} {_same_length('0' * (n - 1), hi[1:])}"
        last -= 1
    else:
        tail = ""
    if first <= last:
        options.append(f"{_digit_range(str(first), str(last))} {repeat('[0-9]', n - 1, n - 1)}")
    if tail:
        options.append(tail)
    return _alternation(options)


def _naturals(lo: int, hi: int | None) -> str:
    """Decimal numbers without leading zeros in ``[lo, hi]`` (``hi=None``: unbounded), ``0 <= lo``."""
    lo_len = len(str(lo))
    if hi is None and lo in (0, 1, 10 ** (lo_len - 1)):  # every number from lo's length up
        tail = f"[1-9] {repeat('[0-9]', max(lo_len - 1, 0), None)}"
        return f'( "0" | {tail} )' if lo == 0 else tail
    options: list[str] = []
    for length in range(lo_len, (len(str(hi)) if hi is not None else lo_len) + 1):
        low = max(lo, 10 ** (length - 1) if length > 1 else 0)
        high = 10**length - 1 if hi is None else min(hi, 10**length - 1)
        if low <= high:
            options.append(_same_length(str(low), str(high)))
    if hi is None:
        options.append(f"[1-9] {repeat('[0-9]', lo_len, None)}")
    return _alternation(options)


def int_range(lo: int | None, hi: int | None) -> str:
    """GBNF expression (terminal-only) for canonical JSON integers ``n`` with ``lo <= n <= hi``."""
    options: list[str] = []
    if lo is None or lo < 0:  # negative part: "-" followed by |n| in [max(1, -hi), -lo]
        options.append(f'"-" {_naturals(1 if hi is None or hi >= 0 else -hi, None if lo is None else -lo)}')
    if hi is None or hi >= 0:
        options.append(_naturals(0 if lo is None else max(lo, 0), hi))
    return _alternation(options)
