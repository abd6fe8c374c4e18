"""Parsers for JSON-native tool calls: ``{"name": ..., "arguments": {...}}`` and its variants.

The call object is parsed member by member in any order, so the name can be reported as soon as it is
complete and the arguments streamed as raw JSON. Unknown members are tagged: the mapper warns about them, and
reads the arguments from them when the arguments member is missing (a damaged key). Recognised layouts (from the
analysis): name/arguments/id field names, a nested ``function`` object, the function name as the key
(``{"get_weather": {...}}``), and an array around the calls.

A call to a tool the request does not declare is read as well (:mod:`.undeclared`), its name being any JSON string
without escapes. Without markers around the calls (Llama 3.x writes bare objects), any JSON object in the answer
could look like such a call, so there an undeclared call must be exactly the name and arguments members.
"""

from __future__ import annotations

from .. import peg as p
from ..analysis.model import ToolFormat
from . import tags
from .request import ToolSpec
from .undeclared import not_declared

__all__ = ["field_key", "json_call", "json_calls", "member_key"]


def field_key(field: str) -> str:
    """The JSON key of an analysed field name (``function.name`` is the key ``name`` inside ``function``)."""
    return field.rsplit(".", 1)[-1]


def member_key(field: str) -> p.Parser:
    """``"key":`` with optional whitespace, for an analysed field name."""
    return p.literal(f'"{field_key(field)}"') + p.space() + ":" + p.space()


def _tool_name(tools: tuple[ToolSpec, ...], undeclared: p.Parser | None) -> p.Parser:
    """A quoted tool name, reported only once its closing quote shows it is not a prefix of a longer name.
    ``undeclared``: the zero-width marker for a name the request does not declare (None: declared names only)."""
    alternatives = []
    if tools:
        names = p.choice(*(p.literal(t.name) + p.peek('"') for t in sorted(tools, key=lambda t: -len(t.name))))
        alternatives.append(p.atomic(p.literal('"') + p.tag(tags.TOOL_NAME, names) + '"'))
    if undeclared is not None:
        name = p.tag(tags.TOOL_NAME, p.chars('[^"\\\\\\n]'))
        alternatives.append(undeclared + p.atomic(p.literal('"') + not_declared(tools, p.literal('"')) + name + '"'))
    return p.choice(*alternatives)


def _members(member: p.Parser) -> p.Parser:
    sep = p.space() + "," + p.space()
    return "{" + p.space() + p.optional(member + p.zero_or_more(sep + member)) + p.space() + "}"


def json_call(fmt: ToolFormat, tools: tuple[ToolSpec, ...], undeclared: p.Parser | None = None) -> p.Parser:
    """One call object (untagged: the caller tags the call, together with its per-call markers). ``undeclared``:
    the marker of a call to a tool not in ``tools`` (None: such a call does not parse)."""
    if fmt.fun_name_is_key:
        body = "{" + p.space() + _tool_name(tools, undeclared) + p.commit() + p.space() + ":" + p.space()
        return body + p.tag(tags.TOOL_ARGS, p.json()) + p.space() + "}"
    known: list[p.Parser] = []
    if fmt.name_field:
        # A known tool's name commits the call: a stream announces it, and a complete parse keeps it even if the
        # rest turns out malformed (see assemble.py).
        known.append(member_key(fmt.name_field) + _tool_name(tools, undeclared) + p.commit())
    if fmt.args_field:
        known.append(member_key(fmt.args_field) + p.tag(tags.TOOL_ARGS, p.json()))
    for field in (fmt.id_field, fmt.gen_id_field):
        if field:
            known.append(member_key(field) + p.tag(tags.TOOL_ID, p.json()))
    # Members the layout does not use are skipped, but never the name member: an unknown tool must fail the call.
    name_key = p.literal(f'"{field_key(fmt.name_field)}"') if fmt.name_field else p.negate(p.eps())
    other = p.tag(tags.TOOL_UNKNOWN, p.negate(name_key) + p.json_string() + p.space() + ":" + p.space() + p.json())
    inner = p.choice(*known, other)
    nested_key = next((f.split(".", 1)[0] for f in (fmt.name_field, fmt.args_field) if "." in f), "")
    # A call is a JSON object: where this parse already found the object malformed, skip reading its members.
    guard = p.json_not_known_invalid("object")
    if nested_key:
        # {"type": "function", "function": {"name": ..., "arguments": ...}, "id": ...}
        outer = p.choice(member_key(nested_key) + _members(inner), *known, other)
        return guard + _members(outer)
    return guard + _members(inner)


def json_calls(
    fmt: ToolFormat, tools: tuple[ToolSpec, ...], undeclared: p.Parser | None = None, bare: bool = False
) -> p.Parser:
    """One or more calls (each tagged TOOL), in an array if the template wraps them in one. ``bare``: no marker
    introduces the calls, so an undeclared call must have exactly the call's shape (see the module docstring)."""
    shape = _call_shape(fmt) if bare else None
    if bare and undeclared is not None and shape is not None:
        single = p.choice(json_call(fmt, tools), shape + json_call(fmt, (), undeclared))
    else:
        single = json_call(fmt, tools, None if bare else undeclared)
    call = p.recover(p.tag(tags.TOOL, single))
    sep = p.space() + "," + p.space()
    if fmt.tools_array_wrapped:
        return p.recover("[" + p.space() + call + p.zero_or_more(sep + call) + p.space() + "]")
    return call + p.zero_or_more(sep + call)


def _call_shape(fmt: ToolFormat) -> p.Parser | None:
    """A lookahead for ``{"name": "...", "arguments": {...}}`` (either order, nothing else), or None where the
    layout is not that simple (nested function object, name as key)."""
    if fmt.fun_name_is_key or not fmt.name_field or not fmt.args_field or "." in fmt.name_field + fmt.args_field:
        return None
    name = member_key(fmt.name_field) + p.json_string()
    args = member_key(fmt.args_field) + p.json_object()
    sep = p.space() + "," + p.space()
    return p.peek("{" + p.space() + p.choice(name + sep + args, args + sep + name) + p.space() + "}")
