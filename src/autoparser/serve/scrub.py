"""Credentials kept out of what the server shows: the upstream URL's password and the upstream API key.

An engine's error text may echo the request's ``Authorization`` header or the URL it was called on, and httpx's own
messages may hold the URL: every text that reaches a client or a log line passes through :meth:`Secrets.scrub`
first, and URLs are shown by :func:`mask_url`. Kept small and free of the rest of the server so that any code
(errors, health, logs) can reuse it.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit, urlunsplit

__all__ = ["MASK", "Secrets", "mask_url"]

MASK = "***"


def mask_url(url: str) -> str:
    """``url`` with its password (if any) replaced by :data:`MASK`; the user name stays (it says which account)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:{MASK}@{host}"))


@dataclass(frozen=True)
class Secrets:
    """The texts never to show, in every form they may take in a message (as given, percent-encoded, decoded)."""

    values: tuple[str, ...] = ()

    @classmethod
    def of(cls, url: str = "", api_key: str | None = None) -> Secrets:
        """The secrets of an upstream reached at ``url`` with ``api_key``."""
        found: list[str] = []
        try:
            password = urlsplit(url).password
        except ValueError:
            password = None
        for secret in (password, api_key):
            if secret:
                found += [secret, unquote(secret), quote(secret, safe="")]
        # longest first: a form that holds another is replaced whole
        return cls(tuple(sorted({s for s in found if s}, key=len, reverse=True)))

    def scrub(self, text: str) -> str:
        """``text`` with every secret replaced by :data:`MASK`."""
        for secret in self.values:
            if secret in text:
                text = text.replace(secret, MASK)
        return text
