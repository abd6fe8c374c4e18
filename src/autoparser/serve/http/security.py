"""What keeps the server safe to expose: the client's API key, the POST body's media type, the Host header of a
server bound to loopback (DNS rebinding), and the upstream's credentials kept out of every reply and log line.

:class:`Guard` is ASGI middleware that refuses a request before any route sees it: a foreign Host (400), a missing or
wrong key (401: sent as ``Authorization: Bearer KEY`` or Anthropic's ``x-api-key: KEY``), a POST whose body is not
``application/json`` (415) — in OpenAI's error format, or Anthropic's on the Messages API's paths. It never reads
the body, so a refused request costs nothing.

:func:`split_credentials` takes the password out of ``--upstream`` (``http://user:PASSWORD@host``) before the URL
reaches the upstream client, so that no error message, ``/health`` or log line can show it; the credentials travel
as an ``Authorization`` header instead. :class:`Scrubber` masks what is left to chance: an upstream that echoes the
key or the password in its error text (replies are scrubbed by :mod:`.access`, log records by
:func:`scrub_logs`).
"""

from __future__ import annotations

import base64
import hmac
import ipaddress
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from ..anthropic.errors import error_body, is_messages_path

__all__ = [
    "OPEN_PATHS",
    "Guard",
    "Scrubber",
    "UpstreamCredentials",
    "is_loopback",
    "mask_url",
    "scrub_logs",
    "split_credentials",
]

# Open without the API key, as vLLM leaves them: a load balancer's probes and Prometheus' scrapes carry no key
OPEN_PATHS = frozenset({"/health", "/health/live", "/metrics"})
MASK = "***"
_LOGGERS = (
    "autoparser",
    "autoparser.serve",
    "autoparser.serve.http.access",
    "uvicorn",
    "uvicorn.error",
    "uvicorn.access",
    "httpx",
    "httpx2",
    "httpcore",
    "httpcore2",
)


@dataclass(frozen=True)
class UpstreamCredentials:
    """``--upstream`` without its user and password (``url``), the header that carries them instead, and every
    secret a reply or a log line must never show."""

    url: str
    headers: dict[str, str]
    secrets: tuple[str, ...]


def split_credentials(url: str, api_key: str | None = None) -> UpstreamCredentials:
    """``url``'s user and password moved into a Basic ``Authorization`` header (which wins over the bearer
    ``api_key``, as httpx let URL credentials win before); both are secrets, so is the key."""
    parts = urlsplit(url)
    secrets = [api_key] if api_key else []
    if parts.username is None and parts.password is None:
        return UpstreamCredentials(url, {}, _forms(secrets))
    user, password = unquote(parts.username or ""), unquote(parts.password or "")
    host = parts.netloc.rpartition("@")[2]
    clean = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    if password:
        secrets.append(password)
    secrets.append(token)
    return UpstreamCredentials(clean, {"Authorization": f"Basic {token}"}, _forms(secrets))


def _forms(secrets: Iterable[str]) -> tuple[str, ...]:
    """Each secret as text may show it: as it is, percent-encoded, and escaped inside a JSON string."""
    found: list[str] = []
    for secret in secrets:
        for form in (secret, quote(secret, safe=""), json.dumps(secret)[1:-1]):
            if form and form not in found:
                found.append(form)
    return tuple(sorted(found, key=len, reverse=True))  # the longest first: a form that contains another


def mask_url(url: str) -> str:
    """``url`` with its password (and any user name) shown as ``***``; for what is printed at start-up."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, f"{MASK}@{host}", parts.path, parts.query, parts.fragment))


class Scrubber:
    """Masks the upstream's secrets in text and in reply bytes (each occurrence becomes ``***``)."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets = tuple(s for s in secrets if s)
        self._bytes = tuple(s.encode() for s in self.secrets)

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def text(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def bytes(self, data: bytes, *, keep_length: bool = False) -> bytes:
        """``data`` masked; with ``keep_length``, each secret becomes as many ``*`` (a reply whose
        Content-Length was already sent)."""
        for secret in self._bytes:
            if secret in data:
                data = data.replace(secret, b"*" * len(secret) if keep_length else MASK.encode())
        return data


class _ScrubFilter(logging.Filter):
    """Masks every registered secret in a log record: its message, its arguments and its traceback."""

    def __init__(self) -> None:
        super().__init__("autoparser-secrets")
        self.scrubber = Scrubber()

    def add(self, secrets: Iterable[str]) -> None:
        known = set(self.scrubber.secrets)
        self.scrubber = Scrubber(sorted(known.union(secrets), key=len, reverse=True))

    def filter(self, record: logging.LogRecord) -> bool:
        scrubber = self.scrubber
        if not scrubber:
            return True
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # arguments that do not fit the message: the handler reports it
            return True
        clean = scrubber.text(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrubber.text(record.exc_text)
        return True


_FILTER = _ScrubFilter()


def scrub_logs(secrets: Iterable[str]) -> None:
    """Mask ``secrets`` in every record of the server's loggers, uvicorn's and httpx's (a filter on each: records
    are filtered by the logger that made them, not by the ones they propagate to)."""
    secrets = tuple(secrets)
    if not secrets:
        return
    _FILTER.add(secrets)
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)


_LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, without port) is the loopback interface: ``localhost`` and its
    subdomains (RFC 6761: they never resolve elsewhere), 127.0.0.0/8 and ``::1``."""
    name = host.strip().strip("[]").rstrip(".").lower()
    if name in _LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _host_name(header: str) -> str:
    """The host of a Host header, without its port (``[::1]:8000`` → ``::1``)."""
    header = header.strip()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    name, colon, port = header.rpartition(":")
    return name if colon and port.isdigit() else header


def _reject(
    status: int,
    message: str,
    code: str | None,
    headers: list[tuple[bytes, bytes]] | None = None,
    *,
    anthropic: bool = False,
) -> Any:
    """The refusal, in OpenAI's error format or (``anthropic``) Anthropic's."""
    error = {"message": message, "type": "invalid_request_error", "param": None, "code": code}
    body = json.dumps(error_body(status, message) if anthropic else {"error": error}).encode()
    start_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]

    async def respond(send: Send) -> None:
        await send({"type": "http.response.start", "status": status, "headers": start_headers + (headers or [])})
        await send({"type": "http.response.body", "body": body})

    return respond


class Guard:
    """Refuses, before routing: a Host that is not loopback on a server bound to loopback (``check_host``, plus
    ``allowed_hosts``), a request without the key in ``Authorization: Bearer <api_key>`` or ``x-api-key: <api_key>``
    (compared in constant time; :data:`OPEN_PATHS` stay open), a POST whose ``Content-Type`` is not
    ``application/json``."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        api_key: str | None = None,
        check_host: bool = True,
        allowed_hosts: Iterable[str] = (),
    ) -> None:
        self.app = app
        self.key = api_key.encode() if api_key else None
        self.check_host = check_host
        self.allowed_hosts = frozenset(h.strip().lower().rstrip(".") for h in allowed_hosts if h.strip())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is not None:
            await refusal(send)
            return
        await self.app(scope, receive, send)

    def refusal(self, scope: Scope) -> Any:
        """What answers the request instead of the app (a coroutine function of ``send``), or None."""
        headers: dict[bytes, bytes] = {}
        for name, value in scope["headers"]:
            headers.setdefault(name.lower(), value)
        anthropic = is_messages_path(scope["path"])
        if self.check_host and b"host" in headers:
            host = _host_name(headers[b"host"].decode("latin-1"))
            if not is_loopback(host) and host.lower().rstrip(".") not in self.allowed_hosts:
                shown = json.dumps(host[:100])
                return _reject(
                    400,
                    f"Host {shown} is not served here: the server listens on loopback and answers only loopback "
                    "names (a guard against DNS rebinding; see --allowed-hosts)",
                    "invalid_host",
                    anthropic=anthropic,
                )
        if self.key is not None and scope["path"] not in OPEN_PATHS:
            given = _keys(headers)
            challenge = [(b"www-authenticate", b"Bearer")]
            if not given:
                if anthropic:
                    why = "x-api-key header is required (or Authorization: Bearer YOUR_KEY)"
                else:
                    why = (
                        "You didn't provide an API key. You need to provide your API key in an Authorization header "
                        "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
                    )
                return _reject(401, why, None, challenge, anthropic=anthropic)
            # every key sent is compared (in constant time), so which header holds it changes nothing
            if not any([hmac.compare_digest(key, self.key) for key in given]):
                why = "invalid x-api-key" if anthropic else "Incorrect API key provided."
                return _reject(401, why, "invalid_api_key", challenge, anthropic=anthropic)
        if scope["method"] == "POST":
            media = headers.get(b"content-type", b"").decode("latin-1").partition(";")[0].strip().lower()
            if media != "application/json":
                return _reject(
                    415,
                    f"the request body must be application/json, not {json.dumps(media[:100] or 'unstated')}",
                    "unsupported_media_type",
                    anthropic=anthropic,
                )
        return None


def _keys(headers: dict[bytes, bytes]) -> list[bytes]:
    """The API keys a request sends: a Bearer token (OpenAI's clients) and ``x-api-key`` (Anthropic's)."""
    keys = []
    scheme, _, token = headers.get(b"authorization", b"").strip().partition(b" ")
    if scheme.lower() == b"bearer" and token.strip():
        keys.append(token.strip())
    if headers.get(b"x-api-key", b"").strip():
        keys.append(headers[b"x-api-key"].strip())
    return keys
