"""AST → :class:`ChatMessage`: content, reasoning and tool calls from the tagged parse tree.

The mapping is *prefix-monotone*: for a partial parse of a prefix of the output, every field is a prefix of what
the same field becomes later, which is what lets streaming emit append-only deltas. Hence: a call appears only once
its name is complete; a string argument shows its text without trailing whitespace (which may be the separator
before the closing tag); a non-string tagged value appears once it is complete (before, it might still turn out
not to be JSON); closing quotes and braces come only when the call is complete.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from ..message import ChatMessage, ParseWarning, ToolCall
from ..peg import AstNode, ParseResult
from . import tags

__all__ = ["WHITESPACE", "map_raw", "map_result", "strip_leading_break", "strip_trailing_break"]

WHITESPACE = " \t\r\n"


def strip_leading_break(text: str) -> str:
    """``text`` without one leading line break or whitespace character."""
    if text.startswith("\r\n"):
        return text[2:]
    return text[1:] if text[:1] in (" ", "\t", "\r", "\n") and text else text


def strip_trailing_break(text: str) -> str:
    """``text`` without one trailing line break or whitespace character."""
    if text.endswith("\r\n"):
        return text[:-2]
    return text[:-1] if text[-1:] in (" ", "\t", "\r", "\n") and text else text


def map_result(
    result: ParseResult,
    offset: int,
    id_position: str = "none",
    convert_args: Callable[[str], str] | None = None,
) -> ChatMessage:
    """Map a parse of ``prefill + output``; ``offset`` = len(prefill), to report positions in the output.
    ``id_position`` ("none", "before_args", "after_args") says when a call's id is settled."""
    return map_raw(result, offset, id_position, convert_args)[0]


def map_raw(
    result: ParseResult,
    offset: int,
    id_position: str = "none",
    convert_args: Callable[[str], str] | None = None,
) -> tuple[ChatMessage, str, str]:
    """The message, plus the untrimmed content and reasoning text (streaming continues from those)."""
    content: list[str] = []
    reasoning: list[str] = []
    calls: list[ToolCall] = []
    warnings: list[ParseWarning] = []
    after_call = False
    for node in result.nodes:
        tag = node.tag
        if tag == tags.UNPARSED:
            after_call = False  # it carries its own warning
        if after_call and tag == tags.CONTENT and node.text.strip(WHITESPACE):
            where = max(node.start - offset, 0)
            warnings.append(ParseWarning(where, "text after the tool calls was kept as content"))
            after_call = False  # one warning per stretch
        if tag == tags.CONTENT:
            content.append(node.text)
        elif tag == tags.REASONING:
            reasoning.append(node.text)
        elif tag == tags.UNPARSED:
            content.append(node.text)
            warnings.append(ParseWarning(max(node.start - offset, 0), f"{node.text!r} did not start a valid tool call"))
        elif tag == tags.TOOL:
            call = _tool_call(node, id_position, convert_args)
            if call is not None:
                calls.append(call)
                after_call = True
            elif not node.is_partial:  # a complete call without a usable name: never drop its text
                content.append(node.text)
                warnings.append(ParseWarning(max(node.start - offset, 0), "a tool call without a known name"))
    # Whitespace around the answer and the reasoning is template formatting (the newline before </think>, before a
    # tool call): trimmed. While streaming, trailing whitespace is thereby held back until text follows it.
    raw_content, raw_reasoning = "".join(content), "".join(reasoning)
    message = ChatMessage(
        "assistant", raw_content.strip(WHITESPACE), raw_reasoning.strip(WHITESPACE), tuple(calls), tuple(warnings)
    )
    return message, raw_content, raw_reasoning


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


def _tool_call(node: AstNode, id_position: str, convert_args: Callable[[str], str] | None) -> ToolCall | None:
    name = call_id = ""
    id_done = False
    raw_args: AstNode | None = None
    tagged: list[AstNode] = []
    for child in _children(node):
        if child.tag == tags.TOOL_NAME:
            name = child.text
        elif child.tag == tags.TOOL_ID:
            call_id = child.text.strip().strip('"')
            id_done = not child.is_partial
            # An id may contain the name (Kimi-K2's ``functions.NAME:0``).
            name = next((c.text for c in _children(child) if c.tag == tags.TOOL_NAME), name)
        elif child.tag == tags.TOOL_ARGS:
            raw_args = child
        elif child.tag == tags.TOOL_ARG:
            tagged.append(child)
    if not name:
        return None
    complete = not node.is_partial
    if not complete and id_position != "none" and not id_done:
        args_started = raw_args is not None or bool(tagged)
        if id_position == "after_args" or not args_started:
            return None  # the id may still come, and a stream sends it only once
    if raw_args is not None and convert_args is not None:
        arguments = convert_args(raw_args.text) if complete and not raw_args.is_partial else ""
    elif raw_args is not None:
        arguments = _json_arguments(raw_args)
    elif tagged:
        arguments = _tagged_arguments(tagged, complete)
    else:
        arguments = "{}" if complete else "{"
    return ToolCall(name, arguments, call_id)


def _json_arguments(node: AstNode) -> str:
    text = _without_cut_escape(node.text) if node.is_partial else node.text
    text = text.strip(WHITESPACE)
    if text.startswith('"') and not node.is_partial:
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
    """The template puts at most one line break around a value; trailing whitespace of an unfinished value is held
    back because it may be exactly that break."""
    text = strip_leading_break(text)
    if complete:
        return strip_trailing_break(text)
    return text.rstrip(WHITESPACE)


def _tagged_arguments(args: list[AstNode], complete: bool) -> str:
    parts: list[str] = []
    for arg in args:
        name = value = None
        for child in _children(arg):
            if child.tag == tags.TOOL_ARG_NAME:
                name = child
            elif child.tag in (tags.TOOL_ARG_STRING, tags.TOOL_ARG_VALUE):
                value = child
        if name is None or name.is_partial:
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
            parts.append(key + _json_value(_string_value(value.text, True)))
        else:
            parts.append(key)
        if not value_done:
            break
    text = "{" + ", ".join(parts)
    return text + "}" if complete else text


def _json_value(text: str) -> str:
    """A tagged non-string value: JSON text as written if it is JSON, else the text as a JSON string."""
    stripped = text.strip()
    try:
        json.loads(stripped)
        return stripped
    except ValueError:
        return json.dumps(text, ensure_ascii=False)
