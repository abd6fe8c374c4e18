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
from collections.abc import Callable
from dataclasses import dataclass, field

from ..message import ChatMessage, ParseWarning, ToolCall
from ..peg import AstNode, ParseResult
from ..peg.json_scan import OK, scan_json
from . import tags
from .tagged_values import decode_value, is_value_tag

__all__ = [
    "WHITESPACE",
    "LiveCall",
    "MessageBuilder",
    "final_count",
    "map_raw",
    "map_result",
    "partial_json_span",
    "starts_string",
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
        calls = (*message.tool_calls, *(ToolCall(c.name, c.arguments(source), c.id) for c in live))
        message = dataclasses.replace(message, tool_calls=calls)
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
    """A call still arriving, as a stream needs it: its arguments are ``text`` followed by the source span
    ``span`` (raw JSON arguments are read from the input rather than copied on every feed)."""

    name: str
    id: str
    text: str
    span: tuple[int, int] | None = None

    def arguments(self, source: str) -> str:
        return self.text + source[self.span[0] : self.span[1]] if self.span else self.text


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

    def fork(self) -> MessageBuilder:
        """An empty builder continuing from this one's state (for the unsettled tail)."""
        other = MessageBuilder(self.offset, self.id_position, self.convert_args)
        other.after_call = self.after_call
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
        elif tag == tags.TOOL:
            call, notes = _tool_call(node, self.id_position, self.convert_args)
            for where, note in notes:
                self.warnings.append(ParseWarning(max(where - self.offset, 0), note))
            if call is not None:
                self.calls.append(call)
                self.after_call = True
            elif not node.is_partial or node.broken:  # not a usable call: never drop its text
                self.content.append(node.text)
                if not notes:
                    self._warn(node, "a tool call without a known name")

    def add_live(self, node: AstNode) -> LiveCall | None:
        """Fold a node of the unsettled tail; a call comes back as a :class:`LiveCall` instead of being kept.

        A complete call node that is not announced yet (no commit) may still grow, or vanish, or become content:
        until it is final, nothing after it is shown either (the next call's index, the order of content)."""
        if self.held:
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
        return ChatMessage(
            "assistant",
            content.strip(WHITESPACE),
            reasoning.strip(WHITESPACE),
            tuple(self.calls),
            tuple(self.warnings),
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
    undeclared: bool = False  # a tool the request does not declare


def _read_call(node: AstNode, id_position: str = "none") -> _CallReading:
    reading = _CallReading()
    for child in _children(node):
        tag = child.tag
        if tag == tags.TOOL_NAME:
            reading.name = child.text
        elif tag == tags.TOOL_ID:
            if id_position == "before_args" and reading.raw_args is not None:
                continue  # written after the arguments: a stream announced the call (and its id) before it came
            reading.call_id = child.text.strip().strip('"')
            reading.id_done = not child.is_partial
            # An id may contain the name (Kimi-K2's ``functions.NAME:0``).
            reading.name = next((c.text for c in _children(child) if c.tag == tags.TOOL_NAME), reading.name)
        elif tag == tags.TOOL_ARGS:
            reading.raw_args = child
        elif tag == tags.TOOL_ARG:
            reading.tagged.append(child)
            reading.committed = reading.committed or any(c.tag == tags.COMMIT for c in _children(child))
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
    ``live``: the node belongs to the unsettled tail of a partial parse."""
    reading = _read_call(node, id_position)
    notes: list[tuple[int, str]] = []
    if not _announced(reading, node, id_position, live):
        return None, notes
    if reading.missing:
        markers = " and ".join(map(repr, reading.missing))
        plural = "s" if len(reading.missing) > 1 else ""
        notes.append((node.start, f"tool call {reading.name!r} was read without its {markers} marker{plural}"))
    if reading.undeclared:
        notes.append((node.start, f"tool {reading.name!r} is not declared in the request"))
    complete = not node.is_partial
    strange = [m for m in reading.unknown if _member_key(m) not in _ORDINARY_MEMBERS]
    if strange and reading.raw_args is None and complete:
        # No arguments member but other members (another key for the arguments, a damaged "arguments" key,
        # arguments written flat): read the arguments from them rather than run the tool without any.
        used = _arguments_members(strange)
        keys = ", ".join(repr(_member_key(m)) for m in used)
        notes.append((node.start, f"tool call {reading.name!r} has no arguments member; read them from {keys}"))
        notes += [_unknown_member_note(m, reading.name) for m in strange if m not in used]
        return ToolCall(reading.name, _arguments_from_members(used), reading.call_id), notes
    notes += [_unknown_member_note(m, reading.name) for m in strange]
    for stray in reading.stray:
        notes.append((stray.start, f"unrecognised markup {stray.text!r} in tool call {reading.name!r} ignored"))
    if node.broken:
        notes.append(
            (node.end, f"tool call {reading.name!r} is cut off or malformed here; its arguments are as far as they go")
        )
    elif complete and reading.cut and reading.raw_args is None and not reading.tagged:
        notes.append((node.end, f"the output ends inside tool call {reading.name!r}, before any argument"))
    try:
        arguments = _arguments(reading, complete, convert_args, node.broken)
    except (ValueError, RecursionError, MemoryError):  # a converter that cannot read what the grammar let through
        raw = reading.raw_args
        arguments = raw.text.strip(WHITESPACE) if raw is not None else ""
        notes.append((node.start, f"the arguments of tool call {reading.name!r} could not be read; kept as written"))
    else:
        if complete and not live and not _strict_json(arguments):
            # e.g. a raw line break or NUL inside a string: lenient readers accept it, strict JSON clients do not
            notes.append((node.start, f"the arguments of tool call {reading.name!r} are not strict JSON"))
    return ToolCall(reading.name, arguments, reading.call_id), notes


def _unknown_member_note(member: AstNode, name: str) -> tuple[int, str]:
    """The warning about a member left out of the call; it carries the member's value, so nothing is lost."""
    key, value = _member_parts(member)
    return member.start, f"unknown member {key!r} of tool call {name!r} ignored: {value}"


def _strict_json(text: str) -> bool:
    """Whether ``text`` is JSON as a strict client reads it (json.loads; the iterative scanner for deep nesting)."""
    try:
        json.loads(text)
    except RecursionError:
        return scan_json(text, 0, "value", "json", False) == (OK, len(text))
    except ValueError:
        return False
    return True



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


def _arguments_from_members(members: list[AstNode]) -> str:
    """Arguments when the arguments member is missing: the one object-valued member's value, else the members."""
    parts = [_member_parts(m) for m in members]
    if len(parts) == 1 and parts[0][1].startswith("{"):
        return parts[0][1]
    return "{" + ", ".join(f"{json.dumps(key, ensure_ascii=False)}: {value}" for key, value in parts) + "}"


def _arguments(
    reading: _CallReading, complete: bool, convert_args: Callable[[str, str], str] | None, broken: bool = False
) -> str:
    raw = reading.raw_args
    if raw is not None and convert_args is not None:
        if (complete or broken) and not raw.is_partial:
            return convert_args(reading.name, raw.text)  # (a call that broke after its arguments ended keeps them)
        return raw.text.strip(WHITESPACE) if raw.broken else ""  # shown only when complete (or as written, broken)
    if raw is not None:
        return _json_arguments(raw)
    if reading.tagged:
        return _tagged_arguments(reading.tagged, complete, broken)
    if broken and reading.unknown:  # broke off in members the format does not define: keep them as written
        return "{" + ", ".join(m.text.strip(WHITESPACE) for m in reading.unknown)
    if reading.cut:
        return ""  # the output ended before any argument: not "no arguments" (see _CallReading.cut)
    return "{}" if complete else ""  # nothing read yet: JSON arguments may still start with anything


def _live_call(node: AstNode, id_position: str, convert_args: Callable[[str, str], str] | None) -> LiveCall | None:
    """A partial call as :class:`LiveCall` (None while not announced); raw JSON arguments become a span."""
    reading = _read_call(node, id_position)
    if not _announced(reading, node, id_position, True):
        return None
    raw = reading.raw_args
    if raw is not None and convert_args is None and raw.is_partial and not starts_string(raw):
        return LiveCall(reading.name, reading.call_id, "", partial_json_span(raw))
    return LiveCall(reading.name, reading.call_id, _arguments(reading, False, convert_args))


def starts_string(node: AstNode) -> bool:
    """Whether raw JSON arguments are a JSON string (which may hold the object; see _json_arguments)."""
    source = node._source.text
    start = node.start
    while start < node.end and source[start] in WHITESPACE:
        start += 1
    return start < node.end and source[start] == '"'


def partial_json_span(node: AstNode) -> tuple[int, int]:
    """The span of partial raw JSON arguments a stream may show: without surrounding whitespace or an escape cut
    off at the end (as :func:`_without_cut_escape`), found from the ends only (the text may be long)."""
    source = node._source.text
    start, end = node.start, node.end
    while start < end and source[start] in WHITESPACE:
        start += 1
    slash = source.rfind("\\", max(start, end - 6), end)
    if slash >= 0:
        before = slash
        while before > start and source[before - 1] == "\\":
            before -= 1
        rest = source[slash + 1 : end]
        cut = rest == "" or (rest[0] == "u" and len(rest) < 5 and all(c in _HEX for c in rest[1:]))
        if (slash - before) % 2 == 0 and cut:
            end = slash
    while end > start and source[end - 1] in WHITESPACE:
        end -= 1
    return start, end


def _json_arguments(node: AstNode) -> str:
    text = _without_cut_escape(node.text) if node.is_partial else node.text
    text = text.strip(WHITESPACE)
    if text.startswith('"') and node.is_partial:
        # A JSON string may hold the object (below): shown only once complete (or as written, broken).
        return text if node.broken else ""
    if text.startswith('"'):
        # Arguments given as a JSON string holding the object.
        try:
            inner = json.loads(text)
            if isinstance(inner, str) and inner.strip().startswith("{"):
                return inner.strip()
        except ValueError:
            pass
    return text


def _without_cut_escape(text: str) -> str:
    """Partial JSON text without an escape sequence cut off at its end (``\\`` or ``\\u12``): the stream only
    shows whole escapes, so what it shows is always a prefix of the final text."""
    tail = text[-6:]
    slash = tail.rfind("\\")
    if slash < 0:
        return text
    start = len(text) - len(tail) + slash
    run = len(text[:start]) - len(text[:start].rstrip("\\"))  # backslashes before this one
    if run % 2:
        return text  # this backslash is itself escaped
    rest = text[start + 1 :]
    if rest == "" or (rest[0] == "u" and len(rest) < 5 and all(c in _HEX for c in rest[1:])):
        return text[:start]
    return text


_HEX = frozenset("0123456789abcdefABCDEF")


def _string_value(text: str, complete: bool) -> str:
    """A string value as far as it is settled: the parser left the template's layout out of it, but trailing
    whitespace of an unfinished value is held back (the layout break before the end tag may still follow)."""
    return text if complete else text.rstrip(WHITESPACE)


def _tagged_arguments(args: list[AstNode], complete: bool, broken: bool = False) -> str:
    """JSON text for tagged arguments. ``broken``: the call broke off here for good, so a value shown only once
    complete is shown as it was left (as a JSON string), rather than lost."""
    parts: list[str] = []
    for arg in args:
        name = value = None
        for child in _children(arg):
            if child.tag == tags.TOOL_ARG_NAME:
                name = child
            elif child.tag == tags.TOOL_ARG_STRING or is_value_tag(child.tag):
                value = child
        if name is None:
            break
        if name.is_partial:
            if broken and name.text:  # the output broke off inside the name: keep what was read
                parts.append(json.dumps(name.text.strip(), ensure_ascii=False) + ": ")
            break
        key = json.dumps(name.text.strip(), ensure_ascii=False) + ": "
        if value is None:
            parts.append(key)
            break
        value_done = not value.is_partial and not arg.is_partial
        if value.tag == tags.TOOL_ARG_STRING:
            encoded = json.dumps(_string_value(value.text, value_done), ensure_ascii=False)
            parts.append(key + (encoded if value_done else encoded[:-1]))
        elif value_done:
            parts.append(key + decode_value(value.tag, value.text))
        elif broken and value.text.strip(WHITESPACE):
            parts.append(key + json.dumps(value.text, ensure_ascii=False))
        else:
            parts.append(key)
        if not value_done:
            break
    text = "{" + ", ".join(parts)
    return text + "}" if complete else text
