"""Driving a real llama.cpp server (``llama-server``, built by .ci/llama_server.sh) from the tests: no dependencies
beyond the standard library.

* :func:`server_binary` finds the binary: ``$AUTOPARSER_LLAMA_SERVER``, else the build script's cache
  (``${AUTOPARSER_LLAMA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/autoparser-ci/llama-server}/bin/llama-server``).
* :class:`LlamaServer` starts it on a free loopback port with a model, waits for ``/health`` and stops it (by
  its own process id) on exit; its log is kept for failure messages.
* :func:`completion_body` is the body of a ``POST /completion`` for autoparser's ``ChatParams``: the prompt, the
  GBNF grammar, ``grammar_lazy``, ``grammar_triggers`` in llama.cpp's JSON form and ``preserved_tokens``, as the
  server reads them (tools/server/server-schema.cpp, server-common.h of the vendored llama.cpp):

  - ``grammar``: GBNF text. Without ``grammar_type`` it is a *user* grammar, which the sampler never pre-feeds
    with ``generation_prompt`` (autoparser's grammars start after the prompt, so that is what they need).
  - ``grammar_triggers``: ``[{"type": int, "value": str}]`` with llama.cpp's ``common_grammar_trigger_type``:
    0 token (then also ``"token": id``), 1 word, 2 pattern (searched), 3 pattern_full (anchored at both ends).
    A word that the vocabulary tokenizes to a single token becomes a token trigger, and must then be in
    ``preserved_tokens`` or the request is refused; ``grammar_lazy`` with no triggers is refused too.
  - ``preserved_tokens``: strings; each that is a single token is written into the reply even if it is a
    control token. Other control tokens are dropped from the text although the grammar saw them, so the
    template's role markers are worth preserving too (``preserve``).
  - the thinking tags: ``reasoning_budget_start_tag`` / ``reasoning_budget_end_tags`` with
    ``reasoning_budget_tokens: -1`` and the ``generation_prompt`` (so the server knows whether the prompt opened
    a reasoning block) hold a lazy grammar's triggers back inside reasoning (common/sampling.cpp: with a lazy
    grammar the reasoning-budget sampler is made even for an unlimited budget, and the grammar neither applies
    nor sees tokens while it is inside a block). Sent only when the prompt did not close the block.
* :func:`complete` and :func:`stream` post it, plainly or as server-sent events.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "EOG_NAMES",
    "TRIGGER_TYPES",
    "Completion",
    "LlamaServer",
    "complete",
    "completion_body",
    "markers_for",
    "preserve_for",
    "server_binary",
    "stream",
]

# llama.cpp's common_grammar_trigger_type (common/common.h), as the server's JSON carries it.
TRIGGER_TYPES = {"token": 0, "word": 1, "pattern": 2, "pattern_full": 3}
# Control tokens llama.cpp ends generation on by their text (src/llama-vocab.cpp), besides the model's eos/eot/eom.
EOG_NAMES = frozenset(
    {
        "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
        "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
        "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~[",
    }
)  # fmt: skip
# A whole tag, as vllm_support.markers_of reads them: <tool_call>, </think>, [TOOL_CALLS], <|im_end|>, <｜...｜>.
_MARKUP = re.compile(r"^(<[^<>\s]*>|\[[A-Z_/]+\]|<\|[^|\s]*\|>|<｜[^｜]*｜>)$")
# Role and control markers as a template's source spells them.
_ROLE_MARKERS = re.compile(r"<\|[A-Za-z0-9_]+\|>|\[/?[A-Z][A-Z_]+\]|<｜[^｜\s]+｜>")


def server_binary() -> Path | None:
    """The llama-server binary the build script made (or ``$AUTOPARSER_LLAMA_SERVER``), if it is there."""
    explicit = os.environ.get("AUTOPARSER_LLAMA_SERVER")
    if explicit:
        return Path(explicit) if Path(explicit).is_file() else None
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "autoparser-ci" / "llama-server"
    binary = Path(os.environ.get("AUTOPARSER_LLAMA_DIR") or cache) / "bin" / "llama-server"
    return binary if binary.is_file() else None


def markers_for(template: Any, params: Any = None, extra: Iterable[str] = ()) -> list[str]:
    """The markers a model of this template has as single tokens (whole tags only), longest first: the analysis's
    markers, ``params``' preserved tokens and word triggers, the end-of-turn markers, the BOS/EOS text and the role
    markers spelled in the template's source."""
    analysis = template.analysis
    fmt = analysis.tools.format
    candidates = {
        analysis.reasoning.start,
        analysis.reasoning.end,
        analysis.content.start,
        analysis.content.end,
        fmt.section_start,
        fmt.section_end,
        fmt.per_call_start,
        fmt.per_call_end,
        *analysis.preserved_tokens,
        *analysis.end_of_turn,
        template.bos_token,
        template.eos_token,
        *_ROLE_MARKERS.findall(template.source),
        *extra,
    }
    if params is not None:
        candidates.update(params.preserved_tokens)
        candidates.update(t.value for t in params.grammar_triggers if t.type == "word")
    return sorted({c.strip() for c in candidates if c and _MARKUP.match(c.strip())}, key=lambda m: (-len(m), m))


def preserve_for(template: Any, params: Any = None) -> list[str]:
    """What to preserve besides ``params.preserved_tokens``: the template's control markers (:func:`markers_for`),
    but those that end generation (its end-of-turn markers and llama.cpp's :data:`EOG_NAMES`: preserved, an end
    token such as ``<|eom_id|>`` would be written at the end of the reply)."""
    end = {m.strip() for m in template.analysis.end_of_turn}
    return [m for m in markers_for(template, params) if m not in end and m not in EOG_NAMES]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LlamaServer:
    """``llama-server`` serving ``model`` on a free loopback port, for a ``with`` block."""

    binary: Path
    model: Path
    context: int = 8192
    threads: int = 1  # a 64-wide model gains nothing from more, and spinning threads stall on a busy machine
    extra_args: Sequence[str] = ()
    startup_timeout: float = 120.0
    url: str = ""
    load_seconds: float = 0.0
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _log: Any = field(default=None, repr=False)

    def __enter__(self) -> LlamaServer:
        for _attempt in range(3):  # a port taken between choosing and binding: choose again
            port = _free_port()
            self._log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)
            args = [
                str(self.binary),
                "--model", str(self.model),
                "--host", "127.0.0.1",
                "--port", str(port),
                "--ctx-size", str(self.context),
                "--parallel", "1",
                "--threads", str(self.threads),
                "--threads-batch", str(self.threads),
                "--no-warmup",
                "--no-webui",
                *self.extra_args,
            ]  # fmt: skip
            start = time.monotonic()
            self._process = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            self.url = f"http://127.0.0.1:{port}"
            if self._wait_healthy():
                self.load_seconds = time.monotonic() - start
                return self
            self._stop()
            if "bind" not in self.log():
                break
        raise RuntimeError(f"llama-server did not come up:\n{self.log()[-4000:]}")

    def _wait_healthy(self) -> bool:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as reply:
                    if reply.status == 200:
                        return True
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass  # not listening yet, or 503 while the model loads
            time.sleep(0.05)
        return False

    def log(self) -> str:
        if self._log is None:
            return ""
        return Path(self._log.name).read_text(encoding="utf-8", errors="replace")

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()  # by its own pid
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)

    def __exit__(self, *exc: object) -> None:
        self._stop()
        if self._log is not None:
            self._log.close()
            with contextlib.suppress(OSError):
                os.unlink(self._log.name)


def completion_body(
    params: Any, *, preserve: Iterable[str] = (), thinking: bool = True, **sampling: Any
) -> dict[str, Any]:
    """The ``POST /completion`` body for autoparser's ``ChatParams`` (see the module's doc); ``sampling`` adds or
    overrides fields (``n_predict``, ``temperature``, ``seed``, ``stop``, ``logit_bias``, ``stream``...).

    ``preserve``: the template's other control tokens (role markers such as ``[INST]`` or ``<|im_start|>``), kept
    in the reply too. llama.cpp drops a control token from the text unless it is preserved, while the grammar
    has seen its text: a model that writes ``get_weather[INST][ARGS]`` in text the grammar allows would hand the
    parser ``get_weather[ARGS]``, a call without its marker. ``thinking`` passes the thinking tags (for a lazy
    grammar, so triggers inside reasoning do not fire)."""
    body: dict[str, Any] = {"prompt": params.prompt}
    if params.grammar:
        body["grammar"] = params.grammar
        body["grammar_lazy"] = params.grammar_lazy
        triggers = []
        for trigger in params.grammar_triggers:
            if trigger.type not in TRIGGER_TYPES or trigger.type == "token":
                raise ValueError(f"no llama.cpp JSON form for a {trigger.type!r} trigger without its token id")
            triggers.append({"type": TRIGGER_TYPES[trigger.type], "value": trigger.value})
        if triggers:
            body["grammar_triggers"] = triggers
    preserved = list(dict.fromkeys([*params.preserved_tokens, *preserve]))
    if preserved:
        body["preserved_tokens"] = preserved
    if thinking and params.grammar_lazy and _reasoning_open(params):
        body["reasoning_budget_tokens"] = -1
        body["reasoning_budget_start_tag"] = params.thinking_start_tag
        body["reasoning_budget_end_tags"] = [params.thinking_end_tag]
        body["generation_prompt"] = params.generation_prompt
    body.update(sampling)
    return body


def _reasoning_open(params: Any) -> bool:
    """Whether the reply may hold a reasoning block in which triggers must not fire: the template has thinking
    tags and the generation prompt did not close the block (thinking disabled). llama.cpp's reasoning-budget
    sampler opens a block at *any* start tag in the output, while autoparser's parser reads one only where the
    reply starts (the prompt opened it, or the model opens it first thing): with thinking disabled, a start tag
    the model writes later is content to the parser, and a trigger after it must fire."""
    start, end = params.thinking_start_tag, params.thinking_end_tag
    if not (start and end):
        return False
    prompt = params.generation_prompt
    return prompt.rfind(end) < prompt.rfind(start) or start not in prompt


@dataclass
class Completion:
    """What llama.cpp's ``/completion`` returned: the text, the pieces it came in (one per streamed event) and
    the final object (``stop_type``, ``tokens_predicted``, ``generation_settings``, ``tokens``...)."""

    text: str
    pieces: list[str]
    final: dict[str, Any]
    seconds: float


def _post(url: str, body: Mapping[str, Any], timeout: float) -> Any:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode("utf-8"), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        return urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as error:
        detail = error.read().decode("utf-8", errors="replace")
        raise AssertionError(f"llama-server answered {error.code}: {detail}") from None


def complete(server: LlamaServer, body: Mapping[str, Any], timeout: float = 300.0) -> Completion:
    start = time.monotonic()
    with _post(f"{server.url}/completion", {**body, "stream": False}, timeout) as reply:
        final = json.loads(reply.read().decode("utf-8"))
    return Completion(final["content"], [final["content"]], final, time.monotonic() - start)


def _events(reply: Any) -> Iterator[dict[str, Any]]:
    for raw in reply:
        line = raw.decode("utf-8").rstrip("\r\n")
        if line.startswith("data: "):
            data = line[len("data: ") :]
            if data.strip() == "[DONE]":
                return
            yield json.loads(data)
        elif line.startswith("error: "):
            raise AssertionError(f"llama-server stream error: {line}")


def stream(server: LlamaServer, body: Mapping[str, Any], timeout: float = 300.0) -> Completion:
    start = time.monotonic()
    pieces: list[str] = []
    final: dict[str, Any] = {}
    with _post(f"{server.url}/completion", {**body, "stream": True}, timeout) as reply:
        for event in _events(reply):
            if "error" in event:
                raise AssertionError(f"llama-server stream error: {event['error']}")
            pieces.append(event.get("content", ""))
            if event.get("stop"):
                final = event
    return Completion("".join(pieces), pieces, final, time.monotonic() - start)
