"""MiniMax-M3 call arguments: the template's XML elements read back as JSON, typed by the tool's parameter schema.

The template's ``to_xml`` macro writes every argument as an element whose content is the value, each tag preceded
by the namespace token ``]<]minimax[>[``::

    ]<]minimax[>[<city>Paris]<]minimax[>[</city>]<]minimax[>[<days>3]<]minimax[>[</days>
    ]<]minimax[>[<tags>]<]minimax[>[<item>rain]<]minimax[>[</item>]<]minimax[>[</tags>

* strings are raw: quotes, ``<``, ``&`` and line breaks as they are, nothing escaped;
* numbers as Python prints them (``3``, ``21.5``, ``1e-05``); booleans as JSON (``true``/``false``);
* ``None`` is left out: an argument or object member set to None is not written, a None list item is an empty
  ``<item>`` (so an empty element of an untyped value is null as a list item, and "" as a member);
* an object is one child element per member (``<key>value</key>``, in the dict's order), an array one ``<item>``
  child per item; an empty object, array or string is an empty element.

So the text alone does not say whether ``42`` is a number or a string: the schema does. A string-typed value is
raw text up to its own closing tag (a ``<b>`` inside it is text); other values are JSON literals where they are
valid ones (``True``/``False``/``None`` too) and strings otherwise, as the generic tagged parser reads them; where
the schema says nothing, child elements make an object (an array when they are all ``<item>``). A value written
as JSON text (``<tags>["a"]</tags>``), an array written as repeated elements (``<tag>a</tag><tag>b</tag>``) and
arguments written as one JSON object are read too.

The namespace token is a special token, which a detokenizer may drop, so tags are read with or without it. When the
text has it at all, only a tag with the token opens child elements of an untyped value, and a string ends at the
first closing tag with the token: ``<b>`` and ``</city>`` in a value are then text.

Reading is iterative (any nesting depth). Text that is not elements where elements must be, or an element left
open, raises ``ValueError``: the mapper then keeps the arguments as written, with a warning.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from ...parser.calls.repairs import RepairedArguments
from ...peg.lowering.json_schema import resolve_local_ref
from .markers import NS

__all__ = ["arguments_to_json", "close_elements"]

_NS = re.escape(NS)
# An element's start and end tags; a name is anything up to ``>`` on one line that cannot be another tag.
_OPEN = re.compile(rf"(?:{_NS})?<([^<>/\s][^<>\n]*)>")
_CLOSE = re.compile(rf"(?:{_NS})?</([^<>\n]+)>")
_LAYOUT = re.compile(r"[ \t\r\n]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_SPACE = " \t\r\n"
_ITEM = "item"
_TRUE, _FALSE, _NULL = ("true", "True"), ("false", "False"), ("null", "None")
_ALL_KINDS = frozenset({"string", "integer", "number", "boolean", "null", "object", "array"})
_CONTAINERS = frozenset({"object", "array"})
_STRING_HINTS = ("pattern", "minLength", "maxLength", "format")
_NUMBER_HINTS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")


class _Number(str):
    """A JSON number kept as written (``1e-05`` stays ``1e-05``; Python's float would print ``Infinity`` for
    ``1e999``)."""


class _Repeated(list[Any]):
    """An array written as repeated elements (``<tag>a</tag><tag>b</tag>``): the next one extends it."""


def arguments_to_json(text: str, parameters: Mapping[str, Any]) -> str:
    """The arguments of one ``invoke`` (the text between its start and end tags) as JSON text, typed by the tool's
    ``parameters`` schema. Raises ``ValueError`` if ``text`` is not elements as the template writes them."""
    stripped = text.strip(_SPACE)
    if stripped.startswith("{"):  # the model wrote the arguments as JSON
        value = _json_container(stripped)
        if isinstance(value, dict):
            return _dump(value)
    reader = _Reader(text, _Schemas(parameters))
    found = _dump(reader.read())
    return RepairedArguments(found, reader.notes) if reader.notes else found


_TAG = re.compile(rf"(?:{_NS})?<(/?)([^<>/\s][^<>\n]*)>")


def close_elements(text: str) -> tuple[int, str]:
    """For the arguments of a call that broke off: how much of ``text`` to keep (up to an end tag that closes no
    open element, and without a tag cut off at the end) and the end tags that close the elements left open there,
    innermost first (with the namespace token where the text uses it)."""
    tokened = NS in text
    stack: list[tuple[str, int]] = []  # open elements: name, where the start tag starts
    last_end = 0
    childless = False  # the innermost open element has nothing but (maybe) text yet
    for tag in _TAG.finditer(text):
        if tokened and not tag.group(0).startswith(NS):
            continue  # (with the token, a tag without it is text of a value)
        name = tag.group(2).strip()
        if tag.group(1):
            if not stack or stack[-1][0] != name:
                keep = tag.start()  # an end tag that closes nothing open: the arguments broke here
                break
            stack.pop()
            childless = False
        else:
            stack.append((name, tag.start()))
            childless = True
        last_end = tag.end()
    else:
        keep = len(text)
        lt = text.rfind("<")
        if lt > text.rfind(">"):
            keep = lt - len(NS) if text.startswith(NS, lt - len(NS)) else lt  # a tag cut off
        keep = min(keep, next((len(text) - k for k in range(len(NS) - 1, 0, -1) if text.endswith(NS[:k])), keep))
        if stack and childless and not text[last_end:keep].strip(_SPACE):
            keep = stack.pop()[1]  # an element opened but empty when the text stopped: no value yet
    prefix = NS if tokened else ""
    return keep, "".join(f"{prefix}</{name}>" for name, _ in reversed(stack))


# --- schemas -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Schemas:
    """The tool's parameter schema, with its local ``$ref``s resolved on demand."""

    root: Mapping[str, Any]

    def resolve(self, schema: Any) -> Mapping[str, Any]:
        """``schema`` with ``$ref`` chains followed and ``allOf`` parts laid over it (a bounded number of times:
        a cycle or a broken reference reads as "anything")."""
        for _ in range(16):
            if not isinstance(schema, Mapping):
                return {}
            if isinstance(schema.get("$ref"), str):
                target = resolve_local_ref(self.root, schema["$ref"])
                rest = {k: v for k, v in schema.items() if k != "$ref"}
                schema = {**target, **rest} if isinstance(target, Mapping) else rest
                continue
            if isinstance(schema.get("allOf"), list):
                merged = {k: v for k, v in schema.items() if k != "allOf"}
                for part in schema["allOf"]:
                    if isinstance(part, Mapping):
                        merged = {**self.resolve(part), **merged}
                schema = merged
                continue
            return schema
        return {}

    def kinds(self, schema: Any) -> frozenset[str]:
        """The JSON types ``schema`` admits (every type when it does not say)."""
        schema = self.resolve(schema)
        found: set[str] = set()
        kind = schema.get("type")
        if isinstance(kind, str):
            found.add(kind)
        elif isinstance(kind, list):
            found.update(k for k in kind if isinstance(k, str))
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            if isinstance(branches, list):
                for branch in branches:
                    found |= self.kinds(branch)
        values = [schema["const"]] if "const" in schema else schema.get("enum")
        if isinstance(values, list):
            found.update(_kind_of(v) for v in values)
        if not found:
            found |= _implied_kinds(schema)
        if found and schema.get("nullable") is True:
            found.add("null")
        if "integer" in found:
            found.add("number")  # an integer-typed value written 3.0 is still a number
        return frozenset(found) if found else _ALL_KINDS

    def member(self, schema: Any, name: str) -> Any:
        """The schema of member ``name`` of an object (or of any object branch that declares it)."""
        extra: Any = {}
        for branch in self.branches(schema):
            props = branch.get("properties")
            if isinstance(props, Mapping) and name in props:
                return props[name]
            more = branch.get("additionalProperties")
            if isinstance(more, Mapping) and not extra:
                extra = more
        return extra

    def item(self, schema: Any) -> Any:
        """The schema of an array's items (of the first array branch that has one)."""
        for branch in self.branches(schema):
            items = branch.get("items")
            if isinstance(items, Mapping):
                return items
        return {}

    def branches(self, schema: Any) -> list[Mapping[str, Any]]:
        """``schema`` and its anyOf/oneOf branches, resolved."""
        schema = self.resolve(schema)
        found = [schema]
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            if isinstance(branches, list):
                found += [self.resolve(b) for b in branches]
        return found


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else "string"


def _implied_kinds(schema: Mapping[str, Any]) -> set[str]:
    if "properties" in schema or "additionalProperties" in schema:
        return {"object"}
    if "items" in schema or "prefixItems" in schema:
        return {"array"}
    if any(key in schema for key in _STRING_HINTS):
        return {"string"}
    if any(key in schema for key in _NUMBER_HINTS):
        return {"number"}
    return set()


# --- reading -----------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Frame:
    """An element whose content is child elements (the argument list itself has the name ``""``)."""

    name: str
    schema: Any
    members: list[tuple[str, Any]] = field(default_factory=list)


class _Reader:
    """Reads the elements of one argument list with an explicit stack of open elements."""

    def __init__(self, text: str, schemas: _Schemas) -> None:
        self.text = text
        self.schemas = schemas
        self.tokened = NS in text  # the namespace token is there: only tags with it open child elements
        self.notes: list[str] = []  # what was read although not written as the template writes it

    def read(self) -> Any:
        text = self.text
        stack = [_Frame("", self.schemas.root)]
        pos = 0
        while True:
            pos = _skip_layout(text, pos)
            frame = stack[-1]
            if pos == len(text):
                if len(stack) > 1:
                    _fail(f"element <{frame.name}> is not closed")
                return self._finish(frame, top=True)
            closing = _CLOSE.match(text, pos)
            if closing is not None:
                if len(stack) == 1 or closing.group(1).strip() != frame.name:
                    _fail(f"unexpected end tag at {pos}: {closing.group(0)!r}")
                stack.pop()
                stack[-1].members.append((frame.name, self._finish(frame)))
                pos = closing.end()
                continue
            opening = _OPEN.match(text, pos)
            if opening is None:
                _fail(f"text where an element should start, at {pos}: {text[pos : pos + 20]!r}")
            name = opening.group(1).strip()
            pos = opening.end()
            schema = self._child_schema(frame, name)
            if self._has_children(pos, schema):
                stack.append(_Frame(name, schema))
                continue
            end, after = self._content_end(pos, name, frame)
            frame.members.append((name, self._leaf(text[pos:end], schema, name)))
            pos = after

    def _child_schema(self, frame: _Frame, name: str) -> Any:
        kinds = self.schemas.kinds(frame.schema)
        if name == _ITEM and "array" in kinds and ("object" not in kinds or not self._declares(frame.schema, name)):
            return self.schemas.item(frame.schema)
        return self.schemas.member(frame.schema, name)

    def _declares(self, schema: Any, name: str) -> bool:
        return any(name in (b.get("properties") or {}) for b in self.schemas.branches(schema))

    def _has_children(self, pos: int, schema: Any) -> bool:
        """Whether the element starting at ``pos`` holds child elements (else its content is one value)."""
        kinds = self.schemas.kinds(schema)
        if not kinds & _CONTAINERS:
            return False
        at = _skip_layout(self.text, pos)
        if _CLOSE.match(self.text, at) is not None:
            return False  # empty: the value reads the empty content
        if self.tokened and "string" in kinds:  # (untyped too) a string may hold `<b>`: the token decides
            return self.text.startswith(NS, at) and _OPEN.match(self.text, at) is not None
        return _OPEN.match(self.text, at) is not None

    def _content_end(self, pos: int, name: str, frame: _Frame) -> tuple[int, int]:
        """Where the content of the element ``name`` (a child of ``frame``) opened before ``pos`` ends, and where its
        end tag ends. A model that dropped the end tag went on with the next member of ``frame``: the content then
        ends at that member's start tag (with the token, the first one before the end tag; without it, only where no
        end tag follows at all), noted as a repair."""
        text, tag = self.text, f"</{name}>"
        found: tuple[int, int] | None = None
        if self.tokened:
            at = text.find(NS + tag, pos)
            if at >= 0:
                found = at, at + len(NS) + len(tag)
        if found is None:
            at = text.find(tag, pos)
            if at >= 0:
                start = at - len(NS) if at - len(NS) >= pos and text.startswith(NS, at - len(NS)) else at
                found = start, at + len(tag)
        if found is None or self.tokened:
            sibling = self._next_member(pos, found[0] if found is not None else len(text), frame)
            if sibling is not None:
                at, member = sibling
                self.notes.append(f"element <{name}> has no end tag: its value was read up to <{member}>")
                return at, at
        if found is None and not frame.name:  # the last argument: its content ends with the call's
            self.notes.append(f"element <{name}> has no end tag: its value was read up to the end of the call")
            end = len(text.rstrip(_SPACE))
            return end, end
        if found is None:
            _fail(f"element <{name}> is not closed")
        return found

    def _next_member(self, pos: int, limit: int, frame: _Frame) -> tuple[int, str] | None:
        """The first start tag of a member of ``frame`` (a declared property, or an ``item`` of an array) between
        ``pos`` and ``limit``, and its name; with the token, only a tag written with it."""
        kinds = self.schemas.kinds(frame.schema)
        for opening in _OPEN.finditer(self.text, pos, limit):
            start = opening.start()
            tokened = self.text.startswith(NS, start)
            if self.tokened and not tokened:
                continue
            member = opening.group(1).strip()
            if (member == _ITEM and "array" in kinds) or self._declares(frame.schema, member):
                return start, member
        return None

    def _leaf(self, raw: str, schema: Any, name: str) -> Any:
        """One value written as text; an array-only schema takes it as one item of an array written as repeated
        elements. A value of none of the schema's types is kept as written, noted as a repair."""
        kinds = self.schemas.kinds(schema)
        if kinds == {"array"} and raw.strip(_SPACE) and not raw.strip(_SPACE).startswith("["):
            kinds = self.schemas.kinds(self.schemas.item(schema))
            value: Any = _Repeated([_scalar(raw, kinds, in_array=True)])
            found = value[0]
        else:
            value = found = _scalar(raw, kinds, name == _ITEM)
        if type(found) is str and "string" not in kinds:  # (an untyped value admits strings)
            wanted = " or ".join(sorted(kinds - {"number"} if "integer" in kinds else kinds))
            self.notes.append(f"the value {raw.strip(_SPACE)!r} of <{name}> is no {wanted}; it was kept as written")
        return value

    def _finish(self, frame: _Frame, top: bool = False) -> Any:
        """The value of a closed element: an object, or an array (its schema says so, or it says nothing and every
        child is an ``<item>``)."""
        kinds = self.schemas.kinds(frame.schema)
        names = [name for name, _ in frame.members]
        as_array = not top and "array" in kinds and ("object" not in kinds or (names and set(names) == {_ITEM}))
        if as_array:
            return [value for _, value in frame.members]
        found: dict[str, Any] = {}
        for name, value in frame.members:
            if name not in found:
                found[name] = value
            elif isinstance(found[name], _Repeated) and isinstance(value, _Repeated):
                found[name].extend(value)
            else:
                _fail(f"member {name!r} is written twice")
        return found


def _scalar(raw: str, kinds: frozenset[str], in_array: bool) -> Any:
    """A value written as text, read as the admitted ``kinds`` allow. A string-typed value keeps its text exactly;
    anything else is a JSON literal where it is one, else its text as a string (not what the schema asks for)."""
    text = raw.strip(_SPACE)
    if "string" in kinds and kinds != _ALL_KINDS:
        return raw
    if not raw:
        return _empty(kinds, in_array)
    if not text and kinds & _CONTAINERS and "string" not in kinds:
        return {} if "object" in kinds else []
    if text in _TRUE + _FALSE and "boolean" in kinds:
        return text in _TRUE
    if text in _NULL and "null" in kinds:
        return None
    if "number" in kinds and _NUMBER.fullmatch(text):
        return _Number(text)
    if text[:1] in "{[" and kinds & _CONTAINERS:
        value = _json_container(text)
        if value is not None and _kind_of(value) in kinds:
            return value
    return raw


def _empty(kinds: frozenset[str], in_array: bool) -> Any:
    """An empty element: an empty object or array where the schema asks for one (the template writes a None member
    by leaving the element out), null where it admits null; where it says nothing, null for a list item (how the
    template writes None there) and "" for a member, else ""."""
    if kinds == _ALL_KINDS:
        return None if in_array else ""
    if "object" in kinds:
        return {}
    if "array" in kinds:
        return []
    return None if "null" in kinds else ""


def _skip_layout(text: str, pos: int) -> int:
    """Past the whitespace between elements (layout, not data)."""
    match = _LAYOUT.match(text, pos)
    return match.end() if match is not None else pos


def _json_container(text: str) -> Any:
    """``text`` as a JSON object or array (numbers kept as written), or None if it is not one."""
    try:
        value = json.loads(text, parse_int=_Number, parse_float=_Number, parse_constant=_reject)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict | list) else None


def _reject(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def _fail(message: str) -> NoReturn:
    raise ValueError(f"not MiniMax-M3 argument elements: {message}")


def _dump(value: Any) -> str:
    """JSON text in the mapper's spacing (``{"a": 1, "b": [2, 3]}``), numbers as written."""
    if isinstance(value, _Number):
        return str.__str__(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if value is True or value is False or value is None:
        return json.dumps(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k, ensure_ascii=False)}: {_dump(v)}" for k, v in value.items()) + "}"
    return "[" + ", ".join(_dump(v) for v in value) + "]"
