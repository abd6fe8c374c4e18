"""The server's configuration (:class:`ServeConfig`: the command line's options) and what every request reads of it
(:class:`Server`: the analysed template, the upstream, the limits, the worker threads), made once per app."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2

from ..api import ChatTemplate
from ..cache import DEFAULT_CACHE_MB
from ..template.environment import variables_read
from .http.body import RequestLimits
from .http.security import Scrubber, scrub_logs, split_credentials
from .upstream import Upstream, grammar_fields, make_upstream

__all__ = ["ServeConfig", "Server", "ServerInfo"]


@dataclass(frozen=True)
class ServeConfig:
    """How the server reaches its upstream (the command line's options; see docs/serving.md)."""

    upstream: str
    upstream_kind: str = "llama.cpp"
    grammar_field: str = "none"
    model_name: str | None = None
    upstream_model: str | None = None
    upstream_api_key: str | None = None
    default_max_tokens: int | None = None
    bos: str = "auto"
    upstream_extra: dict[str, Any] = field(default_factory=dict)
    upstream_timeout: float | None = 600.0  # seconds without a byte from the upstream; None: no limit
    reasoning_field: str = "reasoning_content"  # the reply's reasoning field: chunks.REASONING_FIELDS
    api_key: str | None = None  # clients must send "Authorization: Bearer <api_key>" (health and metrics stay open)
    allowed_origins: tuple[str, ...] = ()  # CORS: the browser origins allowed ("*": any); none: CORS off
    host: str = "127.0.0.1"  # where the server listens: on loopback, only loopback Host headers are answered
    allowed_hosts: tuple[str, ...] = ()  # further Host names answered on loopback (a proxy that keeps its Host)
    # What one request may be (body.RequestLimits): 413 past the size, 400 past the tools or the depth, 408 when
    # the body stops arriving
    max_body_bytes: int = RequestLimits.max_body_bytes
    max_tools: int = RequestLimits.max_tools
    max_json_depth: int = RequestLimits.max_json_depth
    body_timeout: float | None = RequestLimits.body_timeout
    cache_mb: float = DEFAULT_CACHE_MB  # the parser and grammar caches' memory budget (the process's: autoparser.cache)
    # Streamed replies read straight off their connection (.direct) rather than through the httpx client: None,
    # wherever the upstream's URL allows it (http or https, no proxy); False: always through the client
    direct_streams: bool | None = None
    # The key of the Messages API's thinking signatures (anthropic.signatures); None: drawn at random when the app
    # is made (shared by --workers, not by restarts or other servers)
    signature_key: str | None = None


class Server:
    """What every request reads (never writes): the template, the upstream, the model's name."""

    def __init__(self, template: ChatTemplate, config: ServeConfig, client: httpx2.AsyncClient) -> None:
        templates = list(template.templates.values())
        self.template = template
        self.model = config.model_name or template.name.removesuffix(".jinja")
        self.template_vars = frozenset().union(*(variables_read(t.source) for t in templates))
        end_of_turn: list[str] = []
        next_turn: list[str] = []
        for one in templates:  # analysed here, once, rather than by the first request
            end_of_turn += [m.strip() for m in one.analysis.end_of_turn if m.strip() and m.strip() not in end_of_turn]
            # What would open the next turn (a model that skips its end marker); not "</s>" guessed for an unknown
            # EOS (it is also HTML)
            next_turn += [m.strip() for m in one.analysis.stop_markers if m.strip() not in ("", "</s>", *next_turn)]
        self.client = client
        # The URL's user and password become a header: no message, /health or log line can show them
        credentials = split_credentials(config.upstream, config.upstream_api_key)
        self.scrubber = Scrubber(credentials.secrets)
        scrub_logs(credentials.secrets)
        self.upstream: Upstream = make_upstream(
            config.upstream_kind,
            credentials.url,
            client,
            grammar_field=config.grammar_field,
            model=config.upstream_model,
            bos_token=template.bos_token,
            end_of_turn=tuple(end_of_turn),
            next_turn=tuple(m for m in next_turn if m not in end_of_turn),
            bos=config.bos,
            default_max_tokens=config.default_max_tokens,
            extra=config.upstream_extra,
            api_key=config.upstream_api_key,
            direct=config.direct_streams,
        )
        self.upstream.headers.update(credentials.headers)
        self.created = int(time.time())
        self.reasoning_field = config.reasoning_field
        # The worker threads that prepare requests and parse whole replies: the event loop only moves bytes, so a
        # 1,000-tool request does not hold up other streams. Large requests (bodies past LARGE_REQUEST bytes) get
        # one thread: Python runs one thread at a time, so more would add no throughput, only threads the event
        # loop must wait behind for the interpreter; the others get four of their own, so that a small request
        # never queues behind a large one
        self.cpu = anyio.CapacityLimiter(4)
        self.cpu_large = anyio.CapacityLimiter(1)
        self.replying = 0  # requests being prepared or answered now (full garbage collections wait for none)
        self.limits = RequestLimits(config.max_body_bytes, config.max_tools, config.max_json_depth, config.body_timeout)
        self.info = ServerInfo(self.model, self.template_vars, self.limits.max_tools)
        self.grammar_fields = grammar_fields(self.upstream)


@dataclass(frozen=True)
class ServerInfo:
    """What a protocol's request reader may need to know of the server."""

    model: str
    template_vars: frozenset[str]
    max_tools: int
