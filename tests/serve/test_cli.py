"""``autoparser serve`` on the command line, and the core staying free of the serve extra."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import autoparser.serve as serve_package
from autoparser import cli
from autoparser.serve import chunks, upstream


def test_the_command_lists_agree_with_the_package() -> None:
    assert cli._UPSTREAM_KINDS == upstream.KINDS
    assert tuple(upstream.GRAMMAR_FIELDS) == cli._GRAMMAR_FIELDS
    assert cli._REASONING_FIELDS == chunks.REASONING_FIELDS
    assert cli._BOS_MODES == upstream.BOS_MODES


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["serve", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "--upstream-kind" in out and "autoparser[serve]" in out and "vllm-structural-tag" in out


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Runs of the server, recorded instead of started."""
    runs: list[dict[str, Any]] = []
    monkeypatch.setattr(serve_package, "serve", lambda app, **options: runs.append({"app": app, **options}))
    return runs


def test_serve_a_bundled_template(started: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(
        ["serve", "Qwen3.5-4B", "--upstream", "http://127.0.0.1:8080", "--port", "8123", "--model-name", "qwen"]
    )
    assert code == 0
    (run,) = started
    assert (run["host"], run["port"]) == ("127.0.0.1", 8123)
    server = run["app"].state.autoparser
    assert server.model == "qwen" and server.upstream.endpoint == "http://127.0.0.1:8080/completion"
    assert "serving qwen on http://127.0.0.1:8123/v1" in capsys.readouterr().err
    cli.main(["serve", "Qwen3.5-4B", "--upstream", "http://127.0.0.1:8080"])
    assert started[-1]["app"].state.autoparser.model == "Qwen3.5-4B"


def test_serve_a_model_directory(tmp_path: Path, started: list[dict[str, Any]]) -> None:
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "chat_template": "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}",
                "bos_token": "<s>",
                "eos_token": "</s>",
            }
        )
    )
    code = cli.main(
        [
            "serve",
            str(tmp_path),
            "--upstream",
            "http://h:1/v1",
            "--upstream-kind",
            "openai",
            "--grammar-field",
            "vllm-lark",
            "--upstream-extra",
            '{"top_k": 3}',
            "--default-max-tokens",
            "64",
        ]
    )
    assert code == 0
    server = started[0]["app"].state.autoparser
    assert server.upstream.endpoint == "http://h:1/v1/completions"
    assert (server.upstream.grammar_field, server.upstream.extra) == ("vllm-lark", {"top_k": 3})
    assert server.upstream.bos_token == "<s>" and server.upstream.default_max_tokens == 64
    assert server.model == tmp_path.name


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--grammar-field", "vllm-lark"], "applies to --upstream-kind openai"),
        (["--upstream-extra", "{oops"], "not valid JSON"),
        (["--upstream-extra", "[1]"], "must be a JSON object"),
    ],
)
def test_bad_options(arguments: list[str], message: str, started: list, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["serve", "Qwen3.5-4B", "--upstream", "http://x", *arguments]) == 2
    assert message in capsys.readouterr().err and not started


def test_an_unknown_template(started: list, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["serve", "no-such-template", "--upstream", "http://x"]) == 2
    assert "no template file or bundled template" in capsys.readouterr().err


def test_without_the_serve_extra(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "autoparser.serve", None)  # import autoparser.serve raises ImportError
    assert cli.main(["serve", "Qwen3.5-4B", "--upstream", "http://x"]) == 1
    assert "pip install 'autoparser[serve]'" in capsys.readouterr().err


def test_the_core_does_not_import_the_serve_extra() -> None:
    code = (
        "import sys, autoparser, autoparser.cli; autoparser.ChatTemplate.load('Qwen3.5-4B').apply("
        "[{'role': 'user', 'content': 'x'}]).parse('y'); "
        "print(sorted(m for m in ('starlette', 'uvicorn', 'httpx2', 'anyio', 'autoparser.serve') if m in sys.modules))"
    )
    src = str(Path(serve_package.__file__).parents[2])
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": src, "AUTOPARSER_CACHE_DIR": "off"},
        check=True,
    )
    assert done.stdout.strip() == "[]"


def test_the_request_limits(started: list[dict[str, Any]]) -> None:
    """The limits' defaults are the package's; each option reaches the server (0: no body timeout)."""
    from autoparser.serve.http.body import RequestLimits

    cli.main(["serve", "Qwen3.5-4B", "--upstream", "http://127.0.0.1:8080"])
    assert started[-1]["app"].state.autoparser.limits == RequestLimits()
    options = ["--max-body-bytes", "1000", "--max-tools", "3", "--max-json-depth", "9", "--body-timeout", "0"]
    cli.main(["serve", "Qwen3.5-4B", "--upstream", "http://127.0.0.1:8080", *options])
    assert started[-1]["app"].state.autoparser.limits == RequestLimits(1000, 3, 9, None)
