"""Markup left in a reply's content: a warning for each call or reasoning marker that did not become structure.

The parser never fails: what it cannot read as structure is content. That keeps the text, but a reply in markup the
parser does not know (another family's ``<tool_call>``, a bare ``{"name": "get_weather", ...}`` given to a parser
that expects ``[TOOL_CALLS]``) would then come back as a plain answer, silently. After the final parse, the content
the parser read is scanned for the markers of :class:`~autoparser.parser.leftovers.LeftoverMarkers`; each find is a
:class:`~autoparser.message.ParseWarning` naming the marker and where it is. ``parse(strict=True)`` raises on it,
and a stream sends the same warnings with its last delta (the scan needs the whole content, so it runs at the end).

A find counts only where the markup is structure-like; prose that mentions it is left alone:

* a call marker anywhere in the content, except inside an inline code span (``Wrap calls in `<tool_call>` tags``);
  a plain-word marker (``functools``) only with its bracket after it;
* a declared tool in call position: a JSON string after ``{`` or ``:`` (``{"name": "get_weather"``), or the name
  followed by ``(`` or by ``{`` (``get_weather(city="Paris")``, ``get_weather\\n{...}``), again not in inline code;
* the reasoning opener only where the content starts with it (a block the parser did not read), the closer only
  where no opener came before it in the content (``plan</think>answer``): ``<think>`` mentioned in the middle of an
  answer, or a quoted ``<think>…</think>`` pair, is prose.

Reasoning is thinking, free to discuss any markup, and is not scanned — except a reasoning block that runs to the
end of the output, never closed (a prompt that opened the block, a model that never closed it): a call written in
it was the reply. Its call markers and tool names count as in content.

Text the parser already reported (a marker that failed to start a call: ``tags.UNPARSED``) is not reported again:
the scan skips every stretch of content that holds such a node. Within a stretch each marker (or tool name) is
reported once, at its first place; a tool name is not reported where a call marker of the same stretch already was
(it is the body of that call).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..cache import sized_cache
from ..message import ParseWarning
from ..parser import tags
from ..parser.leftovers import LeftoverMarkers
from ..peg import AstNode

__all__ = ["leftover_warnings"]

_CODE_SPAN = re.compile(r"`[^`\n]+`")  # an inline code span: what it holds is quoted
_TEXT = re.compile(r"\S")
# The keys calls carry their arguments under (OpenAI's, Llama's, Cohere's, short forms, Anthropic's).
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "params", "input")
_LOOKAHEAD = 64  # how far past a stretch of content a find's lookahead may read


@dataclass(frozen=True, slots=True)
class _Scanner:
    pattern: re.Pattern[str] | None
    opener: str
    closer: str
    # The literals every find contains (markers, tool names), as one plain alternation: a span without any is
    # skipped at the cost of one fast search, where the full pattern tries each of its branches at every character.
    needles: re.Pattern[str] | None = None


def _scanner_size(_: object, markers: LeftoverMarkers) -> int:
    """A compiled alternation of the markers and tool names: some 40 bytes per byte of them."""
    return 2_000 + 40 * sum(map(len, (*markers.calls, *markers.words, *markers.tool_names, *markers.reasoning)))


@sized_cache(_scanner_size)
def _scanner(markers: LeftoverMarkers) -> _Scanner:
    """One regex with a named group per kind of find (call marker, word marker, tool name in call position,
    reasoning opener, reasoning closer); alternatives longest first, so a longer marker wins over its prefix."""

    def alternation(items: Sequence[str]) -> str:
        return "|".join(re.escape(m) for m in sorted(set(items), key=lambda m: (-len(m), m)))

    opener, closer = markers.reasoning
    groups: list[str] = []
    if markers.calls:
        groups.append(f"(?P<call>{alternation(markers.calls)})")
    if markers.words:
        groups.append(rf"(?<![\w.])(?P<word>{alternation(markers.words)})(?=[ \t]*[\[{{])")
    if markers.tool_names:
        names = alternation(markers.tool_names)
        space = r"[ \t\r\n]*"
        args = "|".join(f'"{key}"' for key in _ARGUMENT_KEYS)
        # `{"name": "get_weather", "arguments"` (the name's value, then the arguments key) or `"get_weather": {`
        quoted = rf'[{{:]{space}"(?P<quoted>{names})"{space},{space}(?:{args}){space}:'
        keyed = rf'"(?P<keyed>{names})"{space}:{space}\{{'
        groups.append(f"(?:{quoted}|{keyed})")
        groups.append(rf"(?<![\w.$-])(?P<called>{names})(?=\(|[ \t]*\r?\n?[ \t]*\{{)")
    if opener:
        groups.append(f"(?P<opener>{re.escape(opener)})")
    if closer:
        groups.append(f"(?P<closer>{re.escape(closer)})")
    if not groups:
        return _Scanner(None, opener, closer)
    literals = [*markers.calls, *markers.words, *markers.tool_names, opener, closer]
    return _Scanner(re.compile("|".join(groups)), opener, closer, re.compile(alternation([m for m in literals if m])))


def leftover_warnings(
    markers: LeftoverMarkers, nodes: Sequence[AstNode], source: str, offset: int
) -> list[ParseWarning]:
    """The warnings for markup left in the content of a complete parse (``nodes``: its top-level nodes over
    ``source``; ``offset``: where the model's output starts in ``source``, after the prompt's prefill)."""
    scanner = _scanner(markers)
    if scanner.pattern is None:
        return []
    warnings: list[ParseWarning] = []
    state = _State()
    for spans, reported in _stretches(nodes, offset):
        if reported:
            state.started = state.started or any(_TEXT.search(source, s, e) for s, e in spans)
        else:
            _scan(scanner, source, spans, offset, state, warnings)
    # A reasoning block that runs to the end of the output was never closed: a call written in it (in markup this
    # parser does not read) was the reply, not thinking. A closed block may discuss markup freely.
    # (A block whose closer ends the output is closed: its nodes stop before the closer, which is no node.)
    first = len(nodes)
    closed = bool(nodes) and bool(source[nodes[-1].end :].strip())  # the closer follows the last node
    while not closed and first > 0 and nodes[first - 1].tag == tags.REASONING:
        first -= 1
    spans: list[tuple[int, int]] = []
    for node in nodes[first:]:
        if node.end > offset:
            start = max(node.start, offset)
            if spans and spans[-1][1] == start:
                spans[-1] = (spans[-1][0], node.end)
            else:
                spans.append((start, node.end))
    if spans:
        _scan(scanner, source, spans, offset, _State(True, True), warnings, "the unclosed reasoning")
    return warnings


@dataclass(slots=True)
class _State:
    started: bool = False  # the content has shown text already (a reasoning opener after it is prose)
    opened: bool = False  # a reasoning opener came before, in the content


def _stretches(nodes: Sequence[AstNode], offset: int) -> list[tuple[list[tuple[int, int]], bool]]:
    """The content the parser read, as stretches of text spans (``(start, end)`` in the source, adjacent spans
    merged, so a marker split between two nodes is found), each with whether it holds text the parser already
    reported (UNPARSED). A stretch is ended by structure."""
    stretches: list[tuple[list[tuple[int, int]], bool]] = []
    spans: list[tuple[int, int]] = []
    reported = False
    for node in nodes:
        tag = node.tag
        if tag == tags.CONTENT and node.end > offset:
            start = max(node.start, offset)
            if spans and spans[-1][1] == start:
                spans[-1] = (spans[-1][0], node.end)
            else:
                spans.append((start, node.end))
        elif tag == tags.UNPARSED:
            reported = True
        elif tag != tags.CONTENT:
            if spans:
                stretches.append((spans, reported))
            spans, reported = [], False
    if spans:
        stretches.append((spans, reported))
    return stretches


def _scan(
    scanner: _Scanner,
    source: str,
    spans: list[tuple[int, int]],
    offset: int,
    state: _State,
    warnings: list[ParseWarning],
    reasoning: str = "",
) -> None:
    """Report the finds in one stretch of ``spans`` (``reasoning``: the stretch is reasoning, so named, and only
    calls are looked for)."""
    pattern, needles = scanner.pattern, scanner.needles
    assert pattern is not None and needles is not None
    kept = f"; it was kept in {reasoning}" if reasoning else "; it was kept as content"
    seen: set[str] = set()  # each marker or tool name once per stretch
    marked = False  # a call marker was reported in this stretch: tool names after it are that call's body
    for start, end in spans:
        first_text = _TEXT.search(source, start, end)
        # (a lookahead may read a little past the span: `get_weather` ends the text, `{` starts a failed object)
        limit = min(end + _LOOKAHEAD, len(source))
        needle = needles.search(source, start, limit)
        if needle is None or _past(source, needle, end):  # every find holds one: none here
            if first_text is not None:
                state.started = True
            continue
        code = [(m.start(), m.end()) for m in _CODE_SPAN.finditer(source, start, end)]
        code_starts = [s for s, _ in code]
        for hit in pattern.finditer(source, start, limit):
            if hit.start() >= end:
                break
            kind = hit.lastgroup or ""
            at, text = hit.start(kind), hit.group(kind)
            where = bisect.bisect_right(code_starts, at) - 1
            if where >= 0 and code[where][0] < at < code[where][1]:
                continue  # quoted in an inline code span
            first = not state.started and first_text is not None and first_text.start() == at
            message = ""
            if reasoning and kind in ("opener", "closer"):
                continue
            if kind == "opener":
                if first:
                    message = f"reasoning marker {text!r} did not open a reasoning block"
                state.opened = True
            elif kind == "closer":
                if not state.opened:
                    message = f"reasoning marker {text!r} closes no reasoning block"
            elif kind in ("call", "word"):
                marked = True
                message = f"call marker {text!r} did not start a tool call"
            elif not marked and (kind != "called" or first or _line_start(source, start, at)):
                # (`ping()` in a sentence is prose: a call stands at the start of a line or of a list)
                message = f"tool {text!r} written in call position did not parse as a call"
            if message and text not in seen:
                seen.add(text)
                warnings.append(ParseWarning(max(at - offset, 0), message + kept))
        if first_text is not None:
            state.started = True


_LEAD = ' \t\r\n"{:'  # what a find may hold before its needle: `{ "get_weather"`, `: "get_weather"`


def _past(source: str, needle: re.Match[str], end: int) -> bool:
    """Whether no find can start before ``end`` given that the first needle is ``needle``: a find starts at its
    needle, or (a quoted tool name) at most at the ``"``, whitespace and ``{`` or ``:`` before it, none of which a
    needle ends with, so later needles' finds start later still. (The common case: the call marker that ended the
    stretch of content, found by the lookahead.)"""
    at = needle.start()
    if at < end or needle.group()[-1:] in _LEAD:
        return False
    if source[at - 1 : at] == '"':
        at -= 1
        while at > 0 and source[at - 1] in " \t\r\n":
            at -= 1
        if at > 0 and source[at - 1] in "{:":
            at -= 1
    return at >= end


def _line_start(source: str, start: int, at: int) -> bool:
    """Whether ``at`` starts a line (indentation aside) or a list, or the span starting at ``start``."""
    head = source[max(start, at - _LOOKAHEAD) : at].rstrip(" \t")
    return not head or head[-1] in "\n["
