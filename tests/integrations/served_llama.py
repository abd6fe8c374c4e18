"""What the end-to-end tests of ``autoparser serve`` share (test_serve_llama.py for chat completions,
test_serve_llama_responses.py and test_serve_llama_anthropic.py): a real llama.cpp server with one format's tiny
random-weight model (test_llama_server.py's formats, tiny_gguf.py's model: no download), and ``autoparser serve`` in
front of it with a client API key.

Importing this module skips the importing test module when there is no llama-server binary, and fails it when
AUTOPARSER_REQUIRE_LLAMA says there must be one (.ci/run's llama.cpp step, which builds it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from .llama_server import LlamaServer, server_binary

pytest.importorskip("gguf")
pytest.importorskip("starlette")

from autoparser.serve import ServeConfig, create_app
from tests.serve.double import LoopbackServer

from .tiny_gguf import TinyModel, write_tiny_gguf

BINARY = server_binary()
if BINARY is None:
    if os.environ.get("AUTOPARSER_REQUIRE_LLAMA"):
        raise RuntimeError("AUTOPARSER_REQUIRE_LLAMA is set but there is no llama-server: run .ci/llama_server.sh")
    pytest.skip("no llama-server here; .ci/run builds one (.ci/llama_server.sh) and runs this", allow_module_level=True)

from .test_llama_server import MESSAGES, TOOLS, WORDS, template_of  # noqa: E402

KEY = "sk-e2e-key"  # the server runs with authentication on: every client sends this key


@contextmanager
def serve_format(name: str, directory: Path, upstream_extra: Mapping[str, Any]) -> Iterator[tuple[TinyModel, str]]:
    """One format's tiny model in llama-server, ``autoparser serve`` in front of it: the model and the server's URL.

    The model's vocabulary holds every marker the prompts and grammars of both tool choices use, so that the
    grammar can make the random weights write them."""
    template = template_of(name)
    requests = [template.apply(MESSAGES, tools=TOOLS, tool_choice=c) for c in ("auto", "required")]
    extra = [m for p in requests for m in (*p.preserved_tokens, *(t.value for t in p.grammar_triggers))]
    model = write_tiny_gguf(template, directory / "tiny.gguf", extra_markers=extra, words=WORDS)
    assert BINARY is not None
    with LlamaServer(BINARY, model.path) as engine:
        config = ServeConfig(engine.url, model_name=name, upstream_extra=dict(upstream_extra), api_key=KEY)
        with LoopbackServer(create_app(template, config)) as server:
            yield model, server.url
