"""Replies written as headed blocks: a header *value* says what a block holds (BlockMode, docs/analysis.md "B1").

Most templates mark reasoning, the answer and a call each with a marker of its own (``<think>``, ``<tool_call>``).
Some write the turn as a sequence of blocks that all open alike, and a word in the header says what the block is:

* **tagged** blocks (Kimi K3): ``<|open|>think<|sep|>…<|close|>think<|sep|>``, ``<|open|>response<|sep|>…``,
  ``<|open|>tools<|sep|><|open|>call tool="NAME" index="1"<|sep|><|open|>argument key="city" type="string"<|sep|>
  Paris<|close|>argument<|sep|>…``. One opener, one header end, a closer that repeats the tag; attributes name a
  call's tool and an argument (and carry what the parser may skip: a running index, a type);
* **addressed** blocks (Functionary v2, and v3.2's ``>>>``): ``<|from|>assistant\\n<|recipient|>all\\n<|content|>…``
  then ``\\n<|from|>assistant\\n<|recipient|>get_weather\\n<|content|>{…}``. The header's value names a recipient:
  one means the user (the block is the answer), any other is the tool the block calls with its JSON arguments; a
  block runs to the next header. Role suffixes are the same idea with the role in the opener: ``<|im_start|>assistant``
  then ``/think``, ``/tool:get_weather`` or nothing (the answer), each block closed by ``<|im_end|>``.

The marker diffs of the other phases cannot see this (they read ``<|sep|>`` as the reasoning marker, the word in
front of it as text). This phase reads the renders of an answer, a reasoning turn and one and two calls as a whole:

1. *tagged*: in the answer's turn the needle sits right after ``MARKER TAG [attributes] MARKER`` and right before
   ``MARKER [/]TAG MARKER`` with the same tag. That gives the frame (opener, header end, closer around the tag);
   every render's turn is then read as a tree of blocks, and each role is the tag of the block holding its needle:
   the answer, the reasoning, the call (named by the attribute whose value is the function name, or by the tag
   itself), its parent (a section, unless it is the turn's own block), the arguments (blocks named by an attribute
   whose value is the argument's name; else the call's body is JSON);
2. *addressed*: a call's name sits between two strings that also frame the answer: ``OPEN PREFIX NAME HEADER_END
   {arguments}`` and ``OPEN VALUE HEADER_END answer``, the answer's value a word or nothing (``all``; ``""`` after
   ``<|im_start|>assistant``). What precedes both calls of the parallel render is separator + opener + prefix, the
   prefix as short as the answer's header allows; reasoning's value is what follows the opener in its header. What
   the template writes between the answer and a call's header (else after the reasoning), markers only, closes every
   block (``<|im_end|>``); between two calls, a call's block where that differs (``<|call|>``).

Found nothing: ``BlockFormat()`` (mode NONE), and the analysis is the marker analysis alone.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace

from ...template.capabilities import TemplateCapabilities
from .. import needles
from ..diff import common_prefix_len
from ..model import (
    ArgumentMarkers,
    BlockAttribute,
    BlockFormat,
    BlockMode,
    ContentAnalysis,
    ContentMode,
    FunctionMarkers,
    ReasoningAnalysis,
    ReasoningMode,
    ToolFormat,
    ToolFormatMode,
    ToolsAnalysis,
)
from ..patterns import marker_positions
from ..variants import VariantRenderer

__all__ = ["analyze_blocks", "block_markers", "block_tokens", "turn_end"]

# A marker token (no whitespace inside), a tag word, one attribute (``key="v"``, ``key='v'`` or ``key=v``).
_MARK = r"(?:<[^<>\s]+>|\[[^\[\]\s]+\])"
_WORD = r"[A-Za-z_][\w.-]*"
_ATTR = r"""\s+(?P<key{n}>[\w.:-]+)\s*=\s*(?P<value{n}>"[^"]*"|'[^']*'|[^\s"'<>\[\]=]+)"""
_ATTRS = r"""(?:\s+[\w.:-]+\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'<>\[\]=]+))*"""
_ONE_ATTR = re.compile(_ATTR.format(n=""))
_HEADER_BEFORE = re.compile(rf"(?P<open>{_MARK})(?P<tag>{_WORD})(?P<attrs>{_ATTRS})\s*(?P<end>{_MARK})\s*\Z")
_WORD_AT_END = re.compile(rf"(?P<word>{_WORD})\Z")


def analyze_blocks(renderer: VariantRenderer, caps: TemplateCapabilities) -> BlockFormat:
    """The reply's block syntax, or ``BlockFormat()`` when the template writes none (see the module docstring)."""
    answer = _turn(renderer, [needles.USER, needles.assistant()])
    if answer is None or needles.ASSISTANT_MSG not in answer:
        return BlockFormat()
    renders = _Renders(answer, _turn(renderer, [needles.USER, needles.assistant(reasoning_content=needles.THINKING)]))
    if caps.supports_tool_calls:
        renders.call = _turn(renderer, needles.with_calls(needles.FIRST_CALL), tools=True)
        mixed = [needles.USER, needles.assistant(tool_calls=[needles.FIRST_CALL])]
        renders.mixed = _turn(renderer, mixed, tools=True)
        if caps.supports_parallel_tool_calls:
            renders.calls = _turn(renderer, needles.with_calls(needles.FIRST_CALL, needles.SECOND_CALL), tools=True)
    tagged = _tagged(renders)
    if tagged is None:
        return _addressed(renders) or BlockFormat()
    result, frame = tagged
    texts = [t for t in (renders.answer, renders.reasoning, renders.call, renders.calls) if t is not None]
    if result.argument:
        typed = _turn(renderer, needles.with_calls(needles.tool_call(needles.FUN_FIRST, _TYPED)), tools=True)
        if typed is not None:
            texts.append(typed)
            result = _with_types(result, _tree(typed, frame))
        # Arguments given as JSON text (as OpenAI clients send them): a template may write them in a block of their own.
        text_call = needles.tool_call(needles.FUN_FIRST, {})
        text_call["function"]["arguments"] = json.dumps(needles.BOTH_ARGS)
        as_text = _turn(renderer, needles.with_calls(text_call), tools=True)
        if as_text is not None:
            texts.append(as_text)
            result = _with_json_block(result, _tree(as_text, frame))
    return _with_attributes(result, [_tree(t, frame) for t in texts])


# A call with a value of every JSON type (the first argument's name keeps the probe's), and those types.
_TYPED: dict[str, object] = {
    needles.ARG_FIRST: "XXXX",
    "ARG_INT_I": 7,
    "ARG_NUM_N": 1.5,
    "ARG_BOOL_B": True,
    "ARG_NULL_Z": None,
    "ARG_LIST_L": ["x"],
    "ARG_DICT_D": {"k": "v"},
}
_JSON_TYPES = dict(zip(_TYPED, ("string", "integer", "number", "boolean", "null", "array", "object"), strict=True))


@dataclass(slots=True)
class _Renders:
    """The assistant's turn as the template renders it: an answer, reasoning + answer, one call, two calls, an
    answer and a call."""

    answer: str
    reasoning: str | None
    call: str | None = None
    calls: str | None = None
    mixed: str | None = None


def _turn(renderer: VariantRenderer, messages: list[dict[str, object]], *, tools: bool = False) -> str | None:
    """What the last message adds to the conversation before it (the assistant's turn, header included)."""
    base = renderer.render(messages[:-1], tools=tools)
    full = renderer.render(messages, tools=tools)
    if base is None or full is None:
        return None
    return full[common_prefix_len(base, full) :]


# --- tagged blocks --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Frame:
    open: str
    header_end: str
    close_open: str
    close_end: str

    def tokens(self) -> re.Pattern[str]:
        """A header (groups ``tag``, ``attrs``) or a closer (group ``closed``)."""
        header = re.escape(self.open) + rf"(?P<tag>{_WORD})(?P<attrs>{_ATTRS})\s*" + re.escape(self.header_end)
        closer = re.escape(self.close_open) + rf"(?P<closed>{_WORD})" + re.escape(self.close_end)
        return re.compile(f"{header}|{closer}")


@dataclass(slots=True)
class _Block:
    tag: str
    attrs: dict[str, str]
    parent: _Block | None = None
    text: list[str] = field(default_factory=list)
    children: list[_Block] = field(default_factory=list)
    quote: str | None = None  # (the root's: the quote around every attribute value of the tree, "" if mixed)

    def holding(self, needle: str) -> _Block | None:
        """The innermost block whose own text holds ``needle``."""
        for child in self.children:
            found = child.holding(needle)
            if found is not None:
                return found
        return self if any(needle in t for t in self.text) else None

    def walk(self) -> list[_Block]:
        return [self, *(b for c in self.children for b in c.walk())]


def _attributes(text: str) -> dict[str, str]:
    return {m["key"]: m["value"].strip("\"'") for m in _ONE_ATTR.finditer(text)}


def _tree(text: str, frame: _Frame) -> _Block:
    """The blocks of ``text``; a closer without its header (of a block opened before the turn) is skipped."""
    root = _Block("", {})
    current, at = root, 0
    for match in frame.tokens().finditer(text):
        current.text.append(text[at : match.start()])
        at = match.end()
        if match["tag"] is not None:
            for value in _ONE_ATTR.finditer(match["attrs"]):
                quote = value["value"][0] if value["value"][0] in "\"'" else ""
                root.quote = quote if root.quote in (None, quote) else ""
            block = _Block(match["tag"], _attributes(match["attrs"]), current)
            current.children.append(block)
            current = block
            continue
        opened = current
        while opened is not root and opened.tag != match["closed"]:
            opened = opened.parent or root
        if opened is not root:
            current = opened.parent or root
    current.text.append(text[at:])
    return root


def _frame(answer: str) -> tuple[_Frame, str] | None:
    """The frame around the answer's needle, and the answer's tag: ``MARKER TAG [attrs] MARKER needle MARKER [/]TAG
    MARKER``."""
    at = answer.index(needles.ASSISTANT_MSG)
    head = _HEADER_BEFORE.search(answer, 0, at)
    if head is None:
        return None
    tag = head["tag"]
    close = re.compile(rf"\s*(?P<open>{_MARK}/?){re.escape(tag)}(?P<end>{_MARK})")
    tail = close.match(answer, at + len(needles.ASSISTANT_MSG))
    if tail is None:
        return None
    return _Frame(head["open"], head["end"], tail["open"], tail["end"]), tag


def _named(block: _Block, needle: str) -> tuple[_Block, str] | None:
    """The first block below ``block`` (or itself) whose attribute ``needle`` is the value of, with the attribute."""
    for candidate in block.walk():
        for key, value in candidate.attrs.items():
            if value == needle:
                return candidate, key
    return None


def _tagged(renders: _Renders) -> tuple[BlockFormat, _Frame] | None:
    found = _frame(renders.answer)
    if found is None:
        return None
    frame, content = found
    answer = _tree(renders.answer, frame).holding(needles.ASSISTANT_MSG)
    if answer is None or answer.tag != content:
        return None
    turn = answer.parent.tag if answer.parent is not None else ""
    reasoning = ""
    if renders.reasoning is not None:
        thought = _tree(renders.reasoning, frame).holding(needles.THINKING)
        if thought is not None and thought.tag not in ("", content, turn):
            reasoning = thought.tag
    result = BlockFormat(
        BlockMode.TAGGED, frame.open, frame.header_end, frame.close_open, frame.close_end,
        reasoning=reasoning, content=content, turn=turn,
    )  # fmt: skip
    if renders.call is None:
        return result, frame
    return _with_calls(result, _tree(renders.call, frame)), frame


def _with_types(result: BlockFormat, tree: _Block) -> BlockFormat:
    """The argument attribute whose value names the value's JSON type (``type="number"``), from the typed call: one
    every argument block carries, with more than one value."""
    named = {}
    for block in tree.walk():
        if block.tag == result.argument and block.attrs.get(result.key_attribute) in _JSON_TYPES:
            named[_JSON_TYPES[block.attrs[result.key_attribute]]] = block.attrs
    if len(named) < len(_JSON_TYPES):
        return result
    shared = set.intersection(*(set(attrs) for attrs in named.values())) - {result.key_attribute}
    for attribute in sorted(shared):
        spelled = {kind: attrs[attribute] for kind, attrs in named.items()}
        if len(set(spelled.values())) > 1:
            return replace(result, type_attribute=attribute, type_names=tuple(spelled.items()))
    return result


def _with_json_block(result: BlockFormat, tree: _Block) -> BlockFormat:
    """The tag of the block inside the call that holds the arguments as JSON, where the template writes arguments
    given as JSON text so."""
    named = _named(tree, needles.FUN_FIRST)
    if named is None:
        return result
    for child in named[0].children:
        if child.tag not in (result.argument, "") and _json_body("".join(child.text)):
            return replace(result, json_block=child.tag)
    return result


def _with_attributes(result: BlockFormat, trees: list[_Block]) -> BlockFormat:
    """The attributes the renders write in headers besides the name and key attributes, with the values seen (a
    number for values that are all digits)."""
    seen: dict[tuple[str, str], list[str]] = {}
    for tree in trees:
        for block in tree.walk():
            for name, value in block.attrs.items():
                if (block.tag, name) not in (
                    (result.call, result.name_attribute),
                    (result.argument, result.key_attribute),
                ):
                    values = seen.setdefault((block.tag, name), [])
                    if value not in values:
                        values.append(value)
    attributes = tuple(
        BlockAttribute(tag, name, ("#",) if all(v.isdigit() for v in values) else tuple(values))
        for (tag, name), values in seen.items()
    )
    quotes = {tree.quote for tree in trees if tree.quote is not None}
    return replace(result, attributes=attributes, quote=quotes.pop() if len(quotes) == 1 else "")


def _with_calls(result: BlockFormat, tree: _Block) -> BlockFormat:
    """The call, section and argument tags of a tagged format, read from the one-call render."""
    named = _named(tree, needles.FUN_FIRST)
    if named is not None:
        call, name_attribute = named
        call_tag = call.tag
    else:  # the tag is the name: `<|open|>get_weather<|sep|>{…}<|close|>get_weather<|sep|>`
        call = next((b for b in tree.walk() if b.tag == needles.FUN_FIRST), None)
        if call is None:
            return result
        name_attribute, call_tag = "", ""
    parent = call.parent
    section = parent.tag if parent is not None and parent.tag not in ("", result.turn, result.content) else ""
    argument, key_attribute = "", ""
    arg = _named(call, needles.ARG_FIRST)
    if arg is not None and arg[0] is not call:
        argument, key_attribute = arg[0].tag, arg[1]
    elif not _json_body("".join(call.text)):
        return result  # neither argument blocks nor JSON: not a call layout this phase knows
    return BlockFormat(
        result.mode, result.open, result.header_end, result.close_open, result.close_end,
        reasoning=result.reasoning, content=result.content, section=section, call=call_tag,
        name_attribute=name_attribute, argument=argument, key_attribute=key_attribute, turn=result.turn,
    )  # fmt: skip


def _json_body(text: str) -> bool:
    """Whether ``text`` is JSON arguments (the probe's), maybe with whitespace around them."""
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and needles.ARG_FIRST in value


# --- addressed blocks -----------------------------------------------------------------------------------------------


def _arguments_at(text: str, after: int) -> tuple[int, int] | None:
    """The span of the JSON arguments (an object holding the probe's first argument) after ``after``."""
    brace = text.find("{", after)
    if brace < 0:
        return None
    try:
        value, end = json.JSONDecoder().raw_decode(text, brace)
    except ValueError:
        return None
    if not isinstance(value, dict) or needles.ARG_FIRST not in value:
        return None
    return brace, end


def _common_suffix(a: str, b: str) -> str:
    return a[len(a) - common_prefix_len(a[::-1], b[::-1]) :]


# An opener starts with a marker token (``<|from|>``, ``<turn>``) or is a run of one punctuation character (``>>>``).
_OPENER = re.compile(rf"{_MARK}.*|(\W)\1{{2,}}", re.DOTALL)
# A header value is on the header's line (a recipient ``all``, a role suffix ``/think``, `` to=functions.``).
_VALUE = re.compile(r"[^\r\n]{0,64}")


def _addressed(renders: _Renders) -> BlockFormat | None:
    """``OPEN VALUE HEADER_END body [END]``: the value says what the block is. A call's value is the tool's name after
    a prefix (``get_weather``, ``/tool:get_weather``, `` to=functions.get_weather``), the answer's a word or nothing
    (``all``; ``<|im_start|>assistant`` with no suffix), reasoning's another (``scratchpad``, ``/think``)."""
    if renders.call is None:
        return None
    call = renders.call
    name_at = call.find(needles.FUN_FIRST)
    args = _arguments_at(call, name_at + len(needles.FUN_FIRST)) if name_at >= 0 else None
    if args is None:
        return None
    header_end = call[name_at + len(needles.FUN_FIRST) : args[0]]
    answer = renders.answer
    before = answer[: answer.index(needles.ASSISTANT_MSG)]
    if not header_end or not before.endswith(header_end):
        return None
    head = before[: len(before) - len(header_end)]
    parallel = renders.calls is not None and needles.FUN_SECOND in renders.calls
    if parallel:
        calls = renders.calls or ""
        named = _common_suffix(calls[: calls.find(needles.FUN_FIRST)], calls[: calls.find(needles.FUN_SECOND)])
    else:
        named = call[:name_at]
    split = _split_header(named, head, exact=parallel)
    if split is None:
        return None
    opener, separator, prefix, content = split
    reasoning = _value_of(renders.reasoning, needles.THINKING, opener, header_end, content)
    (end, layout), (call_end, call_layout) = _block_end(renders, opener, reasoning), _call_end(renders, opener)
    if not end:
        end, layout = call_end, call_layout
    return BlockFormat(
        BlockMode.ADDRESSED, opener, header_end, separator=layout if end else separator, content=content,
        reasoning=reasoning, call=prefix, block_end=end, call_end=call_end if call_end != end else "",
    )  # fmt: skip


def _split_header(named: str, head: str, *, exact: bool) -> tuple[str, str, str, str] | None:
    """``named`` (what precedes a call's name) as separator + opener + the call's value prefix, with the answer's
    value: ``head`` (the answer's header before its end) must end with opener + that value, a word or nothing. The
    shortest prefix wins (a recipient is the whole value: ``<|recipient|>`` + ``get_weather``, ``all``). ``exact``:
    ``named`` is already what the calls share (two calls' common ending); else its end shared with ``head``."""
    word = _WORD_AT_END.search(head)
    values = dict.fromkeys((word["word"] if word else "", ""))
    for cut in range(len(named), 0, -1):
        prefix = named[cut:]
        if not _VALUE.fullmatch(prefix):
            return None
        rest = named[:cut]
        for content in values:
            ahead = head[: len(head) - len(content)]
            opened = rest if exact else _common_suffix(rest, ahead)
            opener = opened.lstrip()
            if _OPENER.fullmatch(opener) and not _WORD_AT_END.fullmatch(opener) and ahead.endswith(opener):
                return opener, opened[: len(opened) - len(opener)], prefix, content
    return None


def _value_of(render: str | None, needle: str, opener: str, header_end: str, taken: str) -> str:
    """The header value of the addressed block holding ``needle`` in ``render`` ("" if none, or ``taken``)."""
    if render is None or needle not in render:
        return ""
    before = render[: render.index(needle)]
    if not before.endswith(header_end):
        return ""
    head = before[: len(before) - len(header_end)]
    at = head.rfind(opener)
    value = head[at + len(opener) :] if at >= 0 else ""
    return value if value and value != taken and _VALUE.fullmatch(value) else ""


def _block_end(renders: _Renders, opener: str, reasoning: str) -> tuple[str, str]:
    """What closes the answer's and reasoning's blocks (``<|im_end|>``; "" where a block runs to the next header),
    and the layout after it: what comes between the answer and a call's header, else between the reasoning and the
    next header."""
    shown = ((renders.mixed, needles.ASSISTANT_MSG), (renders.reasoning if reasoning else None, needles.THINKING))
    for text, needle in shown:
        if text is not None and needle in text:
            after = text.index(needle) + len(needle)
            header = text.find(opener, after)
            if header >= 0:
                return _end_between(text[after:header])
    return "", ""


def _call_end(renders: _Renders, opener: str) -> tuple[str, str]:
    """What closes a call's block, and the layout after it: what comes between the first call's arguments and the
    second call's header."""
    calls = renders.calls
    if calls is None or needles.FUN_SECOND not in calls:
        return "", ""
    args = _arguments_at(calls, calls.find(needles.FUN_FIRST))
    header = calls.rfind(opener, 0, calls.find(needles.FUN_SECOND))
    if args is None or header < args[1]:
        return "", ""
    return _end_between(calls[args[1] : header])


def _end_between(between: str) -> tuple[str, str]:
    """The block end written between two blocks (markers only) and the whitespace after it."""
    end = between.strip()
    if not end or "".join(m.group() for m in marker_positions(end)) != end:
        return "", ""
    return end, between[len(between.rstrip()) :]


# --- what the marker fields say of the blocks -----------------------------------------------------------------------


def block_markers(
    blocks: BlockFormat, reasoning: ReasoningAnalysis, tools: ToolsAnalysis
) -> tuple[ReasoningAnalysis, ContentAnalysis, ToolsAnalysis]:
    """The reasoning, content and tool-call markers that describe ``blocks`` as far as fixed markers can (the
    parser and the grammar read the blocks themselves; the rest of the package — grammar tags, the prefill, the
    report — reads these). ``reasoning`` and ``tools`` are the marker analysis's, kept where the blocks say
    nothing of them."""
    if blocks.mode is BlockMode.ADDRESSED:
        # A reasoning block ends with the block end, or runs to the next header, so that opener ends it.
        reasoning = ReasoningAnalysis()
        if blocks.reasoning:
            end = blocks.block_end or blocks.open
            reasoning = ReasoningAnalysis(ReasoningMode.TAG_BASED, blocks.header(blocks.reasoning), end)
        content = ContentAnalysis(ContentMode.ALWAYS_WRAPPED, blocks.header(blocks.content), blocks.block_end)
        calls = ToolFormat(ToolFormatMode.TAG_WITH_JSON, per_call_start=blocks.open, per_call_end=blocks.call_closer)
        return reasoning, content, ToolsAnalysis(calls, FunctionMarkers(blocks.call, blocks.header_end))
    if blocks.reasoning:
        reasoning = ReasoningAnalysis(
            ReasoningMode.TAG_BASED, blocks.header(blocks.reasoning), blocks.closer(blocks.reasoning)
        )
    content = ContentAnalysis(ContentMode.ALWAYS_WRAPPED, blocks.header(blocks.content), blocks.closer(blocks.content))
    if not blocks.call and not blocks.name_attribute:
        return reasoning, content, tools if not blocks.section else ToolsAnalysis()
    mode = ToolFormatMode.TAG_WITH_TAGGED if blocks.argument else ToolFormatMode.TAG_WITH_JSON
    section_start = blocks.header(blocks.section) if blocks.section else ""
    section_end = blocks.closer(blocks.section) if blocks.section else ""
    name_prefix = f'{blocks.open}{blocks.call} {blocks.name_attribute}="' if blocks.name_attribute else blocks.open
    calls = ToolFormat(mode, section_start, section_end, per_call_end=blocks.closer(blocks.call or ""))
    function = FunctionMarkers(name_prefix, '"' if blocks.name_attribute else blocks.header_end)
    arguments = ArgumentMarkers()
    if blocks.argument:
        arguments = ArgumentMarkers(
            name_prefix=f'{blocks.open}{blocks.argument} {blocks.key_attribute}="',
            name_suffix='"',
            value_suffix=blocks.closer(blocks.argument),
        )
    return reasoning, content, ToolsAnalysis(calls, function, arguments)


def block_tokens(blocks: BlockFormat) -> list[str]:
    """The markup tokens of the block syntax (``<|open|>``, ``<|sep|>``, ``<|close|>``; ``<|from|>``,
    ``<|recipient|>``, ``<|content|>``): what a tokenizer must keep whole."""
    found: list[str] = []
    frame = (blocks.open, blocks.header_end, blocks.close_open, blocks.close_end, blocks.block_end, blocks.call_end)
    for part in frame:
        marks = [m.group() for m in marker_positions(part)] or ([part.strip()] if part.strip() else [])
        found += [m for m in marks if m not in found]
    return found


def turn_end(blocks: BlockFormat, end_of_turn: tuple[str, ...]) -> tuple[str, ...]:
    """The end-of-turn markers without the closers of the answer's (or another role's) block in front of them:
    ``<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>`` ends a turn after calls too as
    ``<|close|>message<|sep|><|end_of_msg|>``."""
    if blocks.mode is not BlockMode.TAGGED:
        return end_of_turn
    roles = [blocks.closer(t) for t in (blocks.content, blocks.reasoning, blocks.section, blocks.call) if t]
    trimmed: list[str] = []
    for marker in end_of_turn:
        rest = marker.strip()
        while any(rest.startswith(c) for c in roles):
            rest = rest[len(next(c for c in roles if rest.startswith(c))) :].lstrip()
        if rest and rest not in trimmed:
            trimmed.append(rest)
    return tuple(trimmed)
