"""Raw JSON arguments as a client is shown them: always a JSON object that ``json.loads`` reads, never a duplicate key.

Models write a call's arguments as JSON text, and a stream sends that text as it arrives. Three things keep what a
client receives usable, while the stream stays append-only (what was sent is never taken back) and ends equal to
``parse()``:

* **Only closable prefixes are shown.** A prefix is shown only up to a point where appending closers (a quote, then
  ``]`` and ``}``) makes it valid JSON: after ``{`` or ``[``, inside a string value, after a number that is complete
  as far as it goes, after a complete value. A member's comma, key and colon wait for the first character of its
  value; ``tru`` waits for its ``e``, ``1.`` for a digit, a cut escape for its last character. So when a call is
  cut off or breaks, its arguments are what was shown followed by the closers (:meth:`JsonView.result`).
* **The first of two equal keys wins** (in every object, at any depth): a later member with a key already seen is
  left out from its comma on, and reported. Keeping the first is the only choice a stream can make: the first one
  was sent before the second arrived.
* **Strict JSON.** A raw control character inside a string (a line break a model wrote as is, which lenient readers
  accept and ``json.loads`` rejects) is sent as its escape (``\\n``, ``\\u0000``): the same value, strict JSON.

The top-level value must be an object. A JSON string holding one (``"{\\"city\\": ...}"``) is read as that object
once complete; anything else (``null``, an array, a number) is not shown, and the arguments become ``{}`` with a
note. Everything left out is returned as notes, so the caller can put it in a warning: nothing is lost.

The view is incremental (:meth:`JsonView.feed` costs what the new text costs) and iterative (any nesting depth).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

__all__ = ["JsonArguments", "JsonView", "read_json_arguments"]

_WS = re.compile(r"[ \t\n\r]*")
_STRING_RUN = re.compile(r'[^"\\\x00-\x1f]+')
_SKIP_PLAIN = re.compile(r'[^"{}\[\],]+')
_SKIP_STRING = re.compile(r'[^"\\]+')
_ESCAPE = re.compile(r'\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})')
_ESCAPE_PREFIX = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?\Z")
# Exactly the prefixes of JSON numbers (no "1.e"): one ending in a digit is a whole number.
_NUMBER_PREFIX = re.compile(r"-?(?:(?:0|[1-9][0-9]*)(?:\.(?:[0-9]+(?:[eE][+-]?[0-9]*)?)?|[eE][+-]?[0-9]*)?)?\Z")
_NUMBER_CHARS = frozenset("0123456789.eE+-")
_LITERALS = ("true", "false", "null")
_LITERAL_PREFIXES = frozenset(word[:k] for word in _LITERALS for k in range(1, len(word) + 1))
_SPACES = frozenset(" \t\n\r")
_CONTROL_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_DECODER = json.JSONDecoder(strict=False)

# States: what the next character may be.
_START, _OBJ_OPEN, _OBJ_KEY, _KEY, _AFTER_KEY, _VALUE, _AFTER_VALUE, _STRING, _NUMBER_S, _LITERAL = range(10)
_ARR_OPEN, _SKIP, _DONE, _ERROR, _TOP_STRING, _NOT_OBJECT = range(10, 16)
_TEXT = frozenset({_STRING, _KEY})  # inside a string value or a key


def _escape_control(char: str) -> str:
    return _CONTROL_ESCAPES.get(char) or f"\\u{ord(char):04x}"


@dataclass
class JsonArguments:
    """Arguments read from raw JSON text: ``text`` is a JSON object (strict, no duplicate keys); ``notes`` say what
    was left out or changed; ``repaired``: something the model wrote is not in ``text`` (``notes`` hold it)."""

    text: str
    notes: list[str] = field(default_factory=list)
    repaired: bool = False


class JsonView:
    """The shown form of raw JSON arguments arriving piece by piece (see the module docstring).

    A stream feeds it every few characters, so the common pieces take short paths: text inside a string value is
    shown as it comes (nothing is ever held back there), and text between values is held in one list
    (``_pending``) until the next closable point, with the raw form kept aside only for the rare piece shown
    otherwise (a raw control character in a key)."""

    __slots__ = (
        "_escape",
        "_escaped",
        "_key_start",
        "_keys",
        "_literal",
        "_member_mark",
        "_number",
        "_pending",
        "_raw_fixes",
        "_skip_depth",
        "_skip_key",
        "_skip_string",
        "_skipped",
        "_stack",
        "_state",
        "_tail",
        "_top",
        "emitted_in_string",
        "fed",
        "notes",
        "shown",
    )

    def __init__(self) -> None:
        self._state = _START
        self._stack: list[str] = []  # closers of the open containers, innermost last
        self._keys: list[set[str] | None] = []  # keys seen per open container (None: an array)
        self._pending: list[str] = []  # shown text held back since the last closable point (never inside a string)
        self._raw_fixes: dict[int, str] = {}  # raw text of the _pending entries shown otherwise, by index
        self._member_mark = -1  # where in _pending the open member (its comma) starts; -1: none
        self._key_start = 0  # where in _pending the key being read starts (its opening quote)
        self._number = ""
        self._literal = ""
        self._escape = ""  # an escape sequence cut off by the end of the text so far
        self._escaped = False  # a raw control character in a string was sent as its escape
        self._skip_key = ""
        self._skip_depth = 0
        self._skip_string = False  # (the skipped text's escape state is kept in _escape)
        self._skipped: list[str] = []  # the member being left out (a duplicate key)
        self._tail: list[str] = []  # text after the point where the JSON broke
        self._top: list[str] = []  # a top-level value that is not an object, held whole
        self.emitted_in_string = False  # the last closable point is inside a string
        self.shown = 0  # length of the text shown so far
        self.fed = 0  # characters of raw text consumed
        self.notes: list[str] = []

    # --- reading ---------------------------------------------------------------------------------------------------

    def feed(self, text: str) -> str:
        """Read ``text`` (the next piece of the raw arguments); return what it adds to the shown text."""
        self.fed += len(text)
        state = self._state
        if state in _TEXT and not self._escape and _STRING_RUN.fullmatch(text):
            # (what the general path below does with it, at a fraction of the cost)
            if state == _KEY:
                self._pending.append(text)
                return ""
            self.shown += len(text)
            return text
        if not text:
            return ""
        out: list[str] = []
        i = _READERS[state](self, text, 0, out)  # (a stream's piece is mostly one character: one reader)
        n = len(text)
        while i < n:
            i = _READERS[self._state](self, text, i, out)
        return "".join(out) if out else ""

    def _emit(self, out: list[str], in_string: bool = False) -> None:
        """A closable point: what was held back is shown."""
        pending = self._pending
        if pending:
            piece = "".join(pending)
            out.append(piece)
            self.shown += len(piece)
            pending.clear()
            if self._raw_fixes:
                self._raw_fixes.clear()
        self._member_mark = -1
        self.emitted_in_string = in_string

    def _raw(self, start: int = 0) -> str:
        """The raw text of the held-back pieces from index ``start`` on."""
        pending, fixes = self._pending, self._raw_fixes
        if not fixes:
            return "".join(pending[start:])
        return "".join(fixes.get(k, pending[k]) for k in range(start, len(pending)))

    def _fail(self, text: str, i: int) -> int:
        self._state = _ERROR
        self._tail.append(text[i:])
        return len(text)

    # Readers, one per state (``_READERS``): each reads from ``text[i]`` on and returns where it stopped. Between
    # values, whitespace is held back (a reader returns after it, and the next call reads what follows).

    def _spaces(self, text: str, i: int) -> int:
        ws = _WS.match(text, i).end()
        self._pending.append(text[i:ws])
        return ws

    def _read_start(self, text: str, i: int, out: list[str]) -> int:
        char = text[i]
        if char in _SPACES:
            return _WS.match(text, i).end()  # (not part of the arguments)
        if char == "{":
            self._open("}", out)
            return i + 1
        self._state = _TOP_STRING if char == '"' else _NOT_OBJECT
        self._top.append(text[i:])
        return len(text)

    def _read_member_start(self, text: str, i: int, out: list[str]) -> int:
        """After ``{`` or a member's comma: a key's opening quote (or the ``}`` of an empty object)."""
        char = text[i]
        if char == '"':
            self._state = _KEY
            self._key_start = len(self._pending)
            self._pending.append('"')
            return i + 1
        if char in _SPACES:
            return self._spaces(text, i)
        if char == "}" and self._state == _OBJ_OPEN:
            self._close(out)
            return i + 1
        return self._fail(text, i)

    def _read_after_key(self, text: str, i: int, out: list[str]) -> int:
        char = text[i]
        if char != ":":
            return self._spaces(text, i) if char in _SPACES else self._fail(text, i)
        key = self._decode_key()
        keys = self._keys[-1]
        if key is None or keys is None:
            return self._fail(text, i)
        if key in keys:
            self._start_skip(key)
            return i + 1
        keys.add(key)
        self._pending.append(":")
        self._state = _VALUE
        return i + 1

    def _read_value(self, text: str, i: int, out: list[str]) -> int:
        """Where a value starts (after ``:``, ``[`` or an element's comma)."""
        char = text[i]
        if char in _SPACES:
            return self._spaces(text, i)
        if char == "]" and self._state == _ARR_OPEN:
            self._close(out)
            return i + 1
        return self._value_start(text, i, out)

    def _read_after_value(self, text: str, i: int, out: list[str]) -> int:
        char = text[i]
        closer = self._stack[-1]
        if char == ",":
            self._member_mark = len(self._pending)
            self._pending.append(",")
            self._state = _OBJ_KEY if closer == "}" else _VALUE
            return i + 1
        if char == closer:
            self._close(out)
            return i + 1
        if char in _SPACES:
            return self._spaces(text, i)
        return self._fail(text, i)

    def _read_done(self, text: str, i: int, out: list[str]) -> int:
        if text[i] in _SPACES:
            return _WS.match(text, i).end()  # (trailing whitespace: not part of the arguments)
        return self._fail(text, i)

    def _read_string(self, text: str, i: int, out: list[str]) -> int:
        return self._string(text, i, out)

    def _read_key(self, text: str, i: int, out: list[str]) -> int:
        return self._key_string(text, i)

    def _read_skip(self, text: str, i: int, out: list[str]) -> int:
        return self._skip(text, i)

    def _read_error(self, text: str, i: int, out: list[str]) -> int:
        self._tail.append(text[i:])
        return len(text)

    def _read_top(self, text: str, i: int, out: list[str]) -> int:
        self._top.append(text[i:])
        return len(text)

    def _open(self, closer: str, out: list[str]) -> None:
        self._pending.append("{" if closer == "}" else "[")
        self._stack.append(closer)
        self._keys.append(set() if closer == "}" else None)
        self._state = _OBJ_OPEN if closer == "}" else _ARR_OPEN
        self._emit(out)

    def _close(self, out: list[str]) -> None:
        self._pending.append(self._stack.pop())
        self._keys.pop()
        self._after_value(out)

    def _after_value(self, out: list[str]) -> None:
        self._state = _AFTER_VALUE if self._stack else _DONE
        self._emit(out)

    def _value_start(self, text: str, i: int, out: list[str]) -> int:
        char = text[i]
        if char == '"':
            self._pending.append('"')
            self._state = _STRING
            self._emit(out, in_string=True)
            return i + 1
        if char == "-" or "0" <= char <= "9":
            self._state, self._number = _NUMBER_S, ""
            return self._number_char(text, i, out)
        if char == "{" or char == "[":
            self._open("}" if char == "{" else "]", out)
            return i + 1
        if char in "tfn":
            self._state, self._literal = _LITERAL, ""
            return self._literal_char(text, i, out)
        return self._fail(text, i)

    def _string(self, text: str, i: int, out: list[str]) -> int:
        """Inside a string value: every character (or whole escape) is a closable point, so nothing is held back
        (``_pending`` is empty here) and each piece is shown at once."""
        n = len(text)
        if self._escape:
            return self._finish_escape(text, i, out)
        while i < n:
            run = _STRING_RUN.match(text, i)
            if run is not None:
                piece = run.group()
                out.append(piece)
                self.shown += len(piece)
                i = run.end()
                continue
            char = text[i]
            if char == '"':
                self._pending.append('"')
                self._after_value(out)
                return i + 1
            if char == "\\":
                self._escape = ""
                return self._finish_escape(text, i, out)
            piece = _escape_control(char)
            out.append(piece)
            self.shown += len(piece)
            self._escaped = True
            i += 1
        return i

    def _finish_escape(self, text: str, i: int, out: list[str] | None) -> int:
        """An escape sequence (in a string value, or in a key: ``out`` None), possibly continuing one cut off by the
        previous piece; held until complete."""
        candidate = self._escape + text[i : i + 6 - len(self._escape)]
        found = _ESCAPE.match(candidate)
        if found is not None:
            used = found.end() - len(self._escape)
            self._escape = ""
            piece = found.group()
            if out is None:
                self._pending.append(piece)
            else:
                out.append(piece)
                self.shown += len(piece)
            return i + used
        if _ESCAPE_PREFIX.match(candidate) and i + len(candidate) - len(self._escape) >= len(text):
            self._escape = candidate  # cut off: wait for the rest
            return len(text)
        self._escape = ""
        return self._fail(text, i)

    def _key_string(self, text: str, i: int) -> int:
        """Inside a key: held back (a key alone is not closable)."""
        n = len(text)
        if self._escape:
            return self._finish_escape(text, i, None)
        pending = self._pending
        while i < n:
            run = _STRING_RUN.match(text, i)
            if run is not None:
                pending.append(run.group())
                i = run.end()
                continue
            char = text[i]
            if char == '"':
                pending.append('"')
                self._state = _AFTER_KEY
                return i + 1
            if char == "\\":
                self._escape = ""
                return self._finish_escape(text, i, None)
            self._raw_fixes[len(pending)] = char
            pending.append(_escape_control(char))
            self._escaped = True
            i += 1
        return i

    def _decode_key(self) -> str | None:
        """The key just read (its shown form decodes to the same value as its raw one), whitespace after it too."""
        written = "".join(self._pending[self._key_start :]).rstrip(" \t\n\r")
        if "\\" not in written:
            return written[1:-1]  # (no escape: the text between the quotes is the key)
        try:
            key = _DECODER.decode(written)
        except ValueError:
            return None
        return key if isinstance(key, str) else None

    def _number_char(self, text: str, i: int, out: list[str]) -> int:
        """A number: shown up to each digit that completes it (``_NUMBER_PREFIX`` admits only prefixes of numbers,
        so a prefix ending in a digit is a whole number)."""
        n = len(text)
        number = self._number
        while i < n:
            char = text[i]
            if char not in _NUMBER_CHARS:
                break
            candidate = number + char
            # (a digit after a digit goes on any number but 0 and -0; anything else is checked)
            if not ("0" <= char <= "9" and "0" <= number[-1:] <= "9" and number != "0" and number != "-0") and (
                not _NUMBER_PREFIX.match(candidate)
            ):
                self._number = number
                return self._fail(text, i)
            number = candidate
            self._pending.append(char)
            if "0" <= char <= "9":
                self._emit(out)
            i += 1
        self._number = number
        if i < n:  # the number ended
            if not "0" <= number[-1:] <= "9":
                return self._fail(text, i)
            self._state = _AFTER_VALUE if self._stack else _DONE
        return i

    def _literal_char(self, text: str, i: int, out: list[str]) -> int:
        n = len(text)
        while i < n:
            candidate = self._literal + text[i]
            if candidate not in _LITERAL_PREFIXES:
                return self._fail(text, i)
            self._literal = candidate
            self._pending.append(text[i])
            i += 1
            if candidate in _LITERALS:
                self._state = _AFTER_VALUE if self._stack else _DONE
                self._emit(out)
                return i
        return i

    def _start_skip(self, key: str) -> None:
        """A member whose key was seen before: left out, from its comma to the end of its value."""
        mark = max(self._member_mark, 0)
        self._skipped = [self._raw(mark), ":"]
        del self._pending[mark:]
        if self._raw_fixes:
            self._raw_fixes = {k: raw for k, raw in self._raw_fixes.items() if k < mark}
        self._member_mark = -1
        self._skip_depth, self._skip_string, self._escape = 0, False, ""
        self._state = _SKIP
        self._skip_key = key

    def _skip(self, text: str, i: int) -> int:
        """Inside a left-out member: find the end of its value (a ``,`` or the closer at its own level)."""
        n = len(text)
        start = i
        while i < n:
            if self._skip_string:
                if self._escape:
                    self._escape = ""
                    i += 1
                    continue
                run = _SKIP_STRING.match(text, i)
                if run is not None:
                    i = run.end()
                    continue
                if text[i] == "\\":
                    self._escape = "\\"
                else:
                    self._skip_string = False
                i += 1
                continue
            run = _SKIP_PLAIN.match(text, i)
            if run is not None:
                i = run.end()
                continue
            char = text[i]
            if char == '"':
                self._skip_string = True
            elif char in "{[":
                self._skip_depth += 1
            elif char in "}]":
                if self._skip_depth == 0:
                    return self._end_skip(text, start, i)
                self._skip_depth -= 1
            elif char == "," and self._skip_depth == 0:
                return self._end_skip(text, start, i)
            i += 1
        self._skipped.append(text[start:i])
        return i

    def _end_skip(self, text: str, start: int, i: int) -> int:
        self._skipped.append(text[start:i])
        self.notes.append(self._skip_note())
        self._skipped = []
        self._state = _AFTER_VALUE
        return i

    def _skip_note(self) -> str:
        member = "".join(self._skipped).strip().lstrip(",").strip()
        return f"duplicate key {self._skip_key!r}: the member {member!r} was left out (the first one is kept)"

    # --- the result ------------------------------------------------------------------------------------------------

    def closers(self) -> str:
        """What closes the shown text into valid JSON (a quote if it ends inside a string, then the brackets)."""
        return ('"' if self.emitted_in_string else "") + "".join(reversed(self._stack))

    @property
    def complete(self) -> bool:
        """The text read so far is one whole JSON object (trailing whitespace allowed), nothing left out of it."""
        return self._state == _DONE and not self._tail

    def result(self, shown: str) -> JsonArguments:
        """The arguments once no more text comes: ``shown`` (everything :meth:`feed` returned) closed, with notes
        on what was left out."""
        notes = list(self.notes)
        if self._state == _SKIP:  # the left-out member never ended
            notes.append(self._skip_note())
        repaired = bool(notes)
        if self._escaped:  # (the same value, strict JSON: no repair)
            notes.append("raw control characters in strings (not strict JSON) were sent as their escapes")
        if self._state in (_TOP_STRING, _NOT_OBJECT):
            return _top_level("".join(self._top), notes)
        if self._state == _START:
            return JsonArguments("{}", notes, repaired)
        left = self._raw() + (self._escape if self._state != _SKIP else "") + "".join(self._tail)
        left = left.strip()
        if left:
            notes.append(f"left out: {left!r}")
            repaired = True
        text = shown + self.closers()
        return JsonArguments(text, notes, repaired or self._state != _DONE)


_READERS = tuple(
    {
        _START: JsonView._read_start,
        _OBJ_OPEN: JsonView._read_member_start,
        _OBJ_KEY: JsonView._read_member_start,
        _KEY: JsonView._read_key,
        _AFTER_KEY: JsonView._read_after_key,
        _VALUE: JsonView._read_value,
        _AFTER_VALUE: JsonView._read_after_value,
        _STRING: JsonView._read_string,
        _NUMBER_S: JsonView._number_char,
        _LITERAL: JsonView._literal_char,
        _ARR_OPEN: JsonView._read_value,
        _SKIP: JsonView._read_skip,
        _DONE: JsonView._read_done,
        _ERROR: JsonView._read_error,
        _TOP_STRING: JsonView._read_top,
        _NOT_OBJECT: JsonView._read_top,
    }[state]
    for state in range(16)
)


def _top_level(text: str, notes: list[str]) -> JsonArguments:
    """Arguments whose top-level value is not an object: a JSON string holding one, or anything else (``{}``)."""
    stripped = text.strip()
    if stripped.startswith('"'):
        inner = _string_prefix(stripped)
        if inner is not None and inner[0].strip().startswith("{"):
            body, closed = inner
            view = JsonView()
            shown = view.feed(body.strip())
            found = view.result(shown)
            if not closed:
                found.notes.append("the arguments were a JSON string that was cut off")
            found.notes[:0] = notes
            found.repaired = found.repaired or bool(notes) or not closed or not view.complete
            return found
    notes.append(f"the arguments are not a JSON object: {stripped!r} was left out")
    return JsonArguments("{}", notes, True)


def _string_prefix(text: str) -> tuple[str, bool] | None:
    """The value of a JSON string (``text`` starts with its quote), and whether it was closed; a string cut off
    gives the value of what arrived (an escape cut off at its end left out). None: not readable as one."""
    try:
        value, end = _DECODER.raw_decode(text)
    except ValueError:
        pass
    else:
        if isinstance(value, str) and not text[end:].strip():
            return value, True
        return None
    body = text[1:]
    cut = _ESCAPE_PREFIX.search(body)
    if cut is not None:
        slashes = len(body[: cut.start()]) - len(body[: cut.start()].rstrip("\\"))
        if slashes % 2 == 0:
            body = body[: cut.start()]
    try:
        value = _DECODER.decode('"' + body + '"')
    except ValueError:
        return None
    return (value, False) if isinstance(value, str) else None


def read_json_arguments(text: str, *, canonical: bool = False) -> JsonArguments:
    """Complete (or finally broken) raw JSON arguments as :class:`JsonArguments`; a valid object without duplicate
    keys or raw control characters comes back as written (without surrounding whitespace). ``canonical``: the
    caller knows ``text`` is one such JSON value (the parse decoded it so: :attr:`.peg.AstNode.canonical_json`), so
    it is not decoded again."""
    stripped = text.lstrip(" \t\r\n")  # (trailing whitespace may be inside a string cut off)
    if stripped.startswith("{"):
        if canonical:
            return JsonArguments(stripped.rstrip(" \t\r\n"))
        try:
            _UNIQUE_KEYS.decode(stripped)
        except (ValueError, RecursionError):
            pass
        else:
            return JsonArguments(stripped.rstrip(" \t\r\n"))
    view = JsonView()
    shown = view.feed(stripped)
    return view.result(shown)


class _Duplicate(ValueError):
    pass


def _unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise _Duplicate
    return found


_UNIQUE_KEYS = json.JSONDecoder(object_pairs_hook=_unique)  # strict; one decoder for every call (json.loads makes one)
