"""``autoparser serve``'s memory and connection limits on the command line: ``--cache-mb``, ``--header-timeout``,
``--read-timeout`` reach the library and uvicorn; a negative value is refused."""

from __future__ import annotations

from typing import Any

import pytest

import autoparser.serve as serve_package
from autoparser import cli
from autoparser.cache import DEFAULT_CACHE_MB, MIB, cache_budget, set_cache_budget


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> Any:
    runs: list[dict[str, Any]] = []
    monkeypatch.setattr(serve_package, "serve", lambda app, **options: runs.append({"app": app, **options}))
    before = cache_budget()
    yield runs
    set_cache_budget(before / MIB)


def test_the_limits_reach_the_server(started: list[dict[str, Any]]) -> None:
    assert cli.main(["serve", "Qwen3.5-4B", "--upstream", "http://127.0.0.1:8080"]) == 0
    assert cache_budget() == DEFAULT_CACHE_MB * MIB
    assert (started[-1]["header_timeout"], started[-1]["read_timeout"]) == (10.0, 30.0)
    arguments = ["--cache-mb", "48", "--header-timeout", "3", "--read-timeout", "0"]
    assert cli.main(["serve", "Qwen3.5-4B", "--upstream", "http://127.0.0.1:8080", *arguments]) == 0
    assert cache_budget() == 48 * MIB
    assert (started[-1]["header_timeout"], started[-1]["read_timeout"]) == (3.0, 0.0)


@pytest.mark.parametrize("option", ["--cache-mb", "--header-timeout", "--read-timeout"])
def test_a_negative_limit_is_refused(option: str, started: list, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["serve", "Qwen3.5-4B", "--upstream", "http://x", option, "-1"]) == 2
    assert f"{option} must be a number >= 0" in capsys.readouterr().err and not started
