"""Client call ids mapped into the format a template accepts, the same way in a call and in its result.

Mistral's templates raise on any call id but nine alphanumerics, so a conversation whose ids were made by another
system (OpenAI's ``call_...``, Anthropic's ``toolu_...``, a UUID) cannot be rendered as sent. A template that renders
a call's id in place of its name (Kimi-K2's ``functions.NAME:INDEX``) renders any id, but a foreign one leaves the
model without the name of the function it called: such ids become ``functions.NAME:INDEX``. The mapping is a
function of the id alone — a hash, not a counter — so every turn of a conversation renders the same history the
same way (prompt caches keep working) and a tool result finds its call even when they arrive in different requests.
"""

from __future__ import annotations

import hashlib
import re
import string

from ..analysis.calls.call_ids import NAMED_ID_PREFIX

__all__ = ["IdMap", "accepts"]

_ALNUM = string.ascii_letters + string.digits
_PATTERNS = {"alnum9": re.compile(r"[A-Za-z0-9]{9}"), "named": re.compile(re.escape(NAMED_ID_PREFIX) + r".+:\d+")}


def accepts(id_format: str, call_id: str) -> bool:
    """Whether a template with ``id_format`` renders ``call_id`` as it is."""
    pattern = _PATTERNS.get(id_format)
    return pattern is None or pattern.fullmatch(call_id) is not None


def _alnum9(call_id: str, salt: int) -> str:
    digest = int.from_bytes(hashlib.sha256(f"{salt}:{call_id}".encode()).digest()[:16], "big")
    chars = []
    for _ in range(9):
        digest, r = divmod(digest, 62)
        chars.append(_ALNUM[r])
    return "".join(chars)


class IdMap:
    """The ids of one conversation: an id the template accepts stays, any other gets a stable stand-in that no
    other id of the conversation maps to."""

    __slots__ = ("_calls", "_format", "_mapped", "_taken")

    def __init__(self, id_format: str) -> None:
        self._format = id_format
        self._mapped: dict[str, str] = {}
        self._taken: dict[str, str] = {}  # stand-in -> the id it stands for
        self._calls = 0  # calls seen so far: the INDEX of a named id

    def map(self, call_id: str, name: str | None = None) -> str:
        """The id to render for ``call_id``: a call passes its function's ``name`` (a named id needs it), a tool
        result only the id (it finds the call's stand-in; a result whose call is not in the conversation keeps
        its id)."""
        if name is not None:
            self._calls += 1
        if accepts(self._format, call_id):
            return call_id
        if call_id in self._mapped:
            return self._mapped[call_id]
        if self._format == "named":
            if name is None:
                return call_id
            new = f"{NAMED_ID_PREFIX}{name}:{self._calls - 1}"
            self._mapped[call_id] = new
            self._taken[new] = call_id
            return new
        salt = 0
        new = _alnum9(call_id, salt)
        while self._taken.get(new, call_id) != call_id:  # another id already has it: try the next salt
            salt += 1
            new = _alnum9(call_id, salt)
        self._mapped[call_id] = new
        self._taken[new] = call_id
        return new
