"""Fast scanners for JSON values and Python literals (the leaves behind ``json()`` and friends).

A JSON value is scanned token by token with compiled regular expressions and an explicit stack, never
character by character in Python and never recursively (nesting depth costs memory, not stack). Complete
objects and arrays first go through the C-accelerated ``json.JSONDecoder.raw_decode``; only when that fails
(malformed or cut-off input) does the token scanner run, to find the failure position or decide that more
input is needed.

Two caches keep scanning linear where a parser asks about many positions or about a growing input
(:class:`JsonMemo`):

* **Nested results.** The token scanner records the outcome of every container it opens: the end of those it
  closes, and the failure (or the need for more input) of those still open when it stops. A parser that retries
  a call at every ``{`` of ``{"a":{"a":{"a":...`` then finds each nested answer in O(1) instead of rescanning to
  the end each time.
* **Resumable state.** When a value runs into the end of a partial input, the scanner keeps its state at the
  last token boundary (or inside the string it was reading). Scanning the same value again after the input grew
  continues from there, so a stream pays for each character once.

Every scanner returns ``(status, end)`` with status FAIL (end = failure position), SUCCESS or NEED_MORE
(end = end of input). In partial mode a value cut off by the end of input needs more input, and a number
running to the end never commits (``12`` may become ``123``). Values do not consume trailing whitespace.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Final

__all__ = [
    "FAIL",
    "GEMMA_QUOTE",
    "MORE",
    "OK",
    "DictSyntax",
    "JsonMemo",
    "dict_flavor",
    "dict_syntax",
    "resume_string_body",
    "scan_json",
    "scan_string_body",
]

FAIL: Final = 0
OK: Final = 1
MORE: Final = 2

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
# A prefix of a number running to the end of input (may still grow into a number).
_NUMBER_PREFIX_AT_END = re.compile(r"-?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?(?:[eE][+-]?[0-9]*)?)?\Z")
_NUMBER_TAIL = frozenset("0123456789.eE+-")

# String bodies, written as unrolled loops so the regex engine never alternates per character. A match can be
# restarted at any point it passed through (between characters or whole escapes), which is what resuming does.
_BODY = {
    ('"', "json"): re.compile(r'[^"\\]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\]*)*'),
    ("'", "json"): re.compile(r"[^'\\]*(?:\\(?:['\\/bfnrt]|u[0-9a-fA-F]{4})[^'\\]*)*"),
    ('"', "python"): re.compile(r'[^"\\]*(?:\\[\s\S][^"\\]*)*'),
    ("'", "python"): re.compile(r"[^'\\]*(?:\\[\s\S][^'\\]*)*"),
}
_BODY['"', "gemma"] = _BODY['"', "json"]  # Gemma dicts may hold JSON strings too
_BODY['"', "pythonic"], _BODY["'", "pythonic"] = _BODY['"', "python"], _BODY["'", "python"]
_PARTIAL_ESCAPE = {"json": re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?\Z"), "python": re.compile(r"\\\Z")}
_PARTIAL_ESCAPE["gemma"] = _PARTIAL_ESCAPE["json"]
_PARTIAL_ESCAPE["pythonic"] = _PARTIAL_ESCAPE["python"]

_KEYWORDS = {
    "json": {"t": "true", "f": "false", "n": "null"},
    "python": {"T": "True", "F": "False", "N": "None"},
    # Python literals as models write them in pythonic tool calls: either spelling of the keywords.
    "pythonic": {"T": "True", "F": "False", "N": "None", "t": "true", "f": "false", "n": "null"},
    "gemma": {},
}
_QUOTES = {"json": '"', "python": "\"'", "pythonic": "\"'", "gemma": '"'}

# Gemma 4's argument dicts (see formats/gemma4/): keys and leaf values may be bare text (anything but
# punctuation and "<"), strings are JSON strings or raw text between <|"|> tokens.
GEMMA_QUOTE = '<|"|>'


@dataclass(frozen=True, slots=True)
class DictSyntax:
    """An argument-dict syntax of Gemma 4's family (parser/calls/tools_dict.py): ``{key<colon>value<comma>…}`` with bare
    keys and leaf values, strings as raw text between delimiter tokens (``quote_open`` … ``quote_close``, nothing
    escaped) or as JSON strings, ``[…]`` lists. A bare token runs up to a separator, a bracket or the first character
    of ``quote_open``."""

    quote_open: str = GEMMA_QUOTE
    quote_close: str = GEMMA_QUOTE
    colon: str = ":"
    comma: str = ","

    def __post_init__(self) -> None:
        for token in (self.quote_open, self.quote_close):
            if not token or token[0].isspace() or token[0] in "{}[]\"" or token[0] in self.colon + self.comma:
                raise ValueError(f"not a delimiter token: {token!r}")
        separators = self.colon + self.comma
        if len(separators) != 2 or self.colon == self.comma or any(c in '{}[]"' or c.isspace() for c in separators):
            raise ValueError(f"separators must be two distinct characters: {self.colon!r} {self.comma!r}")



def _bare_pattern(syntax: DictSyntax) -> re.Pattern[str]:
    stops = {syntax.colon, syntax.comma, syntax.quote_open[0], *"{}[]"}
    return re.compile("[^" + "".join(re.escape(c) for c in sorted(stops)) + "]+")


_DICTS: dict[str, DictSyntax] = {"gemma": DictSyntax()}
_BARE: dict[str, re.Pattern[str]] = {"gemma": _bare_pattern(_DICTS["gemma"])}


def dict_flavor(syntax: DictSyntax) -> str:
    """The scanner flavor of ``syntax`` (registered on first use; ``"gemma"`` for Gemma 4's own)."""
    for name, known in _DICTS.items():
        if known == syntax:
            return name
    name = "dict:" + json.dumps([syntax.quote_open, syntax.quote_close, syntax.colon, syntax.comma])
    _BODY['"', name], _PARTIAL_ESCAPE[name], _KEYWORDS[name], _QUOTES[name] = (
        _BODY['"', "json"], _PARTIAL_ESCAPE["json"], {}, '"'
    )
    _BARE[name] = _bare_pattern(syntax)
    _DICTS[name] = syntax
    return name


def dict_syntax(flavor: str) -> DictSyntax | None:
    """The dict syntax of a scanner flavor (None for the JSON and Python flavors)."""
    return _DICTS.get(flavor)
_CONTAINER_KINDS = {"{": "object", "[": "array"}
_NULLS = frozenset({"null", "None"})

# Scanner phases: what is expected at the resume position.
_VALUE, _KEY, _AFTER, _IN_VALUE_STRING, _IN_KEY_STRING, _OPENED, _IN_VALUE_QUOTED, _IN_KEY_QUOTED = range(8)
_STRING_PHASES = frozenset({_IN_VALUE_STRING, _IN_KEY_STRING})
_QUOTED_PHASES = frozenset({_IN_VALUE_QUOTED, _IN_KEY_QUOTED})


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(strict=False, parse_constant=_reject_constant)


class _Duplicate(ValueError):
    pass


def _unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise _Duplicate
    return found


# Canonical JSON: strict (no raw control character in a string) and no key twice in an object.
_CANONICAL = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_unique)


def _canonical_end(text: str, pos: int) -> int:
    """The end of the canonical JSON value at ``pos``; -1 if a value is there but is not canonical. Raises what the
    lenient decoder raises where no value is there: the two part only at a control character in a string (strict
    stops there) or a repeated key (the hook stops there)."""
    try:
        return _CANONICAL.raw_decode(text, pos)[1]
    except _Duplicate:
        return -1
    except json.JSONDecodeError as err:
        if err.msg.startswith("Invalid control character"):
            return -1
        raise


@dataclass(slots=True)
class _ScanState:
    """Where a container scan stopped at the end of partial input: enough to continue it later."""

    pos: int  # resume position
    phase: int  # one of the phase constants above
    closers: list[str]  # expected closing brackets, innermost last
    opens: list[int]  # start position of each open container
    string_start: int = -1  # the opening quote, for the in-string phases
    scan: _ContainerScan | None = None  # the scanner that goes on from here (its text dropped between runs)


@dataclass(slots=True)
class JsonMemo:
    """Scan results shared by every JSON primitive of one parse (or one growing input, see the module docstring).

    ``results`` maps ``(pos, kind, flavor)`` to ``(status, end)`` for outcomes that no continuation of the input can
    change; ``states`` (only for a growing input) holds the resumable state of values cut off by its end.
    """

    results: dict[tuple[int, str, str], tuple[int, int]] = field(default_factory=dict)
    states: dict[tuple[int, str], _ScanState] | None = None
    decoded: tuple[int, int] = (-1, -1)  # span of the last value raw_decode accepted (its insides are unrecorded)

    def clear(self) -> None:
        self.results.clear()
        if self.states is not None:
            self.states.clear()
        self.decoded = (-1, -1)


def scan_string_body(text: str, pos: int, quote: str, flavor: str, partial: bool) -> tuple[int, int]:
    """Scan a string body from ``pos`` up to (not including) the unescaped ``quote``."""
    end = _BODY[quote, flavor].match(text, pos).end()
    n = len(text)
    if end < n and text[end] == quote:
        return OK, end
    if end >= n or (partial and _PARTIAL_ESCAPE[flavor].match(text, end)):
        return (MORE, n) if partial else (FAIL, end)
    return FAIL, end  # a bad escape sequence


def resume_string_body(
    text: str, pos: int, resume: int, quote: str, flavor: str, partial: bool
) -> tuple[int, int, int]:
    """:func:`scan_string_body` of the body starting at ``pos``, continued from ``resume`` (``pos``, or the third
    value an earlier scan of the same body returned: where it may resume once the text has grown), and that value."""
    end = _BODY[quote, flavor].match(text, resume).end()
    n = len(text)
    if end < n and text[end] == quote:
        return OK, end, end
    if end >= n or (partial and _PARTIAL_ESCAPE[flavor].match(text, end)):
        return ((MORE, n) if partial else (FAIL, end)) + (end,)
    return FAIL, end, end  # a bad escape sequence


def _scan_string(text: str, pos: int, flavor: str, partial: bool) -> tuple[int, int]:
    status, end = scan_string_body(text, pos + 1, text[pos], flavor, partial)
    return (OK, end + 1) if status == OK else (status, end)


def _scan_number(text: str, pos: int, partial: bool) -> tuple[int, int]:
    if partial and _NUMBER_PREFIX_AT_END.match(text, pos):
        return MORE, len(text)
    match = _NUMBER.match(text, pos)
    if match is None:
        return FAIL, pos
    end = match.end()
    if end < len(text) and text[end] in _NUMBER_TAIL:
        return FAIL, end
    return OK, end


def _scan_keyword(text: str, pos: int, word: str, partial: bool) -> tuple[int, int]:
    if text.startswith(word, pos):
        return OK, pos + len(word)
    n = len(text)
    if partial and n - pos < len(word) and word.startswith(text[pos:]):
        return MORE, n
    return FAIL, pos


def _scan_scalar(text: str, pos: int, flavor: str, partial: bool) -> tuple[int, int]:
    """A string, number or keyword at ``pos`` (``pos < len(text)``)."""
    ch = text[pos]
    if ch in _QUOTES[flavor]:
        return _scan_string(text, pos, flavor, partial)
    if ch == "-" or "0" <= ch <= "9":
        return _scan_number(text, pos, partial)
    word = _KEYWORDS[flavor].get(ch)
    if word is not None:
        return _scan_keyword(text, pos, word, partial)
    return FAIL, pos


def _setup(flavor: str) -> tuple[str, bool, str, str, str, str, re.Pattern[str] | None]:
    """What a container scan of ``flavor`` needs: its quotes, whether it is a Gemma-family dict (bare tokens and
    delimiter-token strings), the delimiter tokens, colon and comma, and the bare-token pattern."""
    syntax = _DICTS.get(flavor)
    if syntax is None:
        return _QUOTES[flavor], False, "", "", ":", ",", None
    return _QUOTES[flavor], True, syntax.quote_open, syntax.quote_close, syntax.colon, syntax.comma, _BARE[flavor]


# Per flavor, computed once (a stream sets a scan up on most feeds); dict flavors are registered before first use.
_SETUPS: dict[str, tuple[str, bool, str, str, str, str, re.Pattern[str] | None]] = {}


class _ContainerScan:
    """One run of the token scanner over an object or array (see :func:`_scan_container`)."""

    __slots__ = ("bare", "close", "colon", "comma", "dict", "flavor", "memo", "open", "partial", "quotes", "text")

    def __init__(self, text: str, flavor: str, partial: bool, memo: JsonMemo | None) -> None:
        self.text = text
        self.flavor = flavor
        self.partial = partial
        self.memo = memo
        setup = _SETUPS.get(flavor)
        if setup is None:
            setup = _SETUPS[flavor] = _setup(flavor)
        self.quotes, self.dict, self.open, self.close, self.colon, self.comma, self.bare = setup

    def closed(self, start: int, end: int) -> None:
        """The container opened at ``start`` ended at ``end``: every later question about it is answered."""
        if self.memo is not None:
            results, flavor = self.memo.results, self.flavor
            kind = _CONTAINER_KINDS[self.text[start]]
            results[start, "value", flavor] = results[start, kind, flavor] = (OK, end)

    def stopped(self, status: int, end: int, opens: list[int]) -> None:
        """The scan ends with FAIL: so does a scan from any container still open (it sees the same tokens)."""
        if self.memo is not None and status == FAIL:
            results, flavor, text = self.memo.results, self.flavor, self.text
            for start in opens:
                results[start, "value", flavor] = results[start, _CONTAINER_KINDS[text[start]], flavor] = (FAIL, end)

    def run(self, state: _ScanState) -> tuple[int, int, _ScanState | None]:
        """Scan from ``state`` until the outermost container closes, the input fails, or it runs out (``state`` is
        then updated to where to resume, and returned)."""
        text, partial, quotes, flavor = self.text, self.partial, self.quotes, self.flavor
        n = len(text)
        closers, opens = state.closers, state.opens
        i, phase = state.pos, state.phase
        ws = _WS.match
        while True:
            if phase != _AFTER:  # (a scan resumed right after a value goes straight to what follows)
                if phase in _STRING_PHASES:
                    quote = text[state.string_start]
                    end = _BODY[quote, flavor].match(text, i).end()
                    if end >= n or text[end] != quote:
                        if end >= n or (partial and _PARTIAL_ESCAPE[flavor].match(text, end)):
                            # cut off: resume inside the string, after its last complete character or escape
                            state.pos, state.phase = end, phase
                            return self._out_of_input(state, end)
                        self.stopped(FAIL, end, opens)
                        return FAIL, end, None  # a bad escape sequence
                    i = end + 1
                    if phase == _IN_KEY_STRING:
                        phase, i = self._after_key(i)
                        if phase < 0:
                            return self._key_end_failed(i, state.string_start, closers, opens)
                        continue
                    phase = _AFTER
                elif phase == _OPENED:  # right after a bracket: its closer (empty container) or the first element
                    i = ws(text, i).end()  # (a resumed scan may find more whitespace here)
                    if i >= n:
                        state.pos, state.phase = i, _OPENED
                        return self._out_of_input(state, i)
                    if text[i] == closers[-1]:
                        closers.pop()
                        i += 1
                        self.closed(opens.pop(), i)
                        phase = _AFTER
                    else:
                        phase = _KEY if closers[-1] == "}" else _VALUE
                        continue
                elif phase in _QUOTED_PHASES:
                    close = self.close
                    end = text.find(close, i)
                    if end < 0:  # resume where a closing quote cut off at the end could begin
                        resume = max(i, n - len(close) + 1)
                        state.pos, state.phase = resume, phase
                        return self._out_of_input(state, n)
                    i = end + len(close)
                    if phase == _IN_KEY_QUOTED:
                        phase, i = self._after_key(i)
                        if phase < 0:
                            return self._key_end_failed(i, state.string_start, closers, opens)
                        continue
                    phase = _AFTER
                elif phase == _KEY:
                    i = ws(text, i).end()
                    if i >= n:
                        state.pos, state.phase = i, _KEY
                        return self._out_of_input(state, i)
                    if text[i] not in quotes:
                        if self.dict:
                            key_start = i
                            status, i = self._gemma_token(i, closers, opens)
                            if status != OK:
                                return self._token_stopped(status, i, key_start, _KEY, closers, opens)
                            if i < 0:  # a <|"|> quoted key
                                state.string_start = key_start
                                i = key_start + len(self.open)
                                phase = _IN_KEY_QUOTED
                                continue
                            phase, i = self._after_key(i)
                            if phase < 0:
                                return self._key_end_failed(i, key_start, closers, opens)
                            continue
                        self.stopped(FAIL, i, opens)
                        return FAIL, i, None
                    state.string_start = i
                    i += 1
                    phase = _IN_KEY_STRING
                    continue
                elif phase == _VALUE:
                    i = ws(text, i).end()
                    if i >= n:
                        state.pos, state.phase = i, _VALUE
                        return self._out_of_input(state, i)
                    ch = text[i]
                    if ch == "{" or ch == "[":
                        closers.append("}" if ch == "{" else "]")
                        opens.append(i)
                        i = ws(text, i + 1).end()
                        phase = _OPENED
                        continue
                    elif ch in quotes:
                        state.string_start = i
                        i += 1
                        phase = _IN_VALUE_STRING
                        continue
                    elif self.dict:
                        value_start = i
                        status, i = self._gemma_token(i, closers, opens)
                        if status != OK:
                            return self._token_stopped(status, i, value_start, _VALUE, closers, opens)
                        if i < 0:  # a <|"|> quoted value
                            state.string_start = value_start
                            i = value_start + len(self.open)
                            phase = _IN_VALUE_QUOTED
                            continue
                        phase = _AFTER
                    else:
                        status, end = _scan_scalar(text, i, flavor, partial)
                        if status != OK:
                            if status == MORE:  # a number or keyword cut off: resume at its start
                                state.pos, state.phase = i, _VALUE
                                return MORE, n, state
                            self.stopped(FAIL, end, opens)
                            return FAIL, end, None
                        i = end
                        phase = _AFTER
            # phase == _AFTER: after a complete value, close containers or move to the next element
            while True:
                if not closers:
                    return OK, i, None
                i = ws(text, i).end()
                if i >= n:
                    state.pos, state.phase = i, _AFTER
                    return self._out_of_input(state, i)
                ch = text[i]
                if ch == self.comma:
                    i = ws(text, i + 1).end()
                    phase = _KEY if closers[-1] == "}" else _VALUE
                    break
                if ch != closers[-1]:
                    self.stopped(FAIL, i, opens)
                    return FAIL, i, None
                closers.pop()
                i += 1
                self.closed(opens.pop(), i)

    def _after_key(self, i: int) -> tuple[int, int]:
        """After a key ending at ``i``: ``:`` and whitespace, then a value. (-1, position) if that fails there."""
        text, ws = self.text, _WS.match
        i = ws(text, i).end()
        if i >= len(text) or text[i] != self.colon:
            return -1, i
        return _VALUE, ws(text, i + 1).end()

    def _key_end_failed(
        self, i: int, key_start: int, closers: list[str], opens: list[int]
    ) -> tuple[int, int, _ScanState | None]:
        """No ``:`` after a key: more input may bring it (resume at the key), or something else is there."""
        if i >= len(self.text):
            return self._out_of_input(_ScanState(key_start, _KEY, closers, opens), i)
        self.stopped(FAIL, i, opens)
        return FAIL, i, None

    def _gemma_token(self, i: int, closers: list[str], opens: list[int]) -> tuple[int, int]:
        """A bare token or the opening of a ``<|"|>`` string at ``i`` (not a JSON quote, bracket or space).

        (OK, end) for a bare token, (OK, -1) for a quoted string, (MORE, i) when the input ends in what may
        still become either, (FAIL, i) otherwise."""
        text, n, opening = self.text, len(self.text), self.open
        if text.startswith(opening, i):
            return OK, -1
        if text[i] == opening[0]:
            if n - i < len(opening) and opening.startswith(text[i:]) and self.partial:
                return MORE, i
            return FAIL, i
        assert self.bare is not None
        match = self.bare.match(text, i)
        if match is None:
            return FAIL, i
        end = match.end()
        if end >= n and self.partial:
            return MORE, i  # the token may go on
        return OK, end

    def _token_stopped(
        self, status: int, i: int, start: int, phase: int, closers: list[str], opens: list[int]
    ) -> tuple[int, int, _ScanState | None]:
        if status == MORE:
            return MORE, len(self.text), _ScanState(start, phase, closers, opens)
        self.stopped(FAIL, i, opens)
        return FAIL, i, None

    def _out_of_input(self, state: _ScanState, at: int) -> tuple[int, int, _ScanState | None]:
        """The input ends inside the value: more input may complete it (partial), else it is unterminated."""
        if self.partial:
            return MORE, len(self.text), state
        self.stopped(FAIL, at, state.opens)
        return FAIL, at, None


def _scan_container(
    text: str, pos: int, flavor: str, partial: bool, memo: JsonMemo | None, resume: _ScanState | None
) -> tuple[int, int, _ScanState | None]:
    """Scan an object or array at ``pos`` (or continue a scan cut off earlier) with an explicit stack."""
    state = resume if resume is not None else _ScanState(pos, _VALUE, [], [])
    return _ContainerScan(text, flavor, partial, memo).run(state)


def _cut_off_at_end(text: str, err: json.JSONDecodeError) -> bool:
    """Whether the decoder failed only because the input ends (a cheap check for one-off partial parses).

    The decoder validated everything before ``err.pos``; the input is a viable prefix when the failure is
    at the very end, or when what follows the failure point is the start of the token the decoder wanted
    (a string, keyword or number) running to the end. Anything else goes to the exact scanner.
    """
    at, n = err.pos, len(text)
    if at >= n:
        return True
    if err.msg.startswith("Unterminated string"):
        return scan_string_body(text, at + 1, text[at], "json", True)[0] == MORE
    if err.msg == "Expecting value":
        word = _KEYWORDS["json"].get(text[at])
        if word is not None:
            return n - at < len(word) and word.startswith(text[at:])
        return _NUMBER_PREFIX_AT_END.match(text, at) is not None
    return False


_KIND_STARTS = {"object": "{", "array": "["}


def scan_json(
    text: str,
    pos: int,
    kind: str,
    flavor: str,
    partial: bool,
    memo: JsonMemo | None = None,
    canonical: dict[int, int] | None = None,
) -> tuple[int, int]:
    """Scan one value of ``kind`` (value/object/array/string/number/bool/null) at ``pos``. With ``canonical``, a
    JSON object or array the C decoder reads as canonical JSON (strict, every key once per object) is recorded there
    (start -> end; see :class:`~.nodes.Json`)."""
    n = len(text)
    if pos >= n:
        return (MORE, n) if partial else (FAIL, pos)
    ch = text[pos]
    if kind == "value" or kind in _KIND_STARTS:
        if ch == "{" or ch == "[":
            if kind != "value" and ch != _KIND_STARTS[kind]:
                return FAIL, pos
            return _scan_any_container(text, pos, kind, flavor, partial, memo, canonical)
        if kind != "value":
            return FAIL, pos
        if ch in _QUOTES[flavor] and memo is not None and memo.states is not None:
            return _scan_growing_string(text, pos, flavor, partial, memo.states)
        return _scan_scalar(text, pos, flavor, partial)
    if kind == "string":
        if ch not in _QUOTES[flavor]:
            return FAIL, pos
        if memo is not None and memo.states is not None:
            return _scan_growing_string(text, pos, flavor, partial, memo.states)
        return _scan_string(text, pos, flavor, partial)
    if kind == "number":
        return _scan_number(text, pos, partial)
    word = _KEYWORDS[flavor].get(ch)
    if word is None or (word in _NULLS) != (kind == "null"):
        return FAIL, pos
    return _scan_keyword(text, pos, word, partial)


def _scan_growing_string(
    text: str, pos: int, flavor: str, partial: bool, states: dict[tuple[int, str], _ScanState]
) -> tuple[int, int]:
    """A string value at ``pos`` of a growing input: continued from where the last scan of it stopped.

    A string cut off by the end of the input leaves its resume position (after its last complete character or
    escape), so a stream feeding a long string argument a few characters at a time pays for each character once
    instead of rescanning the string from its opening quote on every feed."""
    quote = text[pos]
    resume = states.pop((pos, flavor), None)
    end = _BODY[quote, flavor].match(text, pos + 1 if resume is None else resume.pos).end()
    n = len(text)
    if end < n and text[end] == quote:
        return OK, end + 1
    if end >= n or (partial and _PARTIAL_ESCAPE[flavor].match(text, end)):
        if not partial:
            return FAIL, end
        if resume is None:
            resume = _ScanState(end, _IN_VALUE_STRING, [], [], pos)
        else:
            resume.pos = end
        states[pos, flavor] = resume
        return MORE, n
    return FAIL, end  # a bad escape sequence


def _still_in_string(text: str, flavor: str, partial: bool, resume: _ScanState) -> bool:
    """Whether a container scan that stopped inside a string is still inside it on the longer ``text``; the
    string's new complete characters are passed over (``resume.pos`` moves past them) either way.

    Most feeds of a stream add a few characters to a string value: this answers them without setting up the
    token scanner."""
    end = _BODY[text[resume.string_start], flavor].match(text, resume.pos).end()
    resume.pos = end
    if end >= len(text):
        return partial
    return partial and text[end] == "\\" and _PARTIAL_ESCAPE[flavor].match(text, end) is not None


def _scan_any_container(
    text: str, pos: int, kind: str, flavor: str, partial: bool, memo: JsonMemo | None, canonical: dict[int, int] | None
) -> tuple[int, int]:
    if memo is None:
        return _decode_or_scan(text, pos, flavor, partial, None, canonical)
    known = memo.results.get((pos, kind, flavor))
    if known is not None:
        return known
    states = memo.states
    if states is not None:
        key = (pos, flavor)
        resume = states.get(key)
        if resume is not None:
            # (a stream's feeds mostly land here: the scan cut off by the last feed goes on)
            if resume.phase in _STRING_PHASES and _still_in_string(
                text, flavor, partial, resume
            ):
                return MORE, len(text)
            scan = resume.scan
            if scan is None or scan.memo is not memo or scan.partial != partial:
                scan = resume.scan = _ContainerScan(text, flavor, partial, memo)
            else:
                scan.text = text
            status, end, state = scan.run(resume)
            scan.text = ""  # (no reference to the text kept: a stream's buffer grows in place only if it has none)
            if state is not None:
                states[key] = state
            else:
                del states[key]
                if status != MORE:
                    memo.results[pos, kind, flavor] = (status, end)
            return status, end
    inside_decoded = memo.decoded[0] < pos < memo.decoded[1]
    if inside_decoded or (states is not None and partial):
        # Inside a value the decoder accepted, nested positions were never recorded: scan (and record) them now.
        # For a growing input the scanner also leaves a state to resume from.
        status, end, state = _scan_container(text, pos, flavor, partial, memo, None)
        if state is not None and states is not None:
            states[pos, flavor] = state
    else:
        status, end = _decode_or_scan(text, pos, flavor, partial, memo, canonical)
        if status == OK:
            memo.decoded = (pos, end)
    if status != MORE:
        memo.results[pos, kind, flavor] = (status, end)
    return status, end


def _decode_or_scan(
    text: str, pos: int, flavor: str, partial: bool, memo: JsonMemo | None, canonical: dict[int, int] | None = None
) -> tuple[int, int]:
    """The C decoder for complete JSON containers, else the token scanner."""
    if flavor == "json":
        try:
            if canonical is not None:
                end = _canonical_end(text, pos)
                if end >= 0:
                    canonical[pos] = end
                    return OK, end
            return OK, _DECODER.raw_decode(text, pos)[1]
        except json.JSONDecodeError as err:
            if partial and _cut_off_at_end(text, err):
                return MORE, len(text)
        except (ValueError, RecursionError):
            pass  # malformed or cut off: the scanner finds out which
    status, end, _ = _scan_container(text, pos, flavor, partial, memo, None)
    return status, end
