"""docs/batch.md's command and Python examples run as written, and give what the page shows."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from autoparser.cli import main

from .docs import example, shown_output

pytest.importorskip("pyarrow")


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder holding the page's input files."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "replies.jsonl").write_text(example("replies.jsonl"), encoding="utf-8")
    (tmp_path / "tools.json").write_text(example("tools.json"), encoding="utf-8")
    return tmp_path


def test_the_command(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = shlex.split(example("command"))
    assert argv[0] == "autoparser"
    assert main(argv[1:]) == 3
    err = capsys.readouterr().err
    assert err.startswith("autoparser: 4 rows to messages.jsonl, 1 failed (see their 'error' field); ")
    written = (folder / "messages.jsonl").read_text(encoding="utf-8").splitlines()
    generated = re.compile(r'"id":"call_[A-Za-z0-9]{24}"')
    assert [generated.sub('"id":"call_..."', line) for line in written] == shown_output()


def test_the_python_api(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exec(example("api"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "1 {'name': 'get_weather', 'arguments': '{\"city\": \"Paris\"}'} ['complete']"
    assert printed[1] == "{'role': 'assistant', 'content': 'Hi!'}"
    assert printed[2] == "[['complete'], []]"
    assert printed[3] == "4 1"
    assert len(printed) == 4
    assert (folder / "messages.parquet").is_file() and not (folder / "messages.parquet.parts").exists()
