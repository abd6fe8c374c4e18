"""Signatures of thinking blocks: what lets the server tell, when a conversation comes back, that a thinking block
is the reasoning its model wrote and not text a client put there.

Anthropic signs each thinking block and refuses a conversation whose thinking was altered. Here a signature is
HMAC-SHA256 of the block's text under the server's key (base64): stable — the same reasoning gets the same
signature, streamed or not, on every worker — and checkable without keeping anything per conversation.

The key is ``ServeConfig.signature_key`` (``--signature-key``, ``$AUTOPARSER_SIGNATURE_KEY``) or, without one, 32
random bytes drawn once when the app is made: before ``--workers`` fork, so every worker shares it, but a restart
or another server process has another, and the signatures it made no longer verify (set the key where that
matters). A block whose signature does not verify is left out of the prompt, with a note in the reply
(:mod:`.request`): the model is never shown reasoning it did not write, and a conversation that outlived the key
goes on without its old thinking rather than failing.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

__all__ = ["Signer"]

_DOMAIN = b"autoparser thinking signature v1\0"  # a MAC made for this use only


class Signer:
    """Signs and checks thinking text under one key."""

    __slots__ = ("_key",)

    def __init__(self, key: bytes) -> None:
        if not key:
            raise ValueError("a signature key must not be empty")
        self._key = key

    @classmethod
    def of(cls, key: str | None) -> Signer:
        """The signer of a configured key (its UTF-8 bytes), or of a random one drawn now."""
        return cls(key.encode() if key else secrets.token_bytes(32))

    def sign(self, thinking: str) -> str:
        digest = hmac.new(self._key, _DOMAIN + thinking.encode("utf-8", "surrogatepass"), hashlib.sha256).digest()
        return base64.b64encode(digest).decode("ascii")

    def verify(self, thinking: str, signature: object) -> bool:
        """Whether ``signature`` is this server's for ``thinking`` (compared in constant time)."""
        if not isinstance(signature, str) or not signature:
            return False
        return hmac.compare_digest(self.sign(thinking).encode(), signature.encode("utf-8", "replace"))
