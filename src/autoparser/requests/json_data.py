"""Request data that prints as JSON: what a template shows of a tool or an argument object is never a Python repr.

Templates are written against Python dicts and lists, and some print them as text: Hammer 2.1 and Apriel write their
tool list with ``{{ tools|string }}`` / ``{{ tool|string }}``, others print a call's ``arguments`` with ``{{ ... }}``.
Under transformers those come out as Python reprs — ``[{'type': 'function', 'function': {'name': ...`` with ``None``
and ``True`` — which no model was trained to read: the request was JSON, and so was every tool list the model saw in
training. The request's data therefore reaches the template as :class:`JsonDict` / :class:`JsonList`, a dict and a
list in every respect (iteration, ``items()``, ``tojson``, ``is mapping``) except that their text is their JSON.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["JsonDict", "JsonList", "as_json_data"]


class JsonDict(dict[str, Any]):
    """A dict whose ``str()`` (what a template prints of it) is its JSON, and so its ``repr()`` (what a plain list
    holding it prints)."""

    __slots__ = ()

    def __str__(self) -> str:
        return json.dumps(self, ensure_ascii=False, default=str)

    __repr__ = __str__


class JsonList(list[Any]):
    """A list whose ``str()`` and ``repr()`` are its JSON."""

    __slots__ = ()

    def __str__(self) -> str:
        return json.dumps(self, ensure_ascii=False, default=str)

    __repr__ = __str__


def as_json_data(value: Any) -> Any:
    """``value`` with every dict and list in it (recursively) made a :class:`JsonDict` / :class:`JsonList` (a copy:
    the client's objects are never changed). Other values stay as they are."""
    if isinstance(value, dict):
        return JsonDict({key: as_json_data(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return JsonList(as_json_data(item) for item in value)
    return value
