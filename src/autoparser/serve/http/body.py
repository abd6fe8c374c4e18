"""A request's body, read within limits: its size, the wait for its bytes, what JSON it holds.

Everything here happens before the request is looked at as a chat request, so that no client can make the server
hold an unbounded body in memory (413), wait forever for bytes announced but never sent (a body shorter than its
``Content-Length``: 408), or crash a later step with JSON that Python parses but nothing after it survives: data
nested deeper than :attr:`RequestLimits.max_json_depth`, a lone surrogate (``"\\ud800"``, valid JSON, not text),
``NaN``. Each is an OpenAI-format error naming the field where there is one.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass

from starlette.requests import ClientDisconnect, Request

from ...errors import RequestError
from ...requests import MAX_DEPTH, check_json_data
from ..protocol import APIError

__all__ = ["RequestLimits", "read_json"]

MiB = 1024 * 1024
# A \u escape of a surrogate code unit: only then can the parsed body hold a lone surrogate (raw UTF-8 cannot).
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


@dataclass(frozen=True)
class RequestLimits:
    """What one request may be (``ServeConfig`` fields; docs/serving.md)."""

    max_body_bytes: int = 16 * MiB
    max_tools: int = 128  # OpenAI's own limit on `tools`
    max_json_depth: int = MAX_DEPTH
    body_timeout: float | None = 30.0  # seconds without a byte of a body still owed; None: no limit


async def read_json(request: Request, limits: RequestLimits) -> object:
    """The request's body parsed as JSON, or :class:`APIError` (413, 408, 400)."""
    return parse_json(await read_body(request, limits), limits)


async def read_body(request: Request, limits: RequestLimits) -> bytes:
    """The request's body within the limits, or :class:`APIError` (413, 408, 400)."""
    return await _read(request, limits)


def parse_json(raw: bytes, limits: RequestLimits) -> object:
    """``raw`` parsed as JSON and checked (depth, lone surrogates), or :class:`APIError` (400). CPU work on a
    body of up to the size limit: the server runs it off the event loop."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise APIError(400, f"the request body is not UTF-8: {err}", code="invalid_json") from None
    try:
        body = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as err:
        why = str(err) if isinstance(err, ValueError) else "it nests too deeply"
        raise APIError(400, f"the request body is not valid JSON: {why}", code="invalid_json") from None
    if _ESCAPED_SURROGATE.search(text) or text.count("[") + text.count("{") > limits.max_json_depth:
        try:
            check_json_data(body, "", limits.max_json_depth)
        except RequestError as err:
            raise APIError(400, str(err), param=err.field, code="invalid_value") from None
    return body


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


async def _read(request: Request, limits: RequestLimits) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise APIError(400, f"Content-Length {declared[:40]!r} is not a number", code="invalid_request")
        if int(declared) > limits.max_body_bytes:
            raise _too_large(limits)
    chunks: list[bytes] = []
    size = 0
    stream = request.stream().__aiter__()
    while True:
        try:
            async with asyncio.timeout(limits.body_timeout):  # (anyio's fail_after: 3x the cost, twice a request)
                chunk = await stream.__anext__()
        except StopAsyncIteration:
            break
        except TimeoutError:
            raise APIError(
                408, f"the request body did not arrive within {limits.body_timeout:g} s", code="request_timeout"
            ) from None
        except ClientDisconnect:
            raise APIError(400, "the client went away before its request body ended", code="invalid_request") from None
        size += len(chunk)
        if size > limits.max_body_bytes:
            raise _too_large(limits)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limits: RequestLimits) -> APIError:
    return APIError(413, f"the request body is larger than {limits.max_body_bytes} bytes", code="request_too_large")
