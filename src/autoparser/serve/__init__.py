"""``autoparser serve``: an OpenAI-compatible chat server in front of a raw completion engine.

The server renders each chat request with the model's template (``ChatTemplate.apply``), sends the prompt and the
request's grammar to the engine (llama.cpp's ``/completion`` or an OpenAI-style ``/v1/completions``), and turns the
engine's text into an OpenAI chat completion — reasoning, content and tool calls — streamed or not; Anthropic's
Messages API is served from the same template and upstream (:mod:`.anthropic`). See docs/serving.md.

Needs the ``serve`` extra (``pip install 'autoparser[serve]'``: Starlette, uvicorn, httpx2); ``import autoparser``
never imports this package.

    from autoparser import ChatTemplate
    from autoparser.serve import ServeConfig, create_app

    app = create_app(ChatTemplate.from_pretrained("path/to/model"), ServeConfig("http://127.0.0.1:8080"))
    # any ASGI server; or serve(app, port=8000) with uvicorn
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from .app import ServeConfig, create_app
from .http.connections import DEFAULT_HEADER_TIMEOUT, DEFAULT_READ_TIMEOUT, timed_protocol
from .ops import collector
from .protocol import APIError, ChatRequest, apply_request, parse_chat_request
from .upstream import BOS_MODES, GRAMMAR_FIELDS, KINDS, Piece, Upstream, UpstreamError

SWITCH_INTERVAL = 0.001  # seconds (sys.setswitchinterval) while serving

__all__ = [
    "BOS_MODES",
    "GRAMMAR_FIELDS",
    "KINDS",
    "APIError",
    "ChatRequest",
    "Piece",
    "ServeConfig",
    "Upstream",
    "UpstreamError",
    "apply_request",
    "create_app",
    "parse_chat_request",
    "serve",
]


def serve(
    app: Any,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "info",
    *,
    header_timeout: float = DEFAULT_HEADER_TIMEOUT,
    read_timeout: float = DEFAULT_READ_TIMEOUT,
    workers: int = 1,
    http: str = "auto",
    loop: str = "auto",
) -> int:
    """Run ``app`` with uvicorn until interrupted; the exit status. The server's own log (``autoparser.serve``: the
    access line with its request id, upstream errors) goes to stderr at ``log_level``, in place of uvicorn's access
    log. A client that does not send a request's headers within ``header_timeout`` seconds, or pauses in sending its
    body longer than ``read_timeout``, gets a 408 and its connection closed (:mod:`.connections`; 0: no limit).

    ``workers`` > 1: this process binds the socket and forks that many worker processes that share it
    (:mod:`.workers`, POSIX); for metrics that add up across them, ``PROMETHEUS_MULTIPROC_DIR`` must name a directory
    before ``prometheus_client`` is first imported (the command line does so).

    ``http``: uvicorn's HTTP implementation (``auto``: httptools where installed, else h11); ``loop``: the event loop
    (``auto``: uvloop where installed, else asyncio's)."""
    import uvicorn

    _log_to_stderr(log_level)
    protocol = timed_protocol(header_timeout, read_timeout, http)
    # Requests are prepared in worker threads (.app): a thread that wants the interpreter waits for the one holding
    # it at most this long, so the event loop, waking for each token of every stream, waits 1 ms rather than the
    # default 5 behind each busy worker (bench/serve_stall.py)
    sys.setswitchinterval(SWITCH_INTERVAL)
    if workers == 1:
        # Full garbage collections only between replies (.collector): the app's lifespan runs them
        collector.install()
        uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=False, http=protocol, loop=loop)
        return 0
    from prometheus_client import multiprocess

    from .ops.workers import Supervisor, listen

    try:
        sock = listen(host, port)
    except OSError as err:
        logging.getLogger("autoparser.serve").error("cannot listen on %s:%d: %s", host, port, err.strerror or err)
        return 1

    def run(sock: Any) -> int:
        server = uvicorn.Server(uvicorn.Config(app, log_level=log_level, access_log=False, http=protocol, loop=loop))
        server.run(sockets=[sock])
        return 0 if server.started else 3

    def gone(pid: int) -> None:
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            multiprocess.mark_process_dead(pid)

    try:
        return Supervisor(run, sock, workers, on_exit=gone).run()
    finally:
        sock.close()


def _log_to_stderr(log_level: str) -> None:
    logger = logging.getLogger("autoparser")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s:     %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False
    logger.setLevel(log_level.upper())
