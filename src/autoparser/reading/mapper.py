"""AST → :class:`ChatMessage`: content, reasoning and tool calls from the tagged parse tree.

The mapping is *prefix-monotone*: for a partial parse of a prefix of the output, every field is a prefix of what
the same field becomes later, which is what lets streaming emit append-only deltas. Hence: a call appears only once
its name is complete; a string argument shows its text without trailing whitespace (which may be the separator
before the closing tag, or a value's own); a non-string tagged value appears once it is complete (before, it might
still turn out not to be JSON); closing quotes and braces come only when the call is complete.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ..message import CallStatus, ChatMessage, ParseWarning, ToolCall, built_call, built_message
from ..parser import tags
from ..parser.calls.repairs import RepairedArguments
from ..parser.calls.tagged_values import decode_cut_value, decode_value, is_value_tag, misfit
from ..peg import AstNode, ParseResult
from .json_args import JsonArguments, JsonView, read_json_arguments

__all__ = [
    "WHITESPACE",
    "LiveCall",
    "MessageBuilder",
    "final_count",
    "map_raw",
    "map_result",
]

WHITESPACE = " \t\r\n"


def map_result(
    result: ParseResult,
    offset: int,
    id_position: str = "none",
    convert_args: Callable[[str, str], str] | None = None,
) -> ChatMessage:
    """Map a parse of ``prefill + output``; ``offset`` = len(prefill), to report positions in the output.
    ``id_position`` ("none", "before_args", "after_args") says when a call's id is settled."""
    return map_raw(result, offset, id_position, convert_args)[0]


def map_raw(
    result: ParseResult,
    offset: int,
    id_position: str = "none",
    convert_args: Callable[[str, str], str] | None = None,
) -> tuple[ChatMessage, str, str]:
    """The message, plus the untrimmed content and reasoning text (streaming continues from those).

    A partial result is mapped as a stream shows it: the final nodes (:func:`final_count`) as they are, the rest
    as still open (calls only once announced, a malformed call's text only once it is final)."""
    builder = MessageBuilder(offset, id_position, convert_args)
    nodes = result.nodes
    final = final_count(result) if result.need_more_input else len(nodes)
    for node in nodes[:final]:
        builder.add(node)
    live = [call for call in map(builder.add_live, nodes[final:]) if call is not None]
    raw_content, raw_reasoning = "".join(builder.content), "".join(builder.reasoning)
    message = builder.message(raw_content, raw_reasoning)
    if live:
        source = result.text
        # (calls of the unsettled tail are not final yet: still arriving, so far cut off)
        live_calls = (ToolCall(c.name, c.arguments(source), c.id, status=CallStatus.CUT_OFF) for c in live)
        message = dataclasses.replace(message, tool_calls=(*message.tool_calls, *live_calls))
    return message, raw_content, raw_reasoning


def final_count(result: ParseResult, start: int = 0) -> int:
    """How many leading top-level nodes of a partial parse no longer input can change or remove: those of settled
    items of the root's item loop, then settled calls that committed (an item still open around them cannot drop
    them: it is recover()-ed). Anything else settled inside an open item may still vanish with it."""
    nodes = result.nodes
    count = max(start, result.settled_nodes)
    while count < len(nodes):
        node = nodes[count]
        if not (node.settled and node.tag == tags.TOOL and _read_call(node).committed):
            break
        count += 1
    return count


@dataclass(slots=True)
class LiveCall:
    """A call of the unsettled tail, as a stream needs it: its arguments are ``text``, or, for raw JSON arguments
    still arriving, what a :class:`~.json_args.JsonView` shows of the source span ``span`` (a stream keeps one view
    per call and feeds it only the new text). ``open_value``: the string value the arguments end inside (a stream
    extends it as it grows)."""

    name: str
    id: str
    text: str
    span: tuple[int, int] | None = None
    open_value: AstNode | None = None

    def arguments(self, source: str) -> str:
        if self.span is None:
            return self.text
        return JsonView().feed(source[self.span[0] : self.span[1]])


class MessageBuilder:
    """Folds top-level AST nodes, in order, into the message's fields.

    A stream folds each settled node once (:meth:`add`) and maps the unsettled tail on a throw-away
    :meth:`fork`, so a feed costs what the tail costs. Whitespace around the answer and the reasoning is template
    formatting (the newline before ``</think>``, before a tool call): :meth:`message` trims it. While streaming,
    trailing whitespace is thereby held back until text follows it.
    """

    __slots__ = (
        "after_call",
        "calls",
        "content",
        "convert_args",
        "held",
        "id_position",
        "last_end",
        "offset",
        "reasoning",
        "warnings",
    )

    def __init__(
        self, offset: int, id_position: str = "none", convert_args: Callable[[str, str], str] | None = None
    ) -> None:
        self.offset = offset
        self.id_position = id_position
        self.convert_args = convert_args
        self.content: list[str] = []  # raw (untrimmed) pieces
        self.reasoning: list[str] = []
        self.calls: list[ToolCall] = []
        self.warnings: list[ParseWarning] = []
        self.after_call = False
        self.held = False  # the unsettled tail reached a node shown only once final: what follows waits too
        self.last_end = offset  # where the last node folded ends (text between it and the next was markup)

    def fork(self) -> MessageBuilder:
        """An empty builder continuing from this one's state (for the unsettled tail)."""
        other = MessageBuilder(self.offset, self.id_position, self.convert_args)
        other.after_call = self.after_call
        other.last_end = self.last_end
        return other

    def add(self, node: AstNode) -> None:
        """Fold one top-level node."""
        tag = node.tag
        if tag == tags.CONTENT:
            if node.end <= self.offset:
                return  # only the prompt's own text (an opened block the model left at once): nothing it wrote
            text = node.text
            if self.after_call and text.strip(WHITESPACE):
                self._warn(node, "text after the tool calls was kept as content")
                self.after_call = False  # one warning per stretch
            self.content.append(text)
        elif tag == tags.REASONING:
            self.reasoning.append(node.text)
        elif tag == tags.UNPARSED:
            self.after_call = False  # it carries its own warning
            text = node.text
            self.content.append(text)
            if node.source_text(node.start - 1, node.start) != "`":  # (`<tool_call>` in backticks is a mention)
                self._warn(node, f"{text!r} did not start a valid tool call")
        elif tag == tags.DROPPED:
            self._warn(node, f"left out of the message (nothing the client can use): {node.text!r}")
        elif tag == tags.STRAY:
            self._warn(node, f"unrecognised markup {node.text!r} ignored")
        elif tag == tags.UNCLOSED_REASONING:
            self._warn(node, "the reasoning block was not closed: it was read as ending where the tool call starts")
        elif tag == tags.UNOPENED_REASONING:
            text = node.text
            self._warn(node, f"{text!r} closed a reasoning block never opened: the text before it is reasoning")
        elif tag == tags.MALFORMED:
            text = node.text.strip(WHITESPACE)
            if text:
                name = f" {self.calls[-1].name!r}" if self.calls else ""
                self._warn(node, f"the rest of tool call{name}, after where it broke, was left out: {text!r}")
        elif tag == tags.TOOL:
            call, notes = _tool_call(node, self.id_position, self.convert_args)
            for where, note in notes:
                self.warnings.append(ParseWarning(max(where - self.offset, 0), note))
            if call is not None:
                self.calls.append(call)
                self.after_call = True
            elif not node.is_partial or node.broken:  # not a usable call: never drop its text
                self.content.append(node.text)
                if not notes and not self._bare(node):
                    self._warn(node, "a tool call without a known name")
        self.last_end = max(self.last_end, node.end)

    def _bare(self, node: AstNode) -> bool:
        """Whether a JSON object or array that is not a call came bare, right after text or at the start: no marker
        announced it, so it is JSON the answer quotes (`{"a": 1}` to a Llama 3 parser, whose calls have no marker),
        not a call that failed. One after a marker (`<tool_call>{"a": 1}`) or inside a list the parser read (its
        brackets were consumed as the list's) warns."""
        if node.text[:1] not in "{[":
            return False
        return not node.source_text(self.last_end, node.start).strip(WHITESPACE)

    def add_live(self, node: AstNode) -> LiveCall | None:
        """Fold a node of the unsettled tail; a call comes back as a :class:`LiveCall` instead of being kept.

        A complete call node that is not announced yet (no commit) may still grow, or vanish, or become content:
        until it is final, nothing after it is shown either (the next call's index, the order of content)."""
        if self.held:
            return None
        if node.tag == tags.MALFORMED and node.is_partial:
            self.held = True  # the rest of a broken call: where it ends decides what follows
            return None
        if node.tag != tags.TOOL:
            self.add(node)
            return None
        if node.is_partial and not node.broken:
            call = _live_call(node, self.id_position, self.convert_args)
        else:
            final, _ = _tool_call(node, self.id_position, self.convert_args, live=True)
            if final is None:
                self.held = True  # not (yet) a call: its text becomes content once final (it may grow, or vanish)
                return None
            call = LiveCall(final.name, final.id, final.arguments)
        if call is not None:
            self.after_call = True
        return call

    def message(self, raw_content: str | None = None, raw_reasoning: str | None = None) -> ChatMessage:
        content = "".join(self.content) if raw_content is None else raw_content
        reasoning = "".join(self.reasoning) if raw_reasoning is None else raw_reasoning
        return built_message(
            content.strip(WHITESPACE), reasoning.strip(WHITESPACE), tuple(self.calls), tuple(self.warnings)
        )

    def _warn(self, node: AstNode, message: str) -> None:
        self.warnings.append(ParseWarning(max(node.start - self.offset, 0), message))


def _children(node: AstNode) -> list[AstNode]:
    """Tagged descendants directly below ``node`` (rule nodes are transparent)."""
    found: list[AstNode] = []
    stack = list(reversed(node.children))
    while stack:
        child = stack.pop()
        if child.tag is not None:
            found.append(child)
        else:
            stack.extend(reversed(child.children))
    return found


_ORDINARY_MEMBERS = frozenset({"type", "index", "id", "call_id", "tool_call_id"})  # need no warning


@dataclass(slots=True)
class _CallReading:
    """What a TOOL node holds."""

    name: str = ""
    call_id: str = ""
    id_done: bool = False
    raw_args: AstNode | None = None
    tagged: list[AstNode] = field(default_factory=list)
    unknown: list[AstNode] = field(default_factory=list)
    stray: list[AstNode] = field(default_factory=list)
    committed: bool = False
    cut: bool = False  # closed by the end of the output instead of its end marker
    missing: list[str] = field(default_factory=list)  # markers the call was read without (dropped special tokens)
    extra_ids: list[AstNode] = field(default_factory=list)  # id members after the first complete one (left out)
    name_done: bool = False  # the name read is complete
    extra_names: list[AstNode] = field(default_factory=list)  # name members after the first complete one (left out)
    undeclared: bool = False  # a tool the request does not declare


def _read_call(node: AstNode, id_position: str = "none") -> _CallReading:
    reading = _CallReading()
    for child in _children(node):
        tag = child.tag
        if tag == tags.TOOL_NAME:
            if reading.name and reading.name_done:
                # A second name member (`"name": "a", "name": "b"`): a stream announced the call with the first,
                # so the first is kept, as the first of two ids or equal argument keys is; the other is noted.
                reading.extra_names.append(child)
                continue
            reading.name = child.text
            reading.name_done = not child.is_partial
        elif tag == tags.TOOL_ID:
            if id_position == "before_args" and reading.raw_args is not None:
                continue  # written after the arguments: a stream announced the call (and its id) before it came
            if reading.id_done:
                # A second id member (`"id": {}, "id": "call1"`): a stream announced the call with the first one,
                # complete, so the first is kept, as the first of two equal argument keys is; the other is noted.
                reading.extra_ids.append(child)
                continue
            reading.call_id = child.text.strip().strip('"')
            reading.id_done = not child.is_partial
            # An id may contain the name (Kimi-K2's ``functions.NAME:0``).
            reading.name = next((c.text for c in _children(child) if c.tag == tags.TOOL_NAME), reading.name)
        elif tag == tags.TOOL_ARGS:
            reading.raw_args = child
        elif tag == tags.TOOL_ARG:
            reading.tagged.append(child)
            reading.committed = reading.committed or any(c.tag == tags.COMMIT for c in _children(child))
            reading.stray += [c for c in _children(child) if c.tag == tags.STRAY]  # (an argument header's: blocks)
        elif tag == tags.TOOL_UNKNOWN:
            reading.unknown.append(child)
        elif tag == tags.COMMIT:
            reading.committed = True
        elif tag == tags.CUT:
            reading.cut = True
        elif tag == tags.UNDECLARED:
            reading.undeclared = True
        elif tag == tags.STRAY:
            reading.stray.append(child)
        elif tag.startswith(tags.MISSING):
            reading.missing.append(tag[len(tags.MISSING) :])
    return reading


def _announced(reading: _CallReading, node: AstNode, id_position: str, live: bool) -> bool:
    """Whether this call is shown. A final node (no longer input changes it) is a call if it has a name. A node of
    the unsettled tail only once the grammar committed to it — before that, even a complete-looking call may
    still grow or fail — and, while it is still arriving, once its id is known where one comes first."""
    if not reading.name:
        return False
    if not live and not node.broken:
        return True
    if not reading.committed:
        return False  # (a broken call that never committed was never shown: its text is content)
    if not node.is_partial or node.broken or id_position == "none" or reading.id_done:
        return True
    return id_position == "before_args"  # after the arguments began, a missing id will not come any more


def _tool_call(
    node: AstNode, id_position: str, convert_args: Callable[[str, str], str] | None, *, live: bool = False
) -> tuple[ToolCall | None, list[tuple[int, str]]]:
    """The call a TOOL node holds (None: not a call, or not announced yet), and notes about it (position, text).
    ``live``: the node belongs to the unsettled tail of a partial parse.

    The arguments of a final call are always a JSON object without duplicate keys (docs/parsing.md, "Broken
    calls"): a call that broke off or is malformed keeps what it had shown, closed, and its status says so."""
    reading = _read_call(node, id_position)
    notes: list[tuple[int, str]] = []
    if not _announced(reading, node, id_position, live):
        return None, notes
    name = reading.name
    if reading.missing:
        markers = " and ".join(map(repr, reading.missing))
        plural = "s" if len(reading.missing) > 1 else ""
        notes.append((node.start, f"tool call {name!r} was read without its {markers} marker{plural}"))
    if reading.undeclared:
        notes.append((node.start, f"tool {name!r} is not declared in the request"))
    for extra in reading.extra_ids:
        notes.append((extra.start, f"tool call {name!r} has a second id {extra.text.strip()!r}: the first is kept"))
    for extra in reading.extra_names:
        notes.append((extra.start, f"tool call {name!r} has a second name {extra.text.strip()!r}: the first is kept"))
    complete = not node.is_partial
    strange = [m for m in reading.unknown if _member_key(m) not in _ORDINARY_MEMBERS]
    status = CallStatus.COMPLETE
    if strange and reading.raw_args is None and complete:
        # No arguments member but other members (another key for the arguments, a damaged "arguments" key,
        # arguments written flat): read the arguments from them rather than run the tool without any.
        used = _arguments_members(strange)
        keys = ", ".join(repr(_member_key(m)) for m in used)
        notes.append((node.start, f"tool call {name!r} has no arguments member; read them from {keys}"))
        notes += [_unknown_member_note(m, name) for m in strange if m not in used]
        found = _arguments_from_members(used)
    else:
        notes += [_unknown_member_note(m, name) for m in strange]
        for stray in reading.stray:
            notes.append((stray.start, f"unrecognised markup {stray.text!r} in tool call {name!r} ignored"))
        if node.broken:
            if node.cut_off:
                status = CallStatus.CUT_OFF
                notes.append((node.end, f"the output ends inside tool call {name!r}; its arguments were closed there"))
            else:
                status = CallStatus.REPAIRED
                notes.append(
                    (node.end, f"tool call {name!r} is malformed here; its arguments were closed where they broke")
                )
        elif complete and reading.cut and reading.raw_args is None and not reading.tagged:
            status = CallStatus.CUT_OFF
            notes.append((node.end, f"the output ends inside tool call {name!r}, before any argument"))
        found = _arguments(reading, complete, convert_args, node.broken)
    if found.notes and (complete or node.broken):
        where = reading.raw_args.start if reading.raw_args is not None else node.start
        notes += [(where, f"the arguments of tool call {name!r}: {note}") for note in found.notes]
    if found.repaired and status is CallStatus.COMPLETE and (complete or node.broken):
        status = CallStatus.REPAIRED
    return built_call(name, found.text, reading.call_id, False, status), notes


def _unknown_member_note(member: AstNode, name: str) -> tuple[int, str]:
    """The warning about a member left out of the call; it carries the member's value, so nothing is lost."""
    key, value = _member_parts(member)
    return member.start, f"unknown member {key!r} of tool call {name!r} ignored: {value}"


_DECODER = json.JSONDecoder(strict=False)  # keys as the scanner accepts them (raw control characters too)


def _member_parts(member: AstNode) -> tuple[str, str]:
    """A ``"key": value`` member's key and value text."""
    text = member.text
    try:
        key, end = _DECODER.raw_decode(text)
    except ValueError:
        return text[:40], ""
    value = text[end:].lstrip(WHITESPACE)[1:].strip(WHITESPACE)  # after the colon
    return (key if isinstance(key, str) else text[:40]), value


def _member_key(member: AstNode) -> str:
    return _member_parts(member)[0]


# Keys models write for the arguments besides "arguments" and "parameters" (which the parser reads as such): Anthropic's
# "input", and short forms. Compared without case, spaces, "_" or "-" ("Arguments", "argu ments" are damaged keys).
_ARGUMENT_LIKE = frozenset({"arguments", "parameters", "argument", "parameter", "args", "params", "input"})


def _arguments_members(members: list[AstNode]) -> list[AstNode]:
    """The members to read the arguments from: the one object-valued member with an arguments-like key, else all."""
    named = [m for m in members if _normal_key(_member_key(m)) in _ARGUMENT_LIKE and _member_parts(m)[1][:1] == "{"]
    return named if len(named) == 1 else members


def _normal_key(key: str) -> str:
    return "".join(key.lower().replace("_", " ").replace("-", " ").split())


def _arguments_from_members(members: list[AstNode]) -> JsonArguments:
    """Arguments when the arguments member is missing: the one object-valued member's value, else the members."""
    parts = [_member_parts(m) for m in members]
    if len(parts) == 1 and parts[0][1].startswith("{"):
        return read_json_arguments(parts[0][1])
    return read_json_arguments(
        "{" + ", ".join(f"{json.dumps(key, ensure_ascii=False)}: {value}" for key, value in parts) + "}"
    )


def _arguments(
    reading: _CallReading, complete: bool, convert_args: Callable[[str, str], str] | None, broken: bool = False
) -> JsonArguments:
    """The arguments as far as they are shown: ``complete`` (the call is complete) or ``broken`` (it broke off for
    good) give final arguments, a JSON object; otherwise a prefix of them that a stream may already send."""
    raw = reading.raw_args
    final = complete or broken
    if raw is not None and convert_args is not None:
        if final and not raw.is_partial:
            return _converted(convert_args, reading.name, raw.text)  # (a call that broke after its arguments ended)
        if broken:
            return _repaired_conversion(convert_args, reading.name, raw.text)
        return JsonArguments("")  # shown only when complete
    if raw is not None:
        if final:
            return read_json_arguments(raw.text, canonical=raw.canonical_json)
        return JsonArguments(JsonView().feed(raw.text))
    if reading.tagged:
        return _tagged_arguments(reading.tagged, complete, broken)
    if broken and reading.unknown:  # broke off in members the format does not define: keep them as far as they go
        return read_json_arguments("{" + ", ".join(m.text.strip(WHITESPACE) for m in reading.unknown))
    if final:
        return JsonArguments("{}")  # (a call cut off before any argument: its status says so)
    return JsonArguments("")  # nothing read yet: JSON arguments may still start with anything


def _live_call(node: AstNode, id_position: str, convert_args: Callable[[str, str], str] | None) -> LiveCall | None:
    """A partial call as :class:`LiveCall` (None while not announced); raw JSON arguments become a span, complete
    or not (a stream's view of them reads only what it has not read yet; the call may still end otherwise)."""
    reading = _read_call(node, id_position)
    if not _announced(reading, node, id_position, True):
        return None
    raw = reading.raw_args
    if raw is not None and convert_args is None:
        return LiveCall(reading.name, reading.call_id, "", (raw.start, raw.end))
    if raw is None and reading.tagged:
        found = _tagged_arguments(reading.tagged, False)
        return LiveCall(reading.name, reading.call_id, found.text, open_value=found.open_value)
    return LiveCall(reading.name, reading.call_id, _arguments(reading, False, convert_args).text)


# --- converted arguments (pythonic calls, Gemma's dicts, MiniMax-M3's elements) ------------------------------------

_MAX_REPAIRS = 24  # cut points tried when reading a broken call's arguments (each try converts the text once)
_CUT_AFTER = frozenset(",)]}>")
_QUOTES = ('<|"|>', '"', "'")  # Gemma's quote token, JSON's and Python's quotes
_PAIRS = {"(": ")", "[": "]", "{": "}"}


def _converted(convert_args: Callable[[str, str], str], name: str, text: str) -> JsonArguments:
    """A complete argument text converted to JSON (then read as JSON arguments: no duplicate keys); a converter
    that cannot read it leaves the call to :func:`_repaired_conversion`."""
    try:
        converted = convert_args(name, text)
        found = read_json_arguments(converted)
    except (ValueError, RecursionError, MemoryError):
        found = _repaired_conversion(convert_args, name, text)
        found.notes.insert(0, f"{text.strip(WHITESPACE)!r} could not be read as written; read as {found.text}")
        return found
    if isinstance(converted, RepairedArguments):  # read, but not as the template writes it: said so
        found.notes[:0] = converted.notes
        found.repaired = True
    return found


def _repaired_conversion(convert_args: Callable[[str, str], str], name: str, text: str) -> JsonArguments:
    """Arguments of a call whose argument text broke off or does not convert: the longest readable prefix, closed
    (open quotes and brackets; a converter may know better, with a ``close(text) -> (keep, closers)`` method, as
    MiniMax-M3's closes open elements), tried at the end and then back at the ends of complete elements; ``{}``
    when no prefix reads. Such arguments are held back until the call is final, so any deterministic choice
    streams."""
    body = _without_cut_token(text.rstrip(WHITESPACE))
    close = getattr(convert_args, "close", None)
    tries: list[tuple[int, str]] = []
    if close is not None:
        tries.append(close(body))
    cuts = [len(body)]
    at = len(body)
    while len(cuts) < _MAX_REPAIRS and at > 0:
        at -= 1
        if body[at] in _CUT_AFTER:
            cuts.append(at + 1)
        if body[at] == ",":
            cuts.append(at)
    for cut in dict.fromkeys(cuts):
        tries += [(cut, ""), (cut, _closers(body[:cut]))]
    for cut, closers in tries:
        prefix = body[:cut]
        try:
            found = read_json_arguments(convert_args(name, prefix + closers))
        except (ValueError, RecursionError, MemoryError):
            continue
        if found.text.startswith("{") and not (found.text == "{}" and prefix.strip(WHITESPACE)):
            left = text[cut:].strip(WHITESPACE)
            if left:
                found.notes.append(f"left out: {left!r}")
            found.repaired = True
            return found
    left = text.strip(WHITESPACE)
    return JsonArguments("{}", [f"could not be read; left out: {left!r}"] if left else [], True)


_CUT_LITERAL = re.compile(r"[A-Za-z0-9_.+-]+\Z")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?\Z")
_KEYWORDS = ("true", "false", "null", "True", "False", "None")


def _without_cut_token(text: str) -> str:
    """A cut-off argument text without what no value can be made of: a quote token cut off (``<|"`` of Gemma's
    ``<|"|>``), or — outside quotes — a literal cut off (``tr`` of ``true``, ``-`` or ``1.`` of a number), which
    would otherwise be read as a string (a value of another type is never shown before it is complete)."""
    for k in range(len(_QUOTES[0]) - 1, 0, -1):
        if text.endswith(_QUOTES[0][:k]):
            return text[:-k]
    literal = _CUT_LITERAL.search(text)
    if literal is None or _quote_at_end(text):
        return text
    word = literal.group()
    if (
        word in _KEYWORDS
        or _NUMBER.match(word)
        or not (
            any(k.startswith(word) for k in _KEYWORDS) or re.fullmatch(r"-?[0-9]*\.?[0-9]*(?:[eE][+-]?[0-9]*)?", word)
        )
    ):
        return text
    return text[: literal.start()]


def _quote_at_end(text: str) -> bool:
    closers = _closers(text)
    return closers[:1] in ('"', "'", "<")


def _closers(text: str) -> str:
    """What closes a cut-off argument text: the open quote (Gemma's token, ``"`` or ``'``) and open brackets."""
    stack: list[str] = []
    quote = ""
    i, n = 0, len(text)
    while i < n:
        if quote:
            if quote != '<|"|>' and text[i] == "\\":
                i += 2
                continue
            if text.startswith(quote, i):
                i += len(quote)
                quote = ""
                continue
            i += 1
            continue
        found = next((q for q in _QUOTES if text.startswith(q, i)), "")
        if found:
            quote = found
            i += len(found)
            continue
        char = text[i]
        if char in _PAIRS:
            stack.append(_PAIRS[char])
        elif stack and char == stack[-1]:
            stack.pop()
        i += 1
    return quote + "".join(reversed(stack))


# --- tagged arguments ----------------------------------------------------------------------------------------------


@dataclass
class _Tagged(JsonArguments):
    open_value: AstNode | None = None  # the string value the arguments end inside (still arriving)


def _string_value(text: str, complete: bool) -> str:
    """A string value as far as it is settled: the parser left the template's layout out of it, but trailing
    whitespace of an unfinished value is held back (the layout break before the end tag may still follow)."""
    return text if complete else text.rstrip(WHITESPACE)


def _tagged_arguments(args: list[AstNode], complete: bool, broken: bool = False) -> _Tagged:
    """JSON text for tagged arguments. A key is shown with the start of its value (a string's first characters, a
    non-string value once complete); the first of two arguments with one name wins. ``broken``: the call broke
    off here for good, so the arguments are closed, and a non-string value cut off is read as far as it got
    (typed by its schema: ``3`` of an integer parameter is ``3``)."""
    parts: list[str] = []
    notes: list[str] = []
    seen: set[str] = set()
    open_value: AstNode | None = None
    repaired = False
    for arg in args:
        name = value = None
        unclosed = ""
        for child in _children(arg):
            if child.tag == tags.TOOL_ARG_NAME:
                name = child
            elif child.tag == tags.TOOL_ARG_STRING or is_value_tag(child.tag):
                value = child
            elif child.tag is not None and child.tag.startswith(tags.UNCLOSED):
                unclosed = child.tag[len(tags.UNCLOSED) :]
        if name is None:
            break
        if name.is_partial:
            if broken and name.text.strip(WHITESPACE):  # the output broke off inside the name
                notes.append(f"left out: the argument name {name.text.strip(WHITESPACE)!r}, cut off")
            break
        key_name = name.text.strip()
        value_done = value is not None and not value.is_partial and not arg.is_partial
        if key_name in seen:
            if value_done or broken:
                shown = value.text if value is not None else ""
                notes.append(f"duplicate argument {key_name!r}: the value {shown!r} was left out (the first is kept)")
                repaired = True
            if not value_done:
                break
            continue
        key = json.dumps(key_name, ensure_ascii=False) + ": "
        if value is None:
            if broken:
                notes.append(f"left out: the argument {key_name!r}, cut off before its value")
            break
        seen.add(key_name)
        if unclosed and value_done:
            notes.append(f"the value of argument {key_name!r} has no {unclosed!r}: it was read up to the markup after")
            repaired = True
        if value.tag == tags.TOOL_ARG_STRING:
            encoded = json.dumps(_string_value(value.text, value_done), ensure_ascii=False)
            parts.append(key + (encoded if value_done else encoded[:-1]))
            if not value_done:
                open_value = value
        elif value_done:
            parts.append(key + _clean_value(decode_value(value.tag, value.text), key_name, notes))
            wanted = misfit(value.tag, value.text)
            if wanted is not None:  # (kept as written: the server decides what to do with it)
                shown = value.text.strip(WHITESPACE)
                kinds = " or ".join(sorted(wanted))
                notes.append(f"the value {shown!r} of argument {key_name!r} is no {kinds}; it was kept as written")
                repaired = True
        elif broken and (cut := decode_cut_value(value.tag, value.text)) is not None:
            parts.append(key + _clean_value(cut, key_name, notes))  # typed by the schema, as far as it got
        else:
            if broken:
                shown = value.text.strip(WHITESPACE)
                notes.append(f"left out: the argument {key_name!r}" + (f", cut off at {shown!r}" if shown else ""))
            break  # a non-string value is shown once complete, its key with it
        if not value_done:
            break
    text = "{" + ", ".join(parts)
    if complete or broken:
        text += ('"' if open_value is not None else "") + "}"
        open_value = None
    return _Tagged(text, notes, repaired or any("duplicate" in n for n in notes), open_value)


_WRAP = '{"": '


def _clean_value(value: str, name: str, notes: list[str]) -> str:
    """A tagged value that is a JSON object or array as JSON arguments are shown (:mod:`.json_args`): raw control
    characters in its strings escaped, the first of two equal keys kept (noted)."""
    if value[:1] not in "{[":
        return value
    found = read_json_arguments(_WRAP + value + "}")
    if not found.text.startswith(_WRAP) or not found.text.endswith("}"):
        return value  # (not reached: the value is JSON)
    notes += [f"in argument {name!r}: {note}" for note in found.notes]
    return found.text[len(_WRAP) : -1]
