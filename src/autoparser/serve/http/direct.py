"""A streamed upstream reply read straight off its connection: one ``POST`` on a connection of its own, the response
parsed by httptools (llhttp, C), the body handed over a whole socket read at a time.

Why not httpx here, as everywhere else: an engine sends each server-sent event as an HTTP chunk of its own, and
httpx (h11, then five generator layers) hands them over one at a time — about 20 µs of Python per event, two thirds
of what the server spent per streamed token (bench/serve_bench.py). Here every chunk of a read is parsed in C and the
reader wakes once per read, however many events it brought.

What it does not do, and when httpx streams instead (:func:`direct_streams`): proxies (an upstream reached through
``HTTP(S)_PROXY``/``ALL_PROXY`` goes through httpx) and HTTP/2. Each streamed reply has its own connection, as
llama.cpp's ``/completion`` replies cut off at their last event need anyway (``Connection: close`` leaves the closing,
and its ``TIME_WAIT``, to the upstream); whole replies keep theirs open for the next one (:mod:`.pool`). TLS is
httpx's own context (certifi, ``SSL_CERT_FILE``).
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.request
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import ParseResult, urlparse

import httptools

from .pool import ConnectionPool, PoolKey

__all__ = ["DirectStream", "DirectStreamError", "direct_streams"]

_HIGH_WATER = 1 << 20  # bytes of body held unread before the upstream is paused (a slow client slows its upstream)
_ERROR_BODY_LIMIT = 64 * 1024  # what is kept of an error reply's body


class DirectStreamError(Exception):
    """The connection could not be made (``kind`` ``unreachable``), timed out (``timeout``), broke or answered
    something that is not HTTP (``broken``)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


def direct_streams(url: str) -> bool:
    """Whether a streamed reply from ``url`` can be read directly: plain ``http``/``https`` that no proxy variable
    of the environment applies to."""
    parts = urlparse(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    proxies = urllib.request.getproxies_environment()
    if not (proxies.get(parts.scheme) or proxies.get("all")):
        return True
    return bool(urllib.request.proxy_bypass_environment(parts.hostname, proxies))


class _Reader(asyncio.Protocol):
    """The connection's protocol: feeds llhttp, keeps the status, headers and body bytes, wakes the reader."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.head: asyncio.Future[None] = loop.create_future()
        self.status = 0
        self.headers: dict[str, str] = {}
        self.body: list[bytes] = []
        self.held = 0
        self.paused = False
        self.complete = False
        self.failure: DirectStreamError | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.since = 0.0  # when the reader began its current wait (loop time)
        self.timer: asyncio.TimerHandle | None = None  # the read timeout's check, armed once, not per wait
        self.received = False  # whether any byte of the reply came (a reused connection that closes before: retry)
        self.keep_alive = False  # whether the upstream keeps the connection open after this reply

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # (uvloop's transports are not asyncio.Transport)

    def data_received(self, data: bytes) -> None:
        self.received = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail("upgraded the connection")
        except httptools.HttpParserError as err:
            self._fail(f"answered something that is not HTTP ({err})")
        if self.held > _HIGH_WATER and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.complete and self.failure is None:
            if self.head.done() and not self._delimited():
                self.complete = True  # a body that runs to the end of the connection: this is its end
            else:
                self._fail(f"closed the connection{f': {exc}' if exc else ''}")
        self._wake()

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        if not self.head.done():
            self.head.set_result(None)

    def on_body(self, body: bytes) -> None:
        self.body.append(body)
        self.held += len(body)

    def on_message_complete(self) -> None:
        self.complete = True
        self.keep_alive = self.parser.should_keep_alive()  # (llhttp forgets it once the message is over)

    # the reader's side
    def _delimited(self) -> bool:
        return "content-length" in self.headers or "chunked" in self.headers.get("transfer-encoding", "").lower()

    def _fail(self, why: str) -> None:
        if self.failure is None:
            self.failure = DirectStreamError(f"RemoteProtocolError: {why}", "broken")
        if not self.head.done():
            self.head.set_exception(self.failure)
        if self.transport is not None:
            self.transport.abort()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def take(self) -> bytes:
        data = b"".join(self.body) if len(self.body) != 1 else self.body[0]
        self.body.clear()
        self.held = 0
        if self.paused and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()
        return data

    async def wait(self, timeout: float | None) -> None:
        """Until data, the end or a failure comes; :class:`DirectStreamError` (``timeout``) when nothing came for
        ``timeout`` seconds of waiting. The timeout is one timer for the whole reply, not one per wait: a wait only
        notes when it began, and the timer, when it fires, either fails the wait that has lasted ``timeout`` or is
        set again for the current wait's deadline (a timer made and cancelled for every token costs more than the
        token's own work at an engine's pace, and a cancelled timer makes the event loop turn once more)."""
        loop = self.loop
        waiter = self.waiter = loop.create_future()
        if timeout is not None:
            self.since = loop.time()
            if self.timer is None:
                self.timer = loop.call_at(self.since + timeout, self._expire, timeout)
        try:
            await waiter
        finally:
            self.waiter = None

    def _expire(self, timeout: float) -> None:
        self.timer = None
        waiter = self.waiter
        if waiter is None or waiter.done():
            return  # not waiting: the next wait sets the timer again
        deadline = self.since + timeout
        if self.loop.time() >= deadline:
            waiter.set_exception(DirectStreamError(f"ReadTimeout: nothing came for {timeout:g} s", "timeout"))
        else:
            self.timer = self.loop.call_at(deadline, self._expire, timeout)

    def stop_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


class DirectStream:
    """A ``POST`` whose reply is read as it arrives: :meth:`open` sends it and waits for the status line and
    headers; :meth:`reads` gives the body, all that one read of the connection brought at a time; :meth:`close`
    (always) closes the connection — before the reply ended, that cancels the upstream's work."""

    def __init__(
        self,
        reader: _Reader,
        read_timeout: float | None,
        pool: ConnectionPool | None = None,
        key: PoolKey = ("", "", 0),
    ) -> None:
        self._reader = reader
        self._read_timeout = read_timeout
        self._pool = pool
        self._key = key

    @property
    def status(self) -> int:
        return self._reader.status

    @property
    def headers(self) -> Mapping[str, str]:
        """The reply's headers, names in lower case."""
        return self._reader.headers

    @classmethod
    async def open(
        cls,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        *,
        connect_timeout: float | None = 30.0,
        read_timeout: float | None = None,
        ssl_context: ssl.SSLContext | None = None,
        pool: ConnectionPool | None = None,
        fresh: bool = False,
    ) -> DirectStream:
        """Connect to ``url`` (``http`` or ``https``), send the request, and wait for the reply's head (raises
        :class:`DirectStreamError`). With a ``pool``, on an idle connection of it where there is one, and the
        connection goes back to it when the reply was read to its end (:meth:`close`): for whole replies (``fresh``:
        on a new connection all the same)."""
        parts = urlparse(url)
        secure = parts.scheme == "https"
        host = parts.hostname or ""
        port = parts.port or (443 if secure else 80)
        key = (parts.scheme, host, port)
        loop = asyncio.get_running_loop()
        reader = _Reader(loop)
        transport = pool.take(key) if pool is not None and not fresh else None
        reused = transport is not None
        if transport is not None:
            transport.set_protocol(reader)
            reader.connection_made(transport)
        else:
            transport = await _connect(
                loop, reader, host, port, ssl_context if secure else None, secure, connect_timeout
            )
        stream = cls(reader, read_timeout, pool, key)
        try:
            head = _request_head(parts, host, port, secure, headers, len(body), keep_alive=pool is not None)
            transport.write(head + body)  # type: ignore[attr-defined]
            if not reader.head.done():
                try:
                    async with asyncio.timeout(read_timeout):
                        await asyncio.shield(reader.head)
                except TimeoutError:
                    raise DirectStreamError(f"ReadTimeout: no reply came for {read_timeout:g} s", "timeout") from None
            reader.head.result()
        except DirectStreamError as err:
            stream.close()
            if reused and err.kind == "broken" and not reader.received:
                # The upstream closed the idle connection as the request went out: once more, on a new one
                return await cls.open(
                    url, headers, body, connect_timeout=connect_timeout, read_timeout=read_timeout,
                    ssl_context=ssl_context, pool=pool, fresh=True,
                )  # fmt: skip
            raise
        except BaseException:
            stream.close()
            raise
        return stream

    async def reads(self) -> AsyncIterator[bytes]:
        """The body as it arrives: each item all the bytes one wake-up found (raises :class:`DirectStreamError`
        when the connection breaks or stays silent past the read timeout)."""
        reader = self._reader
        while True:
            if reader.body:
                yield reader.take()
            elif reader.failure is not None:
                raise reader.failure
            elif reader.complete:
                return
            else:
                await reader.wait(self._read_timeout)

    async def read_body(self, limit: int) -> bytes:
        """The whole body (raises :class:`DirectStreamError` as :meth:`reads` does, and past ``limit`` bytes)."""
        parts: list[bytes] = []
        size = 0
        async for data in self.reads():
            size += len(data)
            if size > limit:
                raise DirectStreamError(f"RemoteProtocolError: a reply past {limit} bytes", "broken")
            parts.append(data)
        return b"".join(parts)

    async def read_all(self, limit: int = _ERROR_BODY_LIMIT) -> bytes:
        """The rest of the body, at most ``limit`` bytes (an error reply's message; what breaks is what came)."""
        kept = bytearray()
        try:
            async for data in self.reads():
                kept += data[: limit - len(kept)]
                if len(kept) >= limit:
                    break
        except DirectStreamError:
            pass
        return bytes(kept)

    def close(self) -> None:
        """Done with the reply: its connection goes back to the pool it came with when the reply was read to its end
        and the upstream keeps connections alive, else it is closed (aborted when the reply was not read to its end:
        no lingering, and the upstream sees it gone)."""
        reader = self._reader
        reader.stop_timer()
        transport = reader.transport
        if transport is None or transport.is_closing():
            return
        if not reader.complete:
            transport.abort()
        elif (
            self._pool is not None
            and reader.failure is None
            and not reader.body
            and not reader.paused
            and reader.keep_alive
        ):
            reader.transport = None  # (the pool's now)
            self._pool.give(self._key, transport)
        else:
            transport.close()


async def _connect(
    loop: asyncio.AbstractEventLoop,
    reader: _Reader,
    host: str,
    port: int,
    ssl_context: ssl.SSLContext | None,
    secure: bool,
    timeout: float | None,
) -> asyncio.BaseTransport:
    """A new connection with ``reader`` as its protocol (raises :class:`DirectStreamError`, ``unreachable``)."""
    context: Any = (ssl_context or _default_context()) if secure else None
    try:
        async with asyncio.timeout(timeout):
            transport, _ = await loop.create_connection(lambda: reader, host, port, ssl=context)
    except TimeoutError:
        raise DirectStreamError(f"ConnectTimeout: no connection within {timeout:g} s", "unreachable") from None
    except (OSError, ssl.SSLError) as err:
        raise DirectStreamError(f"{type(err).__name__}: {err}", "unreachable") from None
    return transport


def _request_head(
    parts: ParseResult,
    host: str,
    port: int,
    secure: bool,
    headers: Mapping[str, str],
    length: int,
    *,
    keep_alive: bool = False,
) -> bytes:
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    default_port = 443 if secure else 80
    authority = f"[{host}]" if ":" in host else host
    if port != default_port:
        authority += f":{port}"
    lines = [
        f"POST {target} HTTP/1.1",
        f"Host: {authority}",
        "Content-Type: application/json",
        f"Content-Length: {length}",
        "Accept: text/event-stream, application/json",
        "Connection: keep-alive" if keep_alive else "Connection: close",
        "User-Agent: autoparser",
    ]
    for name, value in headers.items():
        if "\r" in name or "\n" in name or "\r" in value or "\n" in value:
            raise DirectStreamError(f"the header {name!r} holds a line break", "broken")
        lines.append(f"{name}: {value}")
    try:
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    except UnicodeEncodeError:
        raise DirectStreamError("a request header holds a character HTTP cannot carry", "broken") from None


_context: ssl.SSLContext | None = None


def _default_context() -> ssl.SSLContext:
    """httpx's TLS context (certifi's certificates, ``SSL_CERT_FILE``/``SSL_CERT_DIR``), made once."""
    global _context
    if _context is None:
        import httpx2

        _context = httpx2.create_ssl_context()
    return _context
