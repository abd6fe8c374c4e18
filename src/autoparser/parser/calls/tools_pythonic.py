"""Parsers for pythonic tool calls: ``get_weather(city="Paris", days=2)``, in a list or one per line, wrapped.

A template teaches one layout (analysis: ``ToolFormatMode.PYTHONIC``): MiniCPM3 puts calls one per line in a
```` ```python ```` fence inside ``<|tool_call_start|>``/``<|tool_call_end|>``, Gemma 3n in a ```` ```tool_code ````
fence, LFM2 writes a ``[...]`` list between the markers, LFM2.5 the list bare. Models trained on one layout often
write a neighbouring one (the fence without the markers, the list without the fence), so the parser accepts the
learned wrapper and the common ones alike:

* an outer pair — the learned one, ``<|tool_call_start|>``/``<|tool_call_end|>``, ``<|python_start|>``/
  ``<|python_end|>``, ``<function_calls>``/``</function_calls>`` — around an optional code fence;
* a code fence (```` ``` ````, ```` ```python ````, ```` ```tool_code ```` ...) on its own;
* a bare ``[call, ...]`` list (only a list that opens with a call: ``[1, 2]`` is text);

each holding a ``[...]`` list or calls one per line — or, inside a wrapper, JSON calls (``[{"name": ...,
"arguments": {...}}]``, one object or several, each opening with its name: the wrapper says calls follow, whatever
their syntax; not in a code fence that holds code, nor bare). An empty list
(``<|tool_call_start|>[]<|tool_call_end|>``, or a bare ``[]`` ending the output) means "no calls" and leaves nothing
in the content; so does an empty wrapper. Closing markers may be missing (output cut off, or the model went on):
complete calls stay calls.

Arguments are held back until the call's ``)``: the mapper converts the whole argument text to JSON through the
``convert`` function (:func:`.python_literals.kwargs_to_json`, typed by the tool's schema where strings are bare).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from ... import peg as p
from ...analysis.model import ToolFormat, ToolFormatMode, ToolsAnalysis
from ...analysis.patterns import MARKER
from .. import tags
from ..request import ParseRequest, ToolSpec
from .python_literals import IDENTIFIER, keyword_arguments, kwargs_to_json
from .resync import JSON, PYTHON, recover_call
from .tools_json import json_call

__all__ = [
    "COMMON_WRAPPERS",
    "DISTINCTIVE_FENCES",
    "FENCE",
    "FENCE_LANGUAGES",
    "PythonicParser",
    "pythonic_parser",
    "split_wrapper",
]

#: Outer markers models put around pythonic calls, whatever their template shows.
COMMON_WRAPPERS = (
    ("<|tool_call_start|>", "<|tool_call_end|>"),
    ("<|python_start|>", "<|python_end|>"),
    ("<function_calls>", "</function_calls>"),
)
FENCE = "```"
FENCE_LANGUAGES = ("tool_code", "tool_call", "python", "py")
#: Fence languages that hold nothing but tool calls: whatever follows them is a call, or a broken one.
DISTINCTIVE_FENCES = ("tool_code", "tool_call")
# What may follow the "[" of a bare call list: a name, whitespace, or "]" (an empty list).
_LIST_OPENERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_ \t\r\n]"
_MARKER = re.compile(MARKER)


@dataclass(frozen=True, slots=True)
class Wrapper:
    """A learned section wrapper split into its parts: an outer marker pair and a fence language (``""``: a plain
    fence, None: no fence), or — when it is neither — its whitespace-separated words (``irregular``)."""

    open: str = ""
    close: str = ""
    fence: str | None = None
    irregular: tuple[tuple[str, ...], tuple[str, ...]] | None = None

    @property
    def first_word(self) -> str:
        """What an irregular wrapper starts with ("" for the others)."""
        return self.irregular[0][0] if self.irregular is not None and self.irregular[0] else ""

    @property
    def opens(self) -> bool:
        """Whether the learned layout has anything before the calls (else they are written bare)."""
        return bool(self.open or self.fence is not None or self.first_word)


def split_wrapper(fmt: ToolFormat) -> Wrapper:
    """The learned wrapper ``fmt.section_start`` ... ``fmt.section_end`` as outer markers and a code fence."""
    start, end = fmt.section_start.split(), fmt.section_end.split()
    if not start and not end:
        return Wrapper()
    outer_open = start[0] if start and _is_marker(start[0]) else ""
    outer_close = end[-1] if end and _is_marker(end[-1]) else ""
    inner_start = start[1:] if outer_open else start
    inner_end = end[:-1] if outer_close else end
    if not inner_start and not inner_end:
        return Wrapper(outer_open, outer_close)
    if len(inner_start) == 1 and inner_start[0].startswith(FENCE) and inner_end in ([], [FENCE]):
        language = inner_start[0][len(FENCE) :]
        if FENCE not in language:
            return Wrapper(outer_open, outer_close, language)
    return Wrapper(irregular=(tuple(start), tuple(end)))


def _is_marker(word: str) -> bool:
    return _MARKER.fullmatch(word) is not None


@dataclass(frozen=True, slots=True)
class PythonicParser:
    """The parts the generic assembler puts into its item loop (see :func:`pythonic_parser`)."""

    section: p.Parser  # one section of calls (recover()-ed: committed calls survive a broken rest)
    triggers: tuple[str, ...]  # what starts a section in the learned layout
    stops: tuple[str, ...]  # where a stretch of text must stop: something there may start calls (or is markup)
    markers: tuple[str, ...]  # the distinctive markup among them (outer markers: not brackets, fences or words)
    fallbacks: Callable[[p.Parser], list[p.Parser]]  # given the text run: items for openers that start no call
    convert: Callable[[str, str], str]  # tool name, argument text -> JSON arguments


def _call(tool: ToolSpec, bare: bool, spaced: bool, ends: tuple[str, ...] = ()) -> p.Parser:
    """``name(kwargs)``, complete only at its ``)``.

    The name is reported once the first ``keyword=`` (or the ``)`` of an empty call) shows this is a call in our
    syntax: ``get`` is then never reported for ``get_time``, nor a call whose arguments are positional (invalid),
    which a stream could not take back."""
    first = p.choice(")", IDENTIFIER + p.space() + "=")
    name = p.atomic(p.tag(tags.TOOL_NAME, p.literal(tool.name)) + "(" + p.peek(p.space() + first))
    arguments = p.tag(tags.TOOL_ARGS, keyword_arguments(tagged=False, bare=bare, spaced=spaced))
    body = name + p.commit() + p.space() + arguments + p.space() + ")"
    # Committed at the name: kept as it stood if the rest breaks (the rest, up to the call's ")" or one of ``ends``,
    # is left out with a warning). The lookahead makes no call node at all where the output ends before a name (a
    # list broken off after its comma).
    # (a value cut at a word a literal might start, `city=Tokyo` where strings are quoted, breaks before the word:
    # the warnings then hold it whole; arguments are shown only once complete, so a stream showed the same)
    return p.peek(p.literal(tool.name)) + recover_call(p.tag(tags.TOOL, body), ends, balanced=PYTHON, whole_words=True)


def pythonic_parser(tools: ToolsAnalysis, request: ParseRequest) -> PythonicParser:
    """The pythonic call parser for the request's tools, in the layout ``tools`` learned and the common ones."""
    bare = tools.pythonic.quote == ""
    spaced = not tools.pythonic.separator.strip()  # `f(a=1 b=2)`
    raw = tools.pythonic.raw_strings  # `title="Q3 "sync" review"` is how the template writes strings
    wrapper = split_wrapper(tools.format)
    ends = (FENCE, *(m for pair in (*COMMON_WRAPPERS, (wrapper.open, wrapper.close)) for m in pair if m))
    call = p.choice(*(_call(tool, bare, spaced, ends) for tool in request.tools))
    sep = p.space() + p.optional(p.choice(",", ";")) + p.space()
    calls = call + p.zero_or_more(sep + call) + p.optional(p.space() + ",")
    listed = p.literal("[") + p.space() + p.optional(calls) + p.space() + p.choice("]", p.end())
    # Inside a wrapper, the JSON envelope too (`<|tool_call_start|>[{"name": ..., "arguments": {...}}]`): the wrapper
    # says calls follow, and a model trained on JSON calls writes them so. Bare JSON, or JSON in a code fence that
    # is not a tool fence, stays text.
    # Each object must open with its name (the template writes neither shape: `[{"city": "Paris"}]` is no call).
    json_call_ = recover_call(
        p.tag(tags.TOOL, json_call(ToolFormat(ToolFormatMode.JSON_NATIVE), request.tools, opening="name")),
        ends,
        balanced=JSON,
    )
    comma = p.space() + "," + p.space()
    json_list = p.literal("[") + p.space() + json_call_ + p.zero_or_more(comma + json_call_) + p.space() + "]"
    json_objects = json_call_ + p.zero_or_more(p.space() + p.optional(",") + p.space() + p.peek("{") + json_call_)
    envelope = p.choice(json_list, json_objects)
    body = p.choice(listed, calls)
    wrapped = p.choice(listed, envelope, calls)  # in an outer marker pair, a tool fence, the learned words
    fences = _Fences(wrapper)
    pairs = list(dict.fromkeys([*([(wrapper.open, wrapper.close)] if wrapper.open else []), *COMMON_WRAPPERS]))

    sections: list[p.Parser] = []
    stops = [FENCE, *DISTINCTIVE_FENCES, *("[" + ch for ch in _LIST_OPENERS)]
    if wrapper.irregular is not None:
        start, end = wrapper.irregular
        opening = p.sequence(*(p.space() + p.literal(word) for word in start)) if start else p.eps()
        closing = p.optional(p.sequence(*(p.space() + p.literal(word) for word in end))) if end else p.eps()
        sections.append(opening + p.space() + wrapped + closing)
        stops.append(wrapper.first_word)
    inner = p.optional(fences.open + p.space()) + wrapped + p.space() + p.optional(fences.close + p.space())
    empty = p.optional(fences.open + p.space()) + p.optional(fences.close + p.space())
    for opener, closer in pairs:
        head = p.space() + p.literal(opener) + p.space()
        if closer:
            sections.append(head + p.choice(inner + p.optional(p.literal(closer)), empty + closer))
        else:
            sections.append(head + inner)
        stops += [opener, closer]
    sections.append(fences.tool + p.space() + envelope + p.space() + p.optional(fences.close))
    for opener in (fences.open, fences.loose):
        sections.append(opener + p.space() + body + p.space() + p.optional(fences.close))
    sections.append(p.literal("[") + p.space() + calls + p.space() + p.choice("]", p.end()))
    if not wrapper.opens and not tools.format.tools_array_wrapped:
        # The template writes bare calls, one per line: a tool's name and "(" may start them anywhere.
        sections.append(calls)
        stops += [f"{tool.name}(" for tool in request.tools]

    by_name = {tool.name: tool for tool in request.tools}

    def convert(name: str, text: str) -> str:
        stripped = text.strip()
        if stripped[:1] in ("{", '"'):  # a JSON call's arguments (keyword arguments never start so)
            return _json_arguments(stripped)
        return kwargs_to_json(text, by_name.get(name), bare=bare, spaced=spaced, raw=raw)

    return PythonicParser(
        p.recover(p.choice(*sections)),
        _triggers(wrapper, tools.format.tools_array_wrapped, request),
        tuple(s for s in dict.fromkeys(stops) if s),
        tuple(m for m in dict.fromkeys([*(opener for opener, _ in pairs), wrapper.first_word]) if m),
        lambda text: _fallbacks(text, request, pairs, wrapper, fences),
        convert,
    )


def _json_arguments(text: str) -> str:
    """A JSON call's arguments as written: an object, or a JSON string holding one (its text)."""
    if text.startswith('"'):
        try:
            inner = json.loads(text)
        except ValueError:
            return text
        if isinstance(inner, str) and inner.strip().startswith("{"):
            return inner.strip()
    return text


class _Fences:
    """Code fences: any run of three or more backticks, with or without a language, closed by another run.

    A *tool fence* holds nothing but calls (```` ```tool_code ````, and the learned fence when it is the whole
    wrapper): what follows it is a call or a broken one. The distinctive languages also open calls with fewer
    backticks (a model or a detokenizer that lost some: ``tool_code`` right before a call)."""

    def __init__(self, wrapper: Wrapper) -> None:
        backticks = p.literal(FENCE) + p.chars("[`]", 0)
        languages = sorted({*FENCE_LANGUAGES, *([wrapper.fence] if wrapper.fence else [])}, key=len, reverse=True)
        own = (wrapper.fence,) if wrapper.fence and not wrapper.open else ()
        tool_languages = sorted({*DISTINCTIVE_FENCES, *own}, key=len, reverse=True)
        self.open = backticks + p.optional(p.choice(*languages))
        self.close = backticks
        self.tool = backticks + p.choice(*tool_languages)
        self.loose = p.chars("[`]", 0) + p.choice(*DISTINCTIVE_FENCES)


def _triggers(wrapper: Wrapper, listed: bool, request: ParseRequest) -> tuple[str, ...]:
    """What starts a section in the learned layout (the parser's ``tool_triggers``)."""
    if wrapper.open:
        return (wrapper.open,)
    if wrapper.fence is not None:
        return (FENCE + wrapper.fence,)
    if wrapper.first_word:
        return (wrapper.first_word,)
    opener = "[" if listed else ""
    return tuple(f"{opener}{tool.name}(" for tool in request.tools)


def _fallbacks(
    text: p.Parser, request: ParseRequest, pairs: list[tuple[str, str]], wrapper: Wrapper, fences: _Fences
) -> list[p.Parser]:
    """Items for what may open calls but did not (``text``: the text run, up to the next stop)."""
    after = p.optional(p.negate(p.end()) + p.tag(tags.CONTENT, text))
    closers = sorted({closer for _, closer in pairs if closer}, key=len, reverse=True)
    bounds = sorted({*(opener for opener, _ in pairs), *closers}, key=len, reverse=True)
    unparsed = []
    for opener, closer in pairs:
        # An outer marker that starts no valid call is reported; the text after it up to its closing marker is one
        # item with it, closing marker included: nothing extracted, nothing of the wrapper consumed.
        rest = p.until_one_of(bounds) + p.optional(p.literal(closer)) if closer else text
        unparsed.append(p.tag(tags.UNPARSED, p.literal(opener)) + p.optional(p.tag(tags.CONTENT, rest)))
    if wrapper.first_word:
        unparsed.append(p.tag(tags.UNPARSED, p.literal(wrapper.first_word)) + after)
    names = p.choice(*(p.literal(tool.name) for tool in sorted(request.tools, key=lambda t: -len(t.name))))
    call_like = p.peek(p.space() + p.optional("[" + p.space()) + IDENTIFIER + "(")
    ours = p.peek(p.space() + p.optional("[" + p.space()) + names + "(")
    keyword_call = IDENTIFIER + "(" + p.peek(p.space() + IDENTIFIER + p.space() + "=")
    return [
        # An empty list ending the output: "no calls", nothing left in the content.
        p.literal("[") + p.space() + "]" + p.space() + p.end(),
        *unparsed,
        # A closing marker left over (after text that broke a section off): markup, left out with a warning.
        p.tag(tags.DROPPED, p.choice(*map(p.literal, closers))),
        # A tool fence that starts no valid call is reported (a code fence holds code: only one that opens a call
        # of ours is); a distinctive fence word without its backticks only where a call follows it.
        p.tag(tags.UNPARSED, fences.tool) + after,
        p.tag(tags.UNPARSED, fences.open) + ours,
        p.tag(tags.UNPARSED, fences.loose) + call_like,
        # A bracket opening a call of ours, or one in keyword syntax (``[f(1)]`` in code is text).
        p.tag(tags.UNPARSED, p.literal("[") + p.space() + p.choice(names + "(", keyword_call)),
        # Any other fence, fence word or bracket is text, with the text after it (one item, not one per bracket).
        p.tag(tags.CONTENT, fences.open + text),
        p.tag(tags.CONTENT, fences.loose + text),
        p.tag(tags.CONTENT, p.literal("[") + text),
    ]
