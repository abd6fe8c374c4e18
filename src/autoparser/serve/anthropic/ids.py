"""Tool-use ids: Anthropic's clients expect ``toolu_`` ids, while the template must see, in the next turn, the id the
model wrote (Mistral's nine alphanumerics, Kimi's ``functions.NAME:INDEX``) or the one the parser made for it.

A call's id travels as ``toolu_ap_`` followed by the id itself in unpadded base64url (letters, digits, ``-`` and
``_``: what Anthropic's ids are made of), and decodes back when the client returns it in a ``tool_use`` or a
``tool_result`` block. Nothing is kept on the server, so it works across requests, workers and restarts. An id of
another form (Anthropic's own ``toolu_01...``, a client's) is passed on as it is; the request normalisation maps it
to one the template accepts, the same way in the call and its result.
"""

from __future__ import annotations

import base64
import binascii

__all__ = ["PREFIX", "model_id", "wire_id"]

PREFIX = "toolu_ap_"


def wire_id(call_id: str) -> str:
    """The ``toolu_`` id a client gets for the call id ``call_id``."""
    return PREFIX + base64.urlsafe_b64encode(call_id.encode()).rstrip(b"=").decode("ascii")


def model_id(tool_use_id: str) -> str:
    """The call id behind a ``toolu_`` id this server made; any other id as it is."""
    if not tool_use_id.startswith(PREFIX):
        return tool_use_id
    code = tool_use_id[len(PREFIX) :]
    try:
        raw = base64.urlsafe_b64decode(code + "=" * (-len(code) % 4))
        text = raw.decode()
    except (binascii.Error, ValueError):
        return tool_use_id
    if not text or not text.isprintable() or wire_id(text) != tool_use_id:  # not one of ours after all
        return tool_use_id
    return text
