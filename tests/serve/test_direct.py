"""The direct reader of streamed upstream replies (:mod:`autoparser.serve.http.direct`) against raw sockets that answer
scripted bytes: chunked, sized and close-delimited bodies however the bytes fall, a reply that is not HTTP, one that
breaks off, silence past the read timeout, a refused connection, the body's backpressure and the proxy rule."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from autoparser.serve.http.direct import DirectStream, DirectStreamError, direct_streams
from autoparser.serve.http.pool import ConnectionPool

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _with_server(handler: Handler, work: Callable[[str], Awaitable[object]]) -> object:
    requests: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        requests.append(await reader.readuntil(b"\r\n\r\n"))
        try:
            await handler(reader, writer)
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        return await work(f"http://127.0.0.1:{port}/completion?x=1")


def _writes(*parts: bytes, pause: float = 0.0) -> Handler:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for part in parts:
            writer.write(part)
            await writer.drain()
            if pause:
                await asyncio.sleep(pause)

    return handler


async def _read(url: str, timeout: float | None = 5.0) -> tuple[int, dict[str, str], bytes]:
    stream = await DirectStream.open(url, {"Authorization": "Bearer k"}, b'{"a":1}', read_timeout=timeout)
    try:
        body = b"".join([data async for data in stream.reads()])
        return stream.status, dict(stream.headers), body
    finally:
        stream.close()


HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
BODY = b'data: {"content": "a"}\n\ndata: {"content": "b"}\n\n'


def _chunked(body: bytes, size: int) -> bytes:
    out = b""
    for start in range(0, len(body), size):
        piece = body[start : start + size]
        out += b"%x\r\n" % len(piece) + piece + b"\r\n"
    return out + b"0\r\n\r\n"


@pytest.mark.parametrize("cut", [1, 7, 1000])
def test_chunked_sized_and_close_delimited_bodies_however_the_bytes_fall(cut: int) -> None:
    replies = {
        "chunked": HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + _chunked(BODY, 5),
        "sized": HEAD + b"Content-Length: %d\r\n\r\n" % len(BODY) + BODY,
        "close": HEAD + b"\r\n" + BODY,  # no length, not chunked: the body ends with the connection
    }
    for name, raw in replies.items():
        parts = [raw[i : i + cut] for i in range(0, len(raw), cut)]
        status, headers, body = asyncio.run(_with_server(_writes(*parts), _read))  # type: ignore[misc]
        assert (status, body) == (200, BODY), name
        assert headers["content-type"] == "text/event-stream"


def test_the_request_is_a_post_with_the_headers_and_the_body() -> None:
    seen: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await reader.readexactly(7))
        writer.write(HEAD + b"Content-Length: 0\r\n\r\n")

    async def run() -> None:
        requests: list[bytes] = []

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            requests.append(await reader.readuntil(b"\r\n\r\n"))
            await handler(reader, writer)
            writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            await _read(f"http://127.0.0.1:{port}/completion?x=1")
        head = requests[0].decode()
        assert head.startswith("POST /completion?x=1 HTTP/1.1\r\n")
        assert f"Host: 127.0.0.1:{port}\r\n" in head and "Content-Length: 7\r\n" in head
        assert "Authorization: Bearer k\r\n" in head and "Connection: close\r\n" in head

    asyncio.run(run())
    assert seen == [b'{"a":1}']


def test_an_error_status_and_its_body() -> None:
    raw = b'HTTP/1.1 429 Too Many\r\nRetry-After: 7\r\nContent-Length: 17\r\n\r\n{"error": "slow"}'

    async def work(url: str) -> tuple[int, str, bytes]:
        stream = await DirectStream.open(url, {}, b"{}")
        try:
            return stream.status, stream.headers["retry-after"], await stream.read_all()
        finally:
            stream.close()

    assert asyncio.run(_with_server(_writes(raw), work)) == (429, "7", b'{"error": "slow"}')


def test_a_reply_that_is_not_http_a_break_and_silence_are_errors() -> None:
    with pytest.raises(DirectStreamError, match="not HTTP") as caught:
        asyncio.run(_with_server(_writes(b"SSH-2.0-OpenSSH\r\n\r\n"), _read))
    assert caught.value.kind == "broken"
    cut_off = HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + _chunked(BODY, 5)[:-12]
    with pytest.raises(DirectStreamError, match="closed the connection") as caught:
        asyncio.run(_with_server(_writes(cut_off), _read))
    assert caught.value.kind == "broken"
    slow = _writes(HEAD + b"Transfer-Encoding: chunked\r\n\r\n", _chunked(BODY, 5), pause=0.5)
    with pytest.raises(DirectStreamError, match="ReadTimeout") as caught:
        asyncio.run(_with_server(slow, lambda url: _read(url, timeout=0.1)))
    assert caught.value.kind == "timeout"
    silent = _writes(b"", pause=0.5)
    with pytest.raises(DirectStreamError, match="no reply came") as caught:
        asyncio.run(_with_server(silent, lambda url: _read(url, timeout=0.1)))
    assert caught.value.kind == "timeout"


def test_the_read_timeout_counts_each_wait_not_the_whole_reply() -> None:
    """Parts that come more often than the timeout, for longer than it in all, are read; and a reader that does
    not read for longer than the timeout (a slow client) is not timed out by what it did not wait for."""
    parts = [HEAD + b"Transfer-Encoding: chunked\r\n\r\n", *[_chunked(BODY, 5)[i : i + 9] for i in range(0, 99, 9)]]
    parts.append(_chunked(BODY, 5)[99:])
    # 13 parts 0.05 s apart: 0.65 s in all, past the 0.4 s timeout, with room for a loaded machine between two parts
    steady = _writes(*parts, pause=0.05)
    assert len(parts) * 0.05 > 0.4
    status, _, body = asyncio.run(_with_server(steady, lambda url: _read(url, timeout=0.4)))  # type: ignore[misc]
    assert (status, body) == (200, BODY)

    async def slow_reader(url: str) -> bytes:
        stream = await DirectStream.open(url, {}, b"{}", read_timeout=0.1)
        try:
            got = b""
            async for data in stream.reads():
                got += data
                await asyncio.sleep(0.25)  # busy elsewhere, past the timeout
            return got
        finally:
            stream.close()

    raw = HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + _chunked(BODY, 5)
    assert asyncio.run(_with_server(_writes(raw[:60], raw[60:], pause=0.02), slow_reader)) == BODY


def test_a_refused_connection_is_unreachable() -> None:
    async def refused() -> None:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        await DirectStream.open(f"http://127.0.0.1:{port}/completion", {}, b"{}")

    with pytest.raises(DirectStreamError) as caught:
        asyncio.run(refused())
    assert caught.value.kind == "unreachable"


def test_a_header_with_a_line_break_is_refused() -> None:
    async def work(url: str) -> None:
        await DirectStream.open(url, {"X-A": "1\r\nX-B: 2"}, b"{}")

    with pytest.raises(DirectStreamError, match="line break"):
        asyncio.run(_with_server(_writes(b""), work))


def test_a_body_not_read_pauses_the_upstream_and_all_of_it_comes() -> None:
    """More than the high-water mark unread: the connection is paused, then resumed as the reader takes it."""
    big = b"x" * (3 << 20)
    raw = HEAD + b"Content-Length: %d\r\n\r\n" % len(big) + big

    async def work(url: str) -> int:
        stream = await DirectStream.open(url, {}, b"{}")
        try:
            await asyncio.sleep(0.3)  # let it pile up
            return sum([len(data) async for data in stream.reads()])
        finally:
            stream.close()

    assert asyncio.run(_with_server(_writes(raw), work)) == len(big)


def test_proxies_in_the_environment_send_streams_through_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert direct_streams("http://127.0.0.1:8080") and direct_streams("https://api.example.com/v1")
    assert not direct_streams("unix:///tmp/socket") and not direct_streams("http://")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    assert direct_streams("http://127.0.0.1:8080") and not direct_streams("https://api.example.com/v1")
    monkeypatch.setenv("NO_PROXY", "api.example.com")
    assert direct_streams("https://api.example.com/v1")
    monkeypatch.setenv("ALL_PROXY", "http://proxy:3128")
    assert not direct_streams("http://10.0.0.5:8080")


def test_a_whole_body_and_one_past_the_limit() -> None:
    raw = HEAD + b"Content-Length: %d\r\n\r\n" % len(BODY) + BODY

    async def whole(url: str, limit: int) -> bytes:
        stream = await DirectStream.open(url, {}, b"{}")
        try:
            return await stream.read_body(limit)
        finally:
            stream.close()

    assert asyncio.run(_with_server(_writes(raw), lambda url: whole(url, len(BODY)))) == BODY
    with pytest.raises(DirectStreamError, match="past 10 bytes") as caught:
        asyncio.run(_with_server(_writes(raw), lambda url: whole(url, 10)))
    assert caught.value.kind == "broken"


# --- whole replies on kept-alive connections (.pool) -----------------------------------------------------------


class _KeepAlive:
    """An upstream that answers every request with a sized reply and keeps the connection, counting connections and
    replies; ``silent``: the requests (numbered from 1 in the order they arrive) on which it closes the connection
    without a reply instead; ``close_each``: it closes the connection after every reply."""

    def __init__(self, silent: tuple[int, ...] = (), close_each: bool = False, header: bytes = b"") -> None:
        self.connections = 0
        self.writers: list[asyncio.StreamWriter] = []
        self.closed = 0  # connections ended (by either side)
        self.arrived = 0
        self.replies = 0
        self.silent = silent
        self.close_each = close_each
        self.header = header

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                fields = dict(line.split(b": ", 1) for line in head.split(b"\r\n")[1:] if b": " in line)
                await reader.readexactly(int(fields[b"Content-Length"]))
                self.arrived += 1
                if self.arrived in self.silent:
                    return
                self.replies += 1
                writer.write(HEAD + self.header + b"Content-Length: %d\r\n\r\n" % len(BODY) + BODY)
                await writer.drain()
                if self.close_each:
                    return
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            return
        finally:
            self.closed += 1
            writer.close()


async def _whole_replies(
    upstream: _KeepAlive, count: int, pool: ConnectionPool | None, pause: float = 0.0
) -> list[bytes]:
    server = await asyncio.start_server(upstream.serve, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/completion"
    bodies = []
    async with server:
        for _ in range(count):
            stream = await DirectStream.open(url, {}, b"{}", pool=pool, read_timeout=5)
            try:
                bodies.append(await stream.read_body(1 << 20))
            finally:
                stream.close()
            await asyncio.sleep(pause)
        if pool is not None:
            pool.close()
    return bodies


def test_whole_replies_share_a_kept_alive_connection() -> None:
    upstream = _KeepAlive()
    assert asyncio.run(_whole_replies(upstream, 4, ConnectionPool())) == [BODY] * 4
    assert upstream.connections == 1
    alone = _KeepAlive()
    assert asyncio.run(_whole_replies(alone, 3, None)) == [BODY] * 3
    assert alone.connections == 3  # no pool: a connection each, closed after it (Connection: close)


def test_a_connection_the_upstream_closes_is_not_reused() -> None:
    # closed after each reply (noticed while idle), or said so in the reply: a new connection each time
    upstream = _KeepAlive(close_each=True)
    assert asyncio.run(_whole_replies(upstream, 3, ConnectionPool(), pause=0.05)) == [BODY] * 3
    assert upstream.connections == 3
    said = _KeepAlive(header=b"Connection: close\r\n")
    assert asyncio.run(_whole_replies(said, 3, ConnectionPool())) == [BODY] * 3
    assert said.connections == 3


def test_a_reused_connection_closed_before_the_reply_is_retried_on_a_new_one() -> None:
    # The upstream drops the idle connection just as the second request goes out: it is sent again, once
    upstream = _KeepAlive(silent=(2,))
    assert asyncio.run(_whole_replies(upstream, 3, ConnectionPool())) == [BODY] * 3
    assert upstream.connections == 2 and upstream.arrived == 4 and upstream.replies == 3


def test_a_connection_idle_too_long_is_not_used() -> None:
    upstream = _KeepAlive()
    assert asyncio.run(_whole_replies(upstream, 2, ConnectionPool(idle_seconds=0.01), pause=0.05)) == [BODY] * 2
    assert upstream.connections == 2


def test_a_reply_not_read_to_its_end_does_not_go_back_to_the_pool() -> None:
    upstream = _KeepAlive()

    async def run() -> int:
        server = await asyncio.start_server(upstream.serve, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/completion"
        pool = ConnectionPool()
        async with server:
            stream = await DirectStream.open(url, {}, b"{}", pool=pool)
            stream.close()  # the head read, not the body
            idle = pool.idle()
            stream = await DirectStream.open(url, {}, b"{}", pool=pool)
            assert await stream.read_body(1 << 20) == BODY
            stream.close()
            pool.close()
        return idle

    assert asyncio.run(run()) == 0
    assert upstream.connections == 2


def test_a_pool_used_from_a_new_event_loop_starts_empty_there() -> None:
    upstream = _KeepAlive()

    async def run(pool: ConnectionPool, port: int) -> bytes:
        stream = await DirectStream.open(f"http://127.0.0.1:{port}/completion", {}, b"{}", pool=pool)
        try:
            return await stream.read_body(1 << 20)
        finally:
            stream.close()

    async def both(pool: ConnectionPool) -> list[bytes]:
        server = await asyncio.start_server(upstream.serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            first = await run(pool, port)
            # the same pool from a loop of its own (another thread), while this one keeps the idle connection
            second = await asyncio.to_thread(lambda: asyncio.run(run(pool, port)))
            for writer in upstream.writers:  # (the first loop's idle connection: the pool left it to that loop)
                writer.close()
            return [first, second]

    pool = ConnectionPool()
    assert asyncio.run(both(pool)) == [BODY, BODY]
    assert upstream.connections == 2  # (the first loop's idle connection was not used from the second)


def test_the_pool_keeps_one_connection_for_a_second_at_most() -> None:
    # Each idle connection holds one of llama.cpp's few HTTP threads: one is kept per upstream, and closed when its
    # time is up, whether or not a request came
    upstream = _KeepAlive()

    async def run() -> tuple[int, int, int]:
        server = await asyncio.start_server(upstream.serve, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/completion"
        pool = ConnectionPool(idle_seconds=0.1)
        async with server:
            streams = [await DirectStream.open(url, {}, b"{}", pool=pool) for _ in range(3)]  # three at once
            for stream in streams:
                assert await stream.read_body(1 << 20) == BODY
                stream.close()
            kept = pool.idle()
            await asyncio.sleep(0.3)
            return kept, pool.idle(), upstream.closed

    assert asyncio.run(run()) == (1, 0, 3)  # two closed at once, the third when its time was up
