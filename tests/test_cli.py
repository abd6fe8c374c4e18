"""The command line: ``autoparser templates`` and ``autoparser analyze``, run in-process via ``main``."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from autoparser import cli
from autoparser.cli import main, visible

from .support import llg


@pytest.fixture(autouse=True)
def _plain_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep rich from emitting colour codes whatever the surrounding environment asks for."""
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_visible_escapes_whitespace() -> None:
    assert visible("<tool_call>\n") == '"<tool_call>\\n"'
    assert visible("a\r\tb") == '"a\\r\\tb"'
    assert visible("") in {"—", "(none)"}


def test_templates_lists_bundled_names(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "templates")
    assert code == 0
    assert err == ""
    lines = out.splitlines()
    assert "Qwen3-Coder" in lines
    assert len(lines) == 75
    assert lines == sorted(lines)


def test_templates_via_python_dash_m() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "autoparser", "templates"], capture_output=True, text=True, check=False, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "Qwen3-Coder" in proc.stdout.splitlines()


def test_analyze_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "analyze", "Qwen3-Coder", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["tools"]["format"]["mode"] == "TAG_WITH_TAGGED"
    assert data["tools"]["format"]["per_call_start"] == "<tool_call>\n"


def test_analyze_accepts_jinja_suffix(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "analyze", "Qwen3-Coder.jinja", "--json")
    assert code == 0
    assert json.loads(out)["template"] == "Qwen3-Coder.jinja"


def test_analyze_human_report_shows_whitespace(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "analyze", "Qwen3-Coder")
    assert code == 0
    assert err == ""
    assert '"<tool_call>\\n"' in out  # a visible backslash-n, not a line break
    assert '"<tool_call>\n' not in out
    assert "TAG_WITH_TAGGED" in out
    assert "Qwen3-Coder" in out
    assert "\x1b[" not in out  # not a terminal: plain text


def test_analyze_human_report_keeps_square_brackets(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "analyze", "mistralai-Mistral-Nemo-Instruct-2407")
    assert code == 0
    assert "[TOOL_CALLS]" in out
    assert "JSON_NATIVE" in out


def test_analyze_human_report_brackets_that_look_like_markup(capsys: pytest.CaptureFixture[str]) -> None:
    # "[/THINK]" is a closing tag to rich's markup parser; it must still print literally.
    code, out, _ = _run(capsys, "analyze", "mistralai-Ministral-3-14B-Reasoning-2512")
    assert code == 0
    assert '"[/THINK]"' in out


def test_analyze_file_path(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    source = resources.files("autoparser.templates").joinpath("Qwen3-Coder.jinja").read_text(encoding="utf-8")
    path = tmp_path / "my-template.jinja"
    path.write_text(source, encoding="utf-8")
    code, out, _ = _run(capsys, "analyze", str(path), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["template"] == "my-template.jinja"  # same source as a bundled template, but named after the file
    assert data["tools"]["format"]["mode"] == "TAG_WITH_TAGGED"


def test_analyze_unknown_name(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "analyze", "no-such-template")
    assert code == 2
    assert out == ""
    assert "no-such-template" in err
    assert "autoparser templates" in err
    assert len(err.strip().splitlines()) == 1


def test_analyze_syntax_error(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    path = tmp_path / "broken.jinja"
    path.write_text("{% for m in messages %}{{ m.content }}", encoding="utf-8")
    code, out, err = _run(capsys, "analyze", str(path))
    assert code == 1
    assert out == ""
    assert "broken.jinja" in err
    assert "syntax error" in err
    assert "Traceback" not in err


def test_parse_example_output(capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).parent.parent / "examples"
    code = cli.main(["parse", "Qwen3.5-4B", str(root / "qwen3.5-output.txt"), "--tools", str(root / "tools.json")])
    assert code == 0
    message = json.loads(capsys.readouterr().out)
    assert message["content"] == "Let me check that for you."
    assert message["reasoning_content"].startswith("The user wants the weather in Paris")
    call = message["tool_calls"][0]["function"]
    assert call["name"] == "get_weather" and json.loads(call["arguments"]) == {"city": "Paris", "days": 3}


def test_parse_stream_prints_deltas_that_add_up(capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).parent.parent / "examples"
    args = ["parse", "Qwen3.5-4B", str(root / "qwen3.5-output.txt"), "--tools", str(root / "tools.json")]
    assert cli.main([*args, "--stream", "--chunk", "3"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    content = "".join(d.get("content", "") for d in lines)
    arguments = "".join(c["function"].get("arguments", "") for d in lines for c in d.get("tool_calls", []))
    assert content == "Let me check that for you."
    assert json.loads(arguments) == {"city": "Paris", "days": 3}
    starts = [c for d in lines for c in d.get("tool_calls", []) if "id" in c]
    assert len(starts) == 1 and starts[0]["id"].startswith("call_") and starts[0]["function"]["name"] == "get_weather"


def test_parse_reads_stdin_and_reports_bad_tools(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("Hello there"))
    assert cli.main(["parse", "Qwen3-Coder"]) == 0
    assert json.loads(capsys.readouterr().out)["content"] == "Hello there"
    bad = tmp_path / "tools.json"
    bad.write_text('{"not": "a list"}', encoding="utf-8")
    assert cli.main(["parse", "Qwen3-Coder", "--tools", str(bad)]) == 1
    assert "list" in capsys.readouterr().err


def test_grammar_command_prints_grammar_and_triggers(capsys: pytest.CaptureFixture[str]) -> None:
    tools = str(Path(__file__).parent.parent / "examples" / "tools.json")
    assert cli.main(["grammar", "Qwen3-Coder", "--tools", tools]) == 0
    out = capsys.readouterr().out
    assert out.startswith(("root ::=", "integer ::=")) or "root ::=" in out
    assert '# trigger word: "<tool_call>"' in out and "# preserved tokens:" in out
    assert cli.main(["grammar", "Qwen3-Coder"]) == 0
    assert "no grammar" in capsys.readouterr().out
    assert cli.main(["grammar", "meta-llama-Llama-3.1-8B-Instruct", "--tools", tools]) == 0
    assert "# trigger pattern:" in capsys.readouterr().out


def test_grammar_command_prints_lark(capsys: pytest.CaptureFixture[str]) -> None:
    tools = str(Path(__file__).parent.parent / "examples" / "tools.json")
    assert cli.main(["grammar", "Qwen3.5-4B", "--tools", tools, "--format", "lark", "--tool-choice", "required"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("start: root\n") and "%json" in out and "// applies to the whole output" in out
    llg.compile_lark(out)  # the whole output, comments included, is a grammar llguidance loads


def test_parse_reports_a_degraded_parser_on_stderr(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import autoparser.api as api

    real = api.build_parser

    def failing(analysis: object, request: object) -> object:
        if getattr(request, "tools_enabled", False):
            raise api.GrammarError("until_one_of() needs non-empty string delimiters")
        return real(analysis, request)  # type: ignore[arg-type]

    monkeypatch.setattr(api, "build_parser", failing)
    output = tmp_path / "out.txt"
    output.write_text("Hello.", encoding="utf-8")
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "function": {"name": "f", "parameters": {}}}]), encoding="utf-8")
    code, out, err = _run(capsys, "parse", "Qwen3-Coder", str(output), "--tools", str(tools))
    assert code == 0
    assert json.loads(out)["content"] == "Hello."
    assert err.startswith("autoparser: warning: ") and "tool calls are not parsed" in err
