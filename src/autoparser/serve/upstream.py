"""The completion engines behind the server: llama.cpp's ``/completion`` and OpenAI-style ``/v1/completions``.

Each kind turns a rendered request (:class:`~autoparser.params.ChatParams` and the client's sampling) into the
engine's request body, sends it with httpx, and reads the reply back as :class:`Piece` objects: the text the model
wrote, then how it finished (``stop`` or ``length``) and the token counts. Streamed, one piece per server-sent
event, yielded as it arrives.

**llama.cpp** (``tools/server``: ``server-schema.cpp`` names the fields, ``server-common.cpp`` shows what its own
chat endpoint sends): ``prompt``, ``n_predict``, ``temperature``, ``top_p``, ``seed``, ``frequency_penalty``,
``presence_penalty``, ``logit_bias``, ``stop`` (the client's stops and the template's end-of-turn markers:
:meth:`Upstream.stops`), ``stream``;
``grammar`` (GBNF) with ``grammar_lazy`` and ``grammar_triggers`` (``{"type": 1, "value": word}`` for a word,
``2`` for a pattern, ``3`` for a full pattern: ``common_grammar_trigger_type``) and ``preserved_tokens`` (markers
the server must render as text and may use as trigger tokens; with them, the template's end-of-turn and next-turn
markers, so that a control token the model writes is kept, or matched as a stop, instead of silently dropped).
Sent without ``grammar_type``, so the server does not pre-feed a generation prompt to the grammar: autoparser's
grammars describe the output only. For a lazy grammar
where the template has reasoning markers, ``reasoning_budget_start_tag`` / ``reasoning_budget_end_tags`` with an
unlimited ``reasoning_budget_tokens`` (-1) and the ``generation_prompt`` keep triggers inside the reasoning block
from firing, as llama.cpp's chat endpoint does (``common/sampling.cpp``: ``grammar_should_apply``). The reply:
``content`` per event, ``stop: true`` on the last, with ``stop_type`` (``limit`` is ``length``),
``tokens_evaluated`` and ``tokens_predicted``.

**OpenAI-style** ``/v1/completions`` (vLLM, SGLang, TGI, providers): ``model``, ``prompt``, ``max_tokens``,
sampling, ``stop``, ``stream`` (``stream_options.include_usage`` when the client asked for usage), and the grammar in
the field the engine documents (:data:`GRAMMAR_FIELDS`).
"""

from __future__ import annotations

import json
import logging
from codecs import utf_8_decode as _utf8
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, NamedTuple

import anyio
import httpx2

from ..params import ChatParams
from .chunks import Usage
from .http.direct import DirectStream, DirectStreamError, direct_streams
from .http.pool import ConnectionPool
from .http.security import Scrubber, split_credentials
from .protocol import ChatRequest

__all__ = [
    "FAILURE_KINDS",
    "GRAMMAR_FIELDS",
    "KINDS",
    "LlamaCppUpstream",
    "OpenAIUpstream",
    "Piece",
    "PieceStream",
    "Upstream",
    "UpstreamError",
    "make_upstream",
]

KINDS = ("llama.cpp", "openai")
# Where an OpenAI-style engine takes the grammar (checked against vLLM 0.32's CompletionRequest and SGLang 0.5's):
GRAMMAR_FIELDS = {
    "none": "no grammar: the reply is parsed as the model wrote it",
    "vllm-lark": "vLLM: structured_outputs.grammar = params.full_lark_grammar (llguidance)",
    "vllm-structural-tag": "vLLM: structured_outputs.structural_tag = params.structural_tag (xgrammar); "
    "the Lark grammar where a request has no tag",
    "sglang-ebnf": "SGLang: ebnf = params.full_grammar (GBNF, xgrammar)",
    "sglang-structural-tag": "SGLang: response_format = params.structural_tag; ebnf where a request has no tag",
}
BOS_MODES = ("auto", "strip", "keep")
# Sampling fields both kinds take under OpenAI's names (llama.cpp: server-schema.cpp; logit_bias in OpenAI's
# {"token id": bias} form, which llama.cpp reads too)
_SAMPLING = ("temperature", "top_p", "seed", "frequency_penalty", "presence_penalty", "logit_bias")
# vLLM's sampling extensions, which both kinds take too (under these names for an OpenAI-style engine: vLLM's)
_EXTENSIONS = ("top_k", "min_p", "repetition_penalty")
# ... and the names llama.cpp's /completion gives them where they differ
_LLAMA_NAMES = {"repetition_penalty": "repeat_penalty"}
# llama.cpp's common_grammar_trigger_type (its TOKEN type, 0, needs a token id: autoparser makes words instead)
_TRIGGER_TYPES = {"word": 1, "pattern": 2, "pattern_full": 3}
_log = logging.getLogger("autoparser.serve")


# What went wrong with the upstream (UpstreamError.kind; the code of the error a client gets, see .failures)
FAILURE_KINDS = (
    "upstream_status",  # it answered an HTTP error status (UpstreamError.status)
    "upstream_unreachable",  # no connection could be made
    "upstream_timeout",  # no byte came within the read timeout
    "upstream_broken",  # the connection broke, or the stream closed before the reply ended
    "upstream_bad_reply",  # a reply or event that is not what the protocol says
    "upstream_error",  # an error event in the middle of a streamed reply
)


class UpstreamError(Exception):
    """The upstream could not be reached, answered an error, or broke off a reply (the message says which, ``kind``
    names it: :data:`FAILURE_KINDS`). ``status`` and ``retry_after``: the upstream's error status and its
    ``Retry-After`` header, where it answered one."""

    def __init__(
        self, message: str, status: int | None = None, *, kind: str = "upstream_error", retry_after: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.kind = "upstream_status" if status is not None and kind == "upstream_error" else kind
        self.retry_after = retry_after

    def scrubbed(self, scrubber: Scrubber) -> UpstreamError:
        """The same error with the upstream's credentials masked in its message."""
        return UpstreamError(scrubber.text(self.message), self.status, kind=self.kind, retry_after=self.retry_after)


def _read_failure(err: httpx2.HTTPError) -> str:
    return "upstream_timeout" if isinstance(err, httpx2.TimeoutException) else "upstream_broken"


class Piece(NamedTuple):
    """Text the model wrote; the last piece of a reply also says how it ended (``stop``/``length``) and its usage,
    and ``stop_word``: the stop string that ended it, where the engine says (llama.cpp's ``stopping_word``, vLLM's
    ``stop_reason``; Anthropic's ``stop_sequence`` is read from it). A named tuple: one is made per streamed
    token, and a tuple is made in a fraction of a frozen dataclass's time."""

    text: str = ""
    finish: str | None = None
    usage: Usage | None = None
    stop_word: str | None = None


def _error_message(payload: object) -> str:
    """The message of an error body, as engines shape them (OpenAI's ``{"error": {"message"}}``, vLLM's older
    ``{"object": "error", "message"}``, FastAPI's ``{"detail"}``)."""
    if isinstance(payload, Mapping):
        error = payload.get("error")
        if isinstance(error, Mapping) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str) and error:
            return error
        for key in ("message", "detail"):
            if payload.get(key):
                return str(payload[key]) if not isinstance(payload[key], str) else payload[key]
    return json.dumps(payload) if not isinstance(payload, str) else payload


def _body_message(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace").strip()
    try:
        message = _error_message(json.loads(text))
    except ValueError:
        message = text
    return message[:2000] or "(empty body)"


class SseEvents:
    """Server-sent events split out of text as it arrives: :meth:`feed` returns the ``data`` of each event the text
    completed (its ``data:`` lines joined by newlines), :meth:`close` what the stream's end completes. Lines end in
    ``\n``, ``\r\n`` or ``\r``; comment lines (``:``, llama.cpp's keep-alive pings) and other fields are skipped.
    Splits whole reads with ``str`` methods rather than line by line."""

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, text: str) -> list[str]:
        if self._pending:
            text = self._pending + text
        if "\r" in text:
            held = text.endswith("\r")  # may be the first half of a CRLF
            text = text[:-1] if held else text
            text = text.replace("\r\n", "\n").replace("\r", "\n") + ("\r" if held else "")
        *complete, self._pending = text.split("\n\n")
        found: list[str] = []
        for block in complete:
            if block.startswith("data: ") and "\n" not in block:  # an engine's event: one data line
                found.append(block[6:])
            elif (data := _event_data(block)) is not None:
                found.append(data)
        return found

    def close(self) -> list[str]:
        rest, self._pending = self._pending.rstrip("\r"), ""
        data = _event_data(rest)
        return [] if data is None else [data]


def _event_data(block: str) -> str | None:
    """The data of one event (its lines without the blank line ending it), or None when it has no data field."""
    data = []
    for line in block.split("\n"):
        if line.startswith("data"):
            name, _, value = line.partition(":")
            if name == "data":
                data.append(value[1:] if value.startswith(" ") else value)
    return "\n".join(data) if data else None


_scan_json = json.JSONDecoder().scan_once  # what json.loads runs, without its three Python layers around it


class PieceStream:
    """A streamed reply: iterate :meth:`batches`, then (always) :meth:`aclose` to release the connection; closing
    it early cancels the upstream request. ``reads``: the body's bytes as they arrive (server-sent events, UTF-8)."""

    def __init__(
        self,
        reads: AsyncIterator[bytes],
        close: Callable[[], Awaitable[None]],
        decode: Callable[[Any], Piece | None],
        source: str,
        secrets: Scrubber | None = None,
    ) -> None:
        self._reads = reads
        self._close = close
        self._decode = decode
        self._source = source
        self._secrets = secrets or Scrubber()
        self._ended = False

    @classmethod
    def of_response(
        cls, response: httpx2.Response, decode: Callable[[Any], Piece | None], source: str, secrets: Scrubber
    ) -> PieceStream:
        """A reply read through httpx."""
        return cls(response.aiter_bytes(), response.aclose, decode, source, secrets)

    @classmethod
    def of_direct(
        cls, stream: DirectStream, decode: Callable[[Any], Piece | None], source: str, secrets: Scrubber
    ) -> PieceStream:
        """A reply read straight off its connection (:mod:`.direct`)."""

        async def close() -> None:
            stream.close()

        return cls(stream.reads(), close, decode, source, secrets)

    async def pieces(self) -> AsyncIterator[Piece]:
        """The reply's pieces; one has ``finish`` set. Raises as :meth:`batches` does."""
        async for batch in self.batches():
            for piece in batch:
                yield piece

    async def batches(self) -> AsyncIterator[list[Piece]]:
        """The reply's pieces as they arrive: the events of one read of the connection together (an engine at full
        speed sends several per read, one at its pace one), so the server parses and writes once per read, not
        once per token. A read of the direct reader (:mod:`.direct`) is all the connection held, however many
        HTTP chunks; through httpx, one chunk. Raises :class:`UpstreamError` (its message scrubbed of credentials)
        for an error event, a broken connection, or a stream that closes before the reply ended.

        One generator from the bytes to the pieces (the UTF-8 decoding and the splitting into events inline): at an
        engine's pace every layer is paid once per token."""
        events = SseEvents()
        held = b""  # the start of a character a read cut
        try:
            try:
                async for data in self._reads:
                    if held:
                        data = held + data
                    text, used = _utf8(data, "replace", False)
                    held = data[used:] if used < len(data) else b""
                    if not text:
                        continue
                    batch: list[Piece] = []
                    try:
                        last = self._take(events.feed(text), batch)
                    except UpstreamError:
                        if batch:  # the events before it in the same read are the reply's, and written
                            yield batch
                        raise
                    if batch:
                        yield batch
                    if last:
                        return
            except httpx2.HTTPError as err:
                message = f"{self._source} broke off the reply: {_describe(err)}"
                raise UpstreamError(message, kind=_read_failure(err)) from err
            except DirectStreamError as err:
                kind = "upstream_timeout" if err.kind == "timeout" else "upstream_broken"
                raise UpstreamError(f"{self._source} broke off the reply: {err}", kind=kind) from err
            if held:  # a character cut by the end: U+FFFD, which completes no event
                events.feed(_utf8(held, "replace", True)[0])
            batch = []
            self._take(events.close(), batch, at_close=True)
            if batch:
                yield batch
            if not self._ended:
                raise UpstreamError(f"{self._source} closed the stream before the reply ended", kind="upstream_broken")
        except UpstreamError as err:
            raise err.scrubbed(self._secrets) from None

    def _take(self, found: list[str], batch: list[Piece], at_close: bool = False) -> bool:
        """The pieces of events ``found`` added to ``batch``; whether the reply's last came (``[DONE]``, or the
        event that finished a reply that ends there: llama.cpp's)."""
        for data in found:
            if not data.startswith("{") and data.strip() == "[DONE]":
                return True
            piece = self._decode(self._json(data))
            if piece is None:
                continue
            batch.append(piece)
            if piece.finish is not None:
                self._ended = True
                if self.ends_at_finish and not at_close:
                    return True
        return False

    def _json(self, data: str) -> Any:
        try:
            value, end = _scan_json(data, 0)
            if end == len(data):
                return value
        except (StopIteration, ValueError):
            pass
        try:  # whitespace around it, or not JSON: as json.loads reads it
            return json.loads(data)
        except ValueError:
            raise UpstreamError(
                f"{self._source} sent an event that is not JSON: {data[:200]!r}", kind="upstream_bad_reply"
            ) from None

    ends_at_finish = True  # llama.cpp's /completion sends no [DONE]: the event with "stop": true is the last

    async def aclose(self) -> None:
        await self._close()


_WHOLE_REPLY_LIMIT = 256 * 1024 * 1024  # bytes of a non-streamed reply (a model's whole output, as JSON)
# A request body whose texts (prompt, grammar) pass this many characters is written in a worker thread: the
# grammar of a thousand tools is megabytes, whose JSON would hold the event loop (and every stream) for 100 ms
_LARGE_BODY = 256 * 1024


async def encode(body: Mapping[str, Any]) -> bytes:
    """``body`` as compact JSON (UTF-8), written off the event loop when it is large."""
    size = sum(len(value) for value in body.values() if isinstance(value, str))
    if size < _LARGE_BODY:
        return _json_bytes(body)
    return await anyio.to_thread.run_sync(_json_bytes, body)


def _json_bytes(body: Mapping[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def _describe(err: BaseException) -> str:
    text = str(err)
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


class Upstream:
    """What both kinds share: the httpx client, the BOS rule, sending and error reporting."""

    kind = ""
    path = ""

    def __init__(
        self,
        url: str,
        client: httpx2.AsyncClient,
        *,
        bos_token: str = "",
        end_of_turn: tuple[str, ...] = (),
        next_turn: tuple[str, ...] = (),
        bos: str = "auto",
        default_max_tokens: int | None = None,
        extra: Mapping[str, Any] | None = None,
        api_key: str | None = None,
        direct: bool | None = None,
    ) -> None:
        if bos not in BOS_MODES:
            raise ValueError(f"bos must be one of {', '.join(BOS_MODES)}, got {bos!r}")
        self.url = url.rstrip("/")
        self.client = client
        self.bos_token = bos_token
        self.end_of_turn = end_of_turn
        self.next_turn = next_turn
        self.bos = bos
        self.default_max_tokens = default_max_tokens
        self.extra = dict(extra or {})
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # masked in every error this upstream raises (the app gives a URL without its password: .security)
        self.secrets = Scrubber(split_credentials(url, api_key).secrets)
        try:  # refused here, at start-up, rather than as an error on every request
            httpx2.URL(self.url + self.path)
        except (httpx2.InvalidURL, TypeError, ValueError) as err:
            # neither the URL nor httpx's text, which quote parts of it: a password unsplit is not recognised
            raise ValueError(
                f"the upstream URL is not valid ({type(err).__name__}); in a password, '/', '@' and ':' must be "
                "percent-encoded"
            ) from None
        self._adds_bos: bool | None = None  # learned once (the same answer for every request)
        # Streamed replies read straight off their connection (.direct), unless a proxy stands between; None: so
        # where the URL allows it
        self.direct = direct_streams(self.url) if direct is None else direct and direct_streams(self.url)
        self.pool = ConnectionPool()  # the connections of whole replies, kept between them (.http.pool)

    @property
    def endpoint(self) -> str:
        return self.url + self.path

    # --- the request ---------------------------------------------------------------------------------------------

    async def prompt(self, params: ChatParams) -> str:
        """The prompt as the engine must get it: without the template's BOS text where the engine adds BOS itself
        when it tokenizes (``bos``: ``auto`` asks llama.cpp, assumes so for OpenAI-style engines)."""
        bos = self.bos_token
        if not bos or not params.prompt.startswith(bos) or self.bos == "keep":
            return params.prompt
        if self.bos == "auto" and not await self.adds_bos():
            return params.prompt
        return params.prompt[len(bos) :]

    async def adds_bos(self) -> bool:
        return True

    async def count_tokens(self, params: ChatParams) -> int | None:
        """How many tokens the engine reads for ``params``' prompt (Anthropic's ``count_tokens``), counted by its own
        tokenizer; None where this kind has no tokenizer endpoint the server knows. Raises :class:`UpstreamError`."""
        return None

    def stops(self, params: ChatParams, request: ChatRequest) -> list[str]:
        """The client's stop strings, then the template's end-of-turn markers — except those the reply's own markup
        uses (``preserved_tokens``: gpt-oss's ``<|end|>`` ends a message inside the turn, Cohere's
        ``<|END_RESPONSE|>`` closes the answer its grammar spells out; the engine ends generation on such special
        tokens by itself where they end the turn). Not the markers a next turn opens with: a grammar may allow
        them inside reasoning or text, and a stop there would cut a constrained reply short."""
        stops = list(request.sampling.stop)
        markup = set(params.preserved_tokens)
        return stops + [m for m in self.end_of_turn if m and m not in stops and m not in markup]

    async def body(self, params: ChatParams, request: ChatRequest) -> dict[str, Any]:
        raise NotImplementedError

    # --- sending -------------------------------------------------------------------------------------------------

    async def _send(self, body: Mapping[str, Any], *, stream: bool, url: str | None = None) -> httpx2.Response:
        """POST ``body`` to the completion endpoint (or ``url``); an error status raises :class:`UpstreamError`."""
        headers = {**self.headers, "Content-Type": "application/json"}
        url = url or self.endpoint
        request = self.client.build_request("POST", url, content=await encode(body), headers=headers)
        try:
            response = await self.client.send(request, stream=stream)
        except (httpx2.ConnectError, httpx2.ConnectTimeout) as err:
            message = f"upstream {url} is unreachable: {_describe(err)}"
            raise UpstreamError(message, kind="upstream_unreachable") from err
        except httpx2.HTTPError as err:  # a timeout, a connection that broke before the answer
            raise UpstreamError(f"upstream {url} failed: {_describe(err)}", kind=_read_failure(err)) from err
        if response.status_code >= 400:
            try:
                raw = await response.aread()
            except httpx2.HTTPError:
                raw = b""
            finally:
                await response.aclose()
            message = _body_message(raw)
            raise UpstreamError(
                f"upstream {url} answered {response.status_code}: {message}",
                response.status_code,
                retry_after=response.headers.get("retry-after"),
            )
        return response

    async def complete(self, params: ChatParams, request: ChatRequest) -> Piece:
        """The whole reply at once (raises :class:`UpstreamError`, scrubbed of credentials)."""
        try:
            body = await self.body(params, request)
            if self.direct:
                payload_bytes = await self._read_whole(body)
            else:
                payload_bytes = (await self._send(body, stream=False)).content
            try:
                payload = json.loads(payload_bytes)
            except ValueError:
                raise UpstreamError(
                    f"upstream {self.endpoint} answered with a body that is not JSON", kind="upstream_bad_reply"
                ) from None
            piece = self.decode_complete(payload)
            if piece is None:
                raise UpstreamError(
                    f"upstream {self.endpoint} answered without a completion: {str(payload)[:200]}",
                    kind="upstream_bad_reply",
                )
        except UpstreamError as err:
            raise err.scrubbed(self.secrets) from None
        return piece

    async def stream(self, params: ChatParams, request: ChatRequest) -> PieceStream:
        """Open a streamed reply (raises :class:`UpstreamError`, scrubbed of credentials, before any piece when the
        upstream refuses)."""
        source = f"upstream {self.endpoint}"
        try:
            body = await self.body(params, request)
            if self.direct:
                stream = PieceStream.of_direct(await self._open(body), self.decode_event, source, self.secrets)
            else:
                response = await self._send(body, stream=True)
                stream = PieceStream.of_response(response, self.decode_event, source, self.secrets)
        except UpstreamError as err:
            raise err.scrubbed(self.secrets) from None
        stream.ends_at_finish = self.kind == "llama.cpp"
        return stream

    async def _read_whole(self, body: Mapping[str, Any]) -> bytes:
        """A whole reply read straight off its connection (:mod:`.direct`)."""
        stream = await self._open(body, self.pool)
        try:
            return await stream.read_body(_WHOLE_REPLY_LIMIT)
        except DirectStreamError as err:
            kind = "upstream_timeout" if err.kind == "timeout" else "upstream_broken"
            raise UpstreamError(f"upstream {self.endpoint} failed: {err}", kind=kind) from None
        finally:
            stream.close()

    async def _open(self, body: Mapping[str, Any], pool: ConnectionPool | None = None) -> DirectStream:
        """Send a request on a connection of its own, or (``pool``: a whole reply's) on an idle one of the pool
        (:mod:`.direct`); its reply's head read."""
        timeout = self.client.timeout
        data = await encode(body)
        try:
            stream = await DirectStream.open(
                self.endpoint, self.headers, data, connect_timeout=timeout.connect, read_timeout=timeout.read, pool=pool
            )
        except DirectStreamError as err:
            if err.kind == "unreachable":
                message = f"upstream {self.endpoint} is unreachable: {err}"
                raise UpstreamError(message, kind="upstream_unreachable") from None
            kind = "upstream_timeout" if err.kind == "timeout" else "upstream_broken"
            raise UpstreamError(f"upstream {self.endpoint} failed: {err}", kind=kind) from None
        if stream.status >= 400:
            try:
                raw = await stream.read_all()
            finally:
                stream.close()
            raise UpstreamError(
                f"upstream {self.endpoint} answered {stream.status}: {_body_message(raw)}",
                stream.status,
                retry_after=stream.headers.get("retry-after"),
            )
        return stream

    def decode_event(self, event: Any) -> Piece | None:
        raise NotImplementedError

    def decode_complete(self, payload: Any) -> Piece | None:
        return self.decode_event(payload)

    def _raise_event_error(self, event: Any) -> None:
        if isinstance(event, Mapping) and event.get("error"):
            raise UpstreamError(f"upstream {self.endpoint} failed: {_error_message(event)}")

    def _check_event(self, event: Any) -> None:
        """Raises for an error event, or an event that is not an object. (Called for what is not a ``dict`` or
        has an ``error`` key: a streamed token's event passes with one type check.)"""
        self._raise_event_error(event)
        if not isinstance(event, Mapping):
            raise UpstreamError(
                f"upstream {self.endpoint} sent an event that is not an object: {str(event)[:200]}",
                kind="upstream_bad_reply",
            )


class LlamaCppUpstream(Upstream):
    """llama.cpp's server, ``POST /completion``."""

    kind = "llama.cpp"
    path = "/completion"

    async def adds_bos(self) -> bool:
        """Whether the server adds BOS when it tokenizes a prompt: ``/tokenize`` of nothing with
        ``add_special`` gives ``[bos]`` or ``[]`` (asked once; if the server cannot say, yes)."""
        if self._adds_bos is None:
            try:
                response = await self.client.post(
                    self.url + "/tokenize", json={"content": "", "add_special": True}, headers=self.headers
                )
                tokens = response.json().get("tokens") if response.status_code == 200 else None
                self._adds_bos = bool(tokens) if isinstance(tokens, list) else True
            except (httpx2.HTTPError, ValueError, AttributeError):
                return True  # not remembered: the next request asks again
        return self._adds_bos

    async def count_tokens(self, params: ChatParams) -> int | None:
        """``/tokenize`` of the prompt as ``/completion`` gets it (BOS as :meth:`prompt` leaves it), with special
        tokens added and parsed as ``/completion`` tokenizes a prompt: the count its ``tokens_evaluated`` reports."""
        body = {"content": await self.prompt(params), "add_special": True, "parse_special": True}
        url = self.url + "/tokenize"
        try:
            response = await self._send(body, stream=False, url=url)
            tokens = response.json().get("tokens")
        except (ValueError, AttributeError):
            tokens = None
        except UpstreamError as err:
            raise err.scrubbed(self.secrets) from None
        if not isinstance(tokens, list):
            raise UpstreamError(f"upstream {url} answered without a list of tokens", kind="upstream_bad_reply")
        return len(tokens)

    async def body(self, params: ChatParams, request: ChatRequest) -> dict[str, Any]:
        sampling = request.sampling
        body: dict[str, Any] = {"prompt": await self.prompt(params), "stream": request.stream}
        n_predict = sampling.max_tokens if sampling.max_tokens is not None else self.default_max_tokens
        if n_predict is not None:
            body["n_predict"] = n_predict
        for key in (*_SAMPLING, *_EXTENSIONS):
            value = getattr(sampling, key)
            if value is not None:
                body[_LLAMA_NAMES.get(key, key)] = value
        stops = self.stops(params, request)
        if stops:
            body["stop"] = stops
        body.update(llama_cpp_grammar(params))
        # The template's turn markers are preserved too: llama.cpp drops a control token from the text unless it is
        # preserved (an end-of-turn marker then could not match its stop string; a next turn's <|im_start|> would
        # vanish from what the model wrote); preserved, they are written, and an end of turn is cut as a stop.
        turn = [*self.end_of_turn, *self.next_turn]
        body["preserved_tokens"] = list(dict.fromkeys([*body["preserved_tokens"], *turn]))
        body.update(self.extra)
        return body

    def decode_event(self, event: Any) -> Piece | None:
        if type(event) is not dict or "error" in event:
            self._check_event(event)
        text = event.get("content")
        text = text if isinstance(text, str) else ""
        if not event.get("stop"):
            return Piece(text) if text else None
        finish = "length" if event.get("stop_type") == "limit" else "stop"
        usage = Usage(_count(event.get("tokens_evaluated")), _count(event.get("tokens_predicted")))
        word = event.get("stopping_word")  # the stop string matched ("" when the model ended or hit the limit)
        return Piece(text, finish, usage, word if isinstance(word, str) and word else None)

    def decode_complete(self, payload: Any) -> Piece | None:
        if isinstance(payload, list) and len(payload) == 1:  # several prompts would give several results
            payload = payload[0]
        piece = self.decode_event(payload)
        if piece is not None and piece.finish is None:  # a reply that does not say it ended: it did
            return Piece(piece.text, "stop", piece.usage)
        return piece


def llama_cpp_grammar(params: ChatParams) -> dict[str, Any]:
    """The grammar fields of a llama.cpp request, as autoparser produced them."""
    fields: dict[str, Any] = {"preserved_tokens": list(params.preserved_tokens)}
    grammar = params.grammar
    if grammar is None:
        return fields
    fields["grammar"] = grammar
    fields["grammar_lazy"] = params.grammar_lazy
    if params.grammar_lazy:
        fields["grammar_triggers"] = [
            {"type": _TRIGGER_TYPES.get(t.type, 1), "value": t.value} for t in params.grammar_triggers
        ]
        if _reasoning_open(params):
            # Triggers do not fire inside a reasoning block: llama.cpp's reasoning-budget sampler, unlimited, tells
            # the lazy grammar when the block is open (it reads the generation prompt for a block opened there).
            fields["reasoning_budget_tokens"] = -1
            fields["reasoning_budget_start_tag"] = params.thinking_start_tag
            fields["reasoning_budget_end_tags"] = [params.thinking_end_tag]
            fields["generation_prompt"] = params.generation_prompt
    return fields


def _reasoning_open(params: ChatParams) -> bool:
    """Whether the reply may hold a reasoning block, where triggers must not fire: the template has thinking tags
    and the generation prompt did not close the block (thinking off). llama.cpp's reasoning-budget sampler opens a
    block at any start tag of the output, while the parser reads one only where the reply starts: with thinking
    off, a start tag the model writes later is content, and a trigger after it must fire."""
    start, end = params.thinking_start_tag, params.thinking_end_tag
    if not (start and end):
        return False
    prompt = params.generation_prompt
    return start not in prompt or prompt.rfind(end) < prompt.rfind(start)


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class OpenAIUpstream(Upstream):
    """An OpenAI-style completions endpoint, ``POST /v1/completions`` (give the URL without ``/v1``)."""

    kind = "openai"
    path = "/v1/completions"

    def __init__(
        self,
        url: str,
        client: httpx2.AsyncClient,
        *,
        grammar_field: str = "none",
        model: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(url.removesuffix("/").removesuffix("/v1"), client, **options)
        if grammar_field not in GRAMMAR_FIELDS:
            raise ValueError(f"grammar_field must be one of {', '.join(GRAMMAR_FIELDS)}, got {grammar_field!r}")
        self.grammar_field = grammar_field
        self.model = model

    async def upstream_model(self) -> str:
        """The model to ask for: the configured one, else the first the upstream's ``/v1/models`` lists."""
        if self.model:
            return self.model
        try:
            response = await self.client.get(self.url + "/v1/models", headers=self.headers)
            data = response.json().get("data") if response.status_code == 200 else None
            model = data[0].get("id") if isinstance(data, list) and data and isinstance(data[0], Mapping) else None
        except (httpx2.HTTPError, ValueError, AttributeError) as err:
            if isinstance(err, httpx2.ConnectError | httpx2.ConnectTimeout):
                kind = "upstream_unreachable"
            else:
                kind = _read_failure(err) if isinstance(err, httpx2.HTTPError) else "upstream_bad_reply"
            raise UpstreamError(f"upstream {self.url}/v1/models is unreachable: {_describe(err)}", kind=kind) from err
        if not isinstance(model, str) or not model:
            raise UpstreamError(
                f"upstream {self.url}/v1/models lists no model; pass --upstream-model", kind="upstream_bad_reply"
            )
        self.model = model
        return model

    async def body(self, params: ChatParams, request: ChatRequest) -> dict[str, Any]:
        sampling = request.sampling
        body: dict[str, Any] = {
            "model": await self.upstream_model(),
            "prompt": await self.prompt(params),
            "stream": request.stream,
            # An engine's completions default is 16 tokens; null asks vLLM and OpenAI for the rest of the context.
            "max_tokens": sampling.max_tokens if sampling.max_tokens is not None else self.default_max_tokens,
        }
        for key in (*_SAMPLING, *_EXTENSIONS):
            value = getattr(sampling, key)
            if value is not None:
                body[key] = value
        stops = self.stops(params, request)
        if stops:
            body["stop"] = stops
        if request.stream and request.include_usage:
            body["stream_options"] = {"include_usage": True}
        body.update(openai_grammar(params, self.grammar_field))
        body.update(self.extra)
        return body

    def decode_event(self, event: Any) -> Piece | None:
        if type(event) is not dict or "error" in event:
            self._check_event(event)
        usage = _openai_usage(event.get("usage"))
        choices = event.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices and _is_mapping(choices[0]) else {}
        text = choice.get("text")
        text = text if isinstance(text, str) else ""
        finish = choice.get("finish_reason")
        finish = None if finish is None else "length" if finish == "length" else "stop"
        if not text and finish is None and usage is None:
            return None
        word = choice.get("stop_reason")  # vLLM's: the stop string matched (a token id for a stop token)
        return Piece(text, finish, usage, word if isinstance(word, str) and word and finish else None)

    def decode_complete(self, payload: Any) -> Piece | None:
        piece = self.decode_event(payload)
        if piece is not None and piece.finish is None:
            return Piece(piece.text, "stop", piece.usage)
        return piece


def grammar_fields(upstream: Upstream) -> Callable[[ChatParams], dict[str, Any]]:
    """What writes the grammar fields ``upstream`` sends (the server writes them before it answers, where a schema
    the grammar cannot take is still the client's error)."""
    if isinstance(upstream, OpenAIUpstream):
        field = upstream.grammar_field
        return lambda params: openai_grammar(params, field)
    return llama_cpp_grammar


def openai_grammar(params: ChatParams, grammar_field: str) -> dict[str, Any]:
    """The grammar fields of an OpenAI-style completions request: whole-output grammars (these engines constrain
    from the first token), in the field ``grammar_field`` names; markers must then come back as text
    (``skip_special_tokens``)."""
    if grammar_field == "none":
        return {}
    fields: dict[str, Any] = {"skip_special_tokens": False}
    tag = params.structural_tag if grammar_field.endswith("structural-tag") else None
    if grammar_field.startswith("vllm"):
        if tag is not None:
            fields["structured_outputs"] = {"structural_tag": json.dumps(tag)}
        elif params.full_lark_grammar is not None:
            fields["structured_outputs"] = {"grammar": params.full_lark_grammar}
    elif tag is not None:
        fields["response_format"] = tag
    elif params.full_grammar is not None:
        fields["ebnf"] = params.full_grammar
    return fields


def _is_mapping(value: object) -> bool:
    return type(value) is dict or isinstance(value, Mapping)  # JSON's objects are dicts: no ABC check for them


def _openai_usage(usage: object) -> Usage | None:
    if usage is None or not _is_mapping(usage):
        return None
    return Usage(_count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")))


def make_upstream(kind: str, url: str, client: httpx2.AsyncClient, **options: Any) -> Upstream:
    """The upstream of ``kind`` (:data:`KINDS`)."""
    if kind == "llama.cpp":
        if options.pop("grammar_field", "none") != "none":
            raise ValueError("--grammar-field applies to --upstream-kind openai; llama.cpp gets GBNF with triggers")
        options.pop("model", None)
        return LlamaCppUpstream(url, client, **options)
    if kind == "openai":
        return OpenAIUpstream(url, client, **options)
    raise ValueError(f"upstream kind must be one of {', '.join(KINDS)}, got {kind!r}")
