"""Parsers for JSON-native tool calls: ``{"name": ..., "arguments": {...}}`` and its variants.

The call object is parsed member by member in any order, so the name can be reported as soon as it is
complete and the arguments streamed as raw JSON. Unknown members are tagged: the mapper warns about them, and
reads the arguments from them when the arguments member is missing (a damaged key). Recognised layouts (from the
analysis): name/arguments/id field names, a nested ``function`` object, the function name as the key
(``{"get_weather": {...}}``), and an array around the calls.

The envelope the template writes stays the primary shape. Models also write the envelope of another family, and
those variants carry the same information, so they are read without a warning (docs/parsing.md):

* the arguments under ``"arguments"`` or ``"parameters"`` (OpenAI's and Llama's / Cohere's name), the name under
  ``"name"`` or ``"tool_name"``, whichever the template uses;
* OpenAI's own shape, ``{"type": "function", "function": {"name": ..., "arguments": ...}}``;
* members in any order, ids before or after the arguments, a missing id;
* one call object, several objects one after another (separated by ``,``, ``;``, whitespace or nothing), or a JSON
  array of them, whichever the template writes.

Other keys for the arguments (``"args"``, ``"input"``, a damaged ``"Arguments"``) are a repair: the mapper reads them
with a warning once the call is complete.

A call to a tool the request does not declare is read as well (:mod:`.undeclared`), its name being any JSON string
without escapes. Without markers around the calls (Llama 3.x writes bare objects), any JSON object in the answer
could look like such a call, so there an undeclared call must be exactly the name and arguments members.
"""

from __future__ import annotations

from ... import peg as p
from ...analysis.model import ToolFormat
from .. import tags
from ..request import ToolSpec
from .resync import JSON, recover_call
from .undeclared import not_declared

__all__ = [
    "ARGUMENT_KEYS",
    "NAME_KEYS",
    "SPECIAL_TOKEN",
    "field_key",
    "json_call",
    "json_calls",
    "member_key",
]

# Keys read as the arguments / the name without a warning, besides the template's own: the names the tool-calling
# ecosystem uses (OpenAI writes "arguments", Llama and Cohere "parameters"; Cohere names the tool "tool_name").
ARGUMENT_KEYS = ("arguments", "parameters")
NAME_KEYS = ("name", "tool_name")
FUNCTION_KEY = "function"  # OpenAI's nested call object

# A special token such as Llama 3's ``<|python_tag|>``, which models write before bare JSON calls.
SPECIAL_TOKEN = p.literal("<|") + p.chars("[a-z_]") + p.literal("|>")


def field_key(field: str) -> str:
    """The JSON key of an analysed field name (``function.name`` is the key ``name`` inside ``function``)."""
    return field.rsplit(".", 1)[-1]


def member_key(field: str) -> p.Parser:
    """``"key":`` with optional whitespace, for an analysed field name."""
    return _keys_then_colon((field_key(field),))


def _keys_then_colon(keys: tuple[str, ...]) -> p.Parser:
    quoted = [p.literal(f'"{key}"') for key in keys]
    return (quoted[0] if len(quoted) == 1 else p.choice(*quoted)) + p.space() + ":" + p.space()


def _with_aliases(field: str, aliases: tuple[str, ...]) -> tuple[str, ...]:
    """The template's key first, then the aliases (a nested layout keeps only its own key)."""
    if not field:
        return ()
    key = field_key(field)
    return (key,) if "." in field else (key, *(a for a in aliases if a != key))


def _tool_name(tools: tuple[ToolSpec, ...], undeclared: p.Parser | None = None) -> p.Parser:
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


def json_call(
    fmt: ToolFormat, tools: tuple[ToolSpec, ...], *, opening: str = "any", undeclared: p.Parser | None = None
) -> p.Parser:
    """One call object (untagged: the caller tags the call, together with its per-call markers).

    ``opening`` is how strictly the object must open. "any": members in any order. "name": the name member first
    (a shape the template does not write, such as one object where it writes a list: an object without a name,
    such as a JSON answer in a fence, is then no call at all). "unmarked": the object was found without the markers
    around it, so it is read only where that is decided within a few characters and unambiguous: it opens with the
    members the template writes before the arguments (the name of a declared tool), and the arguments member
    commits it (a bare ``{"name": "get_weather"}`` in text is no call). ``undeclared``: the marker of a call to a
    tool not in ``tools`` (None: such a call does not parse)."""
    if fmt.fun_name_is_key:
        body = "{" + p.space() + _tool_name(tools, undeclared) + p.commit() + p.space() + ":" + p.space()
        return body + p.tag(tags.TOOL_ARGS, p.json(canonical=True)) + p.space() + "}"
    name_keys = _with_aliases(fmt.name_field, NAME_KEYS)
    args_keys = _with_aliases(fmt.args_field, ARGUMENT_KEYS)
    members: dict[str, p.Parser] = {}  # by the template's field name, without the commit
    if name_keys:
        members[fmt.name_field] = _keys_then_colon(name_keys) + _tool_name(tools, undeclared)
    for field in (fmt.id_field, fmt.gen_id_field):
        if field:
            members[field] = member_key(field) + p.tag(tags.TOOL_ID, p.json())
    arguments = p.tag(tags.TOOL_ARGS, p.json(canonical=True))
    known: list[p.Parser] = []
    if name_keys:
        # A known tool's name commits the call: a stream announces it, and a complete parse keeps it even if the
        # rest turns out malformed (see assemble.py).
        known.append(members[fmt.name_field] + p.commit())
    if args_keys:
        known.append(_keys_then_colon(args_keys) + arguments)
    known += [member for field, member in members.items() if field != fmt.name_field]
    # Members the layout does not use are skipped, but never a name member: an unknown tool must fail the call.
    not_name = p.negate(p.choice(*(p.literal(f'"{key}"') for key in name_keys))) if name_keys else p.eps()
    other = p.tag(tags.TOOL_UNKNOWN, not_name + p.json_string() + p.space() + ":" + p.space() + p.json())
    inner = p.choice(*known, other)
    nested_key = next((f.split(".", 1)[0] for f in (fmt.name_field, fmt.args_field) if "." in f), "")
    # A call is a JSON object: where this parse already found the object malformed, skip reading its members.
    guard = p.json_not_known_invalid("object")
    sep = p.space() + "," + p.space()
    if opening != "any" and name_keys and not nested_key:
        # The template's members up to its name: the name is required, the others (an id) may be left out.
        leading = _leading_fields(fmt)
        head = p.sequence(*(p.optional(members[f] + sep) for f in leading[: leading.index(fmt.name_field)]))
        if opening == "unmarked" and args_keys:
            after = leading[leading.index(fmt.name_field) + 1 :]
            head = head + members[fmt.name_field] + sep + p.sequence(*(p.optional(members[f] + sep) for f in after))
            body = head + _keys_then_colon(args_keys) + p.commit() + arguments + p.zero_or_more(sep + inner)
        else:
            body = head + known[0] + p.zero_or_more(sep + inner)
        return guard + "{" + p.space() + body + p.space() + "}"
    # {"type": "function", "function": {"name": ..., "arguments": ...}, "id": ...}: the template's nesting, or
    # OpenAI's where the template writes the members flat.
    outer = p.choice(_keys_then_colon((nested_key or FUNCTION_KEY,)) + _members(inner), *known, other)
    return guard + _members(outer)


def _leading_fields(fmt: ToolFormat) -> list[str]:
    """The fields the template writes before the arguments, the name among them (just the name if unknown)."""
    order = list(fmt.parameter_order)
    if fmt.args_field in order and fmt.name_field in order[: order.index(fmt.args_field)]:
        known = (fmt.name_field, fmt.id_field, fmt.gen_id_field)
        return [f for f in order[: order.index(fmt.args_field)] if f and f in known]
    return [fmt.name_field]


def json_calls(
    fmt: ToolFormat,
    tools: tuple[ToolSpec, ...],
    *,
    opener: p.Parser | None = None,
    unmarked: bool = False,
    missing: str = "",
    undeclared: p.Parser | None = None,
    bare: bool = False,
    rest: tuple[str, ...] | None = None,
) -> p.Parser:
    """One or more calls (each tagged TOOL): a JSON array of call objects or call objects one after another, the
    template's shape tried first. In the other shape each object must open with its name (see :func:`json_call`).

    ``rest``: where the rest of a call that broke ends (:mod:`.resync`: these markers, or the brace closing the
    call object); None: it is not skipped.
    ``opener``: a token a model may write before each call or the array (Llama 3's ``<|python_tag|>``), consumed.
    ``unmarked``: the calls were found without their markers (see :func:`json_call`).
    ``missing``: the marker these calls were read without (each call records it, for a warning).
    ``undeclared``: the marker of calls to tools the request does not declare (None: not read). ``bare``: no marker
    introduces the calls, so an undeclared call must have exactly the call's shape (see the module docstring)."""
    shape = _call_shape(fmt) if bare and undeclared is not None else None

    def call(opening: str) -> p.Parser:
        kind = "unmarked" if unmarked else opening
        if bare and undeclared is not None:
            body = json_call(fmt, tools, opening=kind)
            if shape is not None:
                body = p.choice(body, shape + json_call(fmt, (), opening=kind, undeclared=undeclared))
        else:
            body = json_call(fmt, tools, opening=kind, undeclared=undeclared)
        if missing:
            body = p.tag(tags.missing(missing), p.eps()) + body
        if rest is not None:
            return recover_call(p.tag(tags.TOOL, body), rest, balanced=JSON)
        return p.recover(p.tag(tags.TOOL, body))

    in_list, one_by_one = (call("any"), call("name")) if fmt.tools_array_wrapped else (call("name"), call("any"))
    lead = p.optional(opener + p.space()) if opener is not None else p.eps()
    comma = p.space() + "," + p.space()
    listed = p.recover(lead + "[" + p.space() + in_list + p.zero_or_more(comma + in_list) + p.space() + "]")
    between = p.space() + p.optional(p.choice(",", ";")) + p.space() + lead
    objects = lead + one_by_one + p.zero_or_more(between + p.peek("{") + one_by_one)
    return p.choice(listed, objects) if fmt.tools_array_wrapped else p.choice(objects, listed)


def _call_shape(fmt: ToolFormat) -> p.Parser | None:
    """A lookahead for ``{"name": "...", "arguments": {...}}`` (either order, and the template's id member before or
    after them where it writes one; nothing else; the keys as :func:`json_call` reads them), or None where the
    layout is not that simple (nested function object, name as key)."""
    if fmt.fun_name_is_key or not fmt.name_field or not fmt.args_field or "." in fmt.name_field + fmt.args_field:
        return None
    name = _keys_then_colon(_with_aliases(fmt.name_field, NAME_KEYS)) + p.json_string()
    args = _keys_then_colon(_with_aliases(fmt.args_field, ARGUMENT_KEYS)) + p.json_object()
    sep = p.space() + "," + p.space()
    members = p.choice(name + sep + args, args + sep + name)
    if fmt.id_field and "." not in fmt.id_field:  # the id the template writes with each call (cogito's `"id"`)
        call_id = _keys_then_colon((fmt.id_field,)) + p.json_string()
        members = p.optional(call_id + sep) + members + p.optional(sep + call_id)
    return p.peek("{" + p.space() + members + p.space() + "}")
