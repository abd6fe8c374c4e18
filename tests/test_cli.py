"""The command line, run in-process via ``main`` and, where the behaviour depends on the process (a closed pipe),
as a real subprocess."""

from __future__ import annotations

import argparse
import io
import json
import re
import shlex
import signal
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from autoparser import bundled_templates, cli
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
    assert len(lines) == len(bundled_templates()) == 134
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


def test_analyze_human_report_shows_what_the_parser_reads_beyond_markers(capsys: pytest.CaptureFixture[str]) -> None:
    # The implied closer, the id format and the stop markers (Mistral), the dict syntax (Gemma 4) and the pythonic
    # values (Gemma 3n): everything the analysis learned that changes how output is read.
    code, out, _ = _run(capsys, "analyze", "mistralai-Mistral-Nemo-Instruct-2407")
    assert code == 0
    assert re.search(r"implied section end\s*│\s*\"\[/TOOL_CALLS\]\"", out)
    assert re.search(r"generated ids\s*│\s*alnum9", out)
    assert 'Stop markers: "[INST]"' in out
    code, out, _ = _run(capsys, "analyze", "google-gemma-4-31B-it")
    assert code == 0
    assert re.search(r"string open\s*│\s*\"<\|\"\|>\"", out)
    assert re.search(r"null\s*│\s*\"None\"", out)
    assert 'End of turn: "<turn|>"' in out
    code, out, _ = _run(capsys, "analyze", "google-ai-edge-LiteRT-LM-Gemma3n")
    assert code == 0
    assert re.search(r"string quote\s*│\s*bare", out)


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
    assert out.startswith("%llguidance {}\nstart: root\n") and "%json" in out
    assert "// applies to the whole output" in out
    llg.compile_lark(out)  # the whole output, comments included, is a grammar llguidance loads


def test_grammar_command_prints_the_whole_output_grammar(capsys: pytest.CaptureFixture[str]) -> None:
    tools = str(Path(__file__).parent.parent / "examples" / "tools.json")
    assert cli.main(["grammar", "Qwen3.5-4B", "--tools", tools, "--format", "lark", "--full"]) == 0
    out = capsys.readouterr().out
    assert "// applies to the whole output" in out and "// trigger" not in out
    grammar = llg.compile_lark(out)
    assert llg.matches(grammar, "Let me think.</think>\n\nHello!")  # free text: no call forced
    assert not llg.matches(grammar, "Hello!")  # the prompt opened a reasoning block: the model closes it first
    assert cli.main(["grammar", "Qwen3.5-4B", "--tools", tools]) == 0
    assert "# trigger word" in capsys.readouterr().out


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


# --- polish: help, broken pipes, errors that name their file, Hugging Face configs -----------------------------


def _actions(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.Action]]:
    """Every action of the parser and of its subcommands, with the command it belongs to."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += [(f"{name} {a.dest}", a) for a in sub._actions]
        else:
            found.append((action.dest, action))
    return found


def test_every_option_has_help() -> None:
    actions = _actions(cli.build_parser())
    assert len(actions) > 20
    missing = [name for name, action in actions if not action.help or action.help == argparse.SUPPRESS]
    assert not missing, f"options without help text: {missing}"
    for command in ("analyze", "parse", "grammar", "serve"):  # and the help renders
        text = subprocess.run(
            [sys.executable, "-m", "autoparser", command, "--help"], capture_output=True, text=True, timeout=120
        ).stdout
        assert "--template-name" in text and "tokenizer_config.json" in text


@pytest.fixture(scope="module")
def big_output(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model output far larger than a pipe's buffer, so the writer meets a closed pipe."""
    path = tmp_path_factory.mktemp("pipe") / "output.txt"
    path.write_text("word " * 300_000, encoding="utf-8")
    return path


def test_quiet_when_the_reader_closes_the_pipe_early(big_output: Path) -> None:
    """A reader that takes one line and goes away: no traceback, the status of a process ended by SIGPIPE."""
    for extra in ([], ["--stream", "--chunk", "64"]):
        proc = subprocess.Popen(
            [sys.executable, "-m", "autoparser", "parse", "Qwen3-Coder", str(big_output), *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.readline()
        proc.stdout.close()  # the reader is gone; the writer still has megabytes to write
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=120)
        assert first.startswith(b"{")
        assert err == "", err
        assert code == 128 + signal.SIGPIPE


def test_piped_into_head(big_output: Path) -> None:
    """The shell pipeline users write: `autoparser ... | head -1`."""
    command = f"{shlex.quote(sys.executable)} -m autoparser parse Qwen3-Coder {shlex.quote(str(big_output))} | head -1"
    proc = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120, check=False)
    assert proc.stdout == "{\n"
    assert proc.stderr == "" and proc.returncode == 0


def test_bad_json_names_file_line_and_column(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text('[\n  {"type": "function",, }\n]', encoding="utf-8")
    code, out, err = _run(capsys, "parse", "Qwen3-Coder", "-", "--tools", str(tools))
    assert (code, out) == (1, "")
    assert f"--tools file {tools}, line 2, column 23: invalid JSON" in err and "Traceback" not in err
    schema = tmp_path / "schema.json"
    schema.write_text('{"type": "object"', encoding="utf-8")
    code, _, err = _run(capsys, "grammar", "Qwen3-Coder", "--json-schema", str(schema))
    assert code == 1 and f"--json-schema file {schema}, line 1, column 18" in err
    schema.write_text("[1]", encoding="utf-8")
    code, _, err = _run(capsys, "grammar", "Qwen3-Coder", "--json-schema", str(schema))
    assert code == 1 and "must hold a JSON object" in err
    code, _, err = _run(capsys, "parse", "Qwen3-Coder", str(tmp_path / "missing.txt"))
    assert code == 1 and str(tmp_path / "missing.txt") in err and "No such file" in err


def test_template_errors_name_the_path(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "sub" / "broken.jinja"
    path.parent.mkdir()
    path.write_text("Hi\n{% for m in messages %}{{ m.content }}", encoding="utf-8")
    code, _, err = _run(capsys, "analyze", str(path))
    assert code == 1 and err.startswith(f"autoparser: error: {path}: ") and "line 2" in err
    code, _, err = _run(capsys, "parse", str(path), "-")
    assert code == 1 and str(path) in err and "Traceback" not in err
    code, _, err = _run(capsys, "analyze", str(tmp_path / "nope" / "t.jinja"))
    assert code == 2 and "no such file or directory" in err


def test_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "analyze", "qwen3-coderr")
    assert code == 2 and "did you mean 'Qwen3-Coder'?" in err and len(err.strip().splitlines()) == 1
    code, _, err = _run(capsys, "parse", "Hermes-3", "-")
    assert code == 2 and "'NousResearch-Hermes-3-Llama-3.1-8B-tool_use'" in err
    code, _, err = _run(capsys, "analyze", "zzzzzzzz")
    assert code == 2 and "did you mean" not in err and "autoparser templates" in err


def test_analyze_fails_clearly_when_no_probe_renders(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    raising = tmp_path / "raising.jinja"
    raising.write_text('{{ raise_exception("This model is not supported") }}', encoding="utf-8")
    empty = tmp_path / "empty.jinja"
    empty.write_text("{# renders nothing #}", encoding="utf-8")
    for path, words in ((raising, "This model is not supported"), (empty, "shows its messages' content")):
        for extra in ([], ["--json"]):
            code, out, err = _run(capsys, "analyze", str(path), *extra)
            assert (code, out) == (1, "")
            assert words in err and "nothing to analyze" in err and str(path) in err
            assert len(err.strip().splitlines()) == 1


_QWEN = resources.files("autoparser.templates").joinpath("Qwen3-Coder.jinja").read_text(encoding="utf-8")
_HERMES = (
    resources.files("autoparser.templates")
    .joinpath("NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja")
    .read_text(encoding="utf-8")
)


def test_tokenizer_config_as_template(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = tmp_path / "tokenizer_config.json"
    added = {"__type": "AddedToken", "content": "<|endoftext|>", "special": True}
    config.write_text(json.dumps({"chat_template": _QWEN, "bos_token": None, "eos_token": added}), encoding="utf-8")
    code, out, _ = _run(capsys, "analyze", str(config), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["template"] == "tokenizer_config.json" and data["tools"]["format"]["mode"] == "TAG_WITH_TAGGED"
    tmpl = cli._load(str(config))
    assert (tmpl.source, tmpl.bos_token, tmpl.eos_token) == (_QWEN, "", "<|endoftext|>")
    output = tmp_path / "output.txt"
    output.write_text("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>")
    tools = str(Path(__file__).parent.parent / "examples" / "tools.json")
    code, out, _ = _run(capsys, "parse", str(config), str(output), "--tools", tools)
    assert code == 0
    call = json.loads(out)["tool_calls"][0]["function"]
    assert (call["name"], json.loads(call["arguments"])) == ("get_weather", {"city": "Paris"})


def test_named_templates_and_template_name(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = tmp_path / "tokenizer_config.json"
    named = [{"name": "default", "template": _QWEN}, {"name": "tool_use", "template": _HERMES}]
    config.write_text(json.dumps({"chat_template": named, "bos_token": "<s>"}), encoding="utf-8")
    code, out, _ = _run(capsys, "analyze", str(config), "--json")
    assert code == 0 and json.loads(out)["tools"]["format"]["mode"] == "TAG_WITH_TAGGED"  # "default"
    code, out, _ = _run(capsys, "analyze", str(config), "--template-name", "tool_use", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["template"] == "tokenizer_config.json:tool_use" and data["tools"]["format"]["mode"] == "JSON_NATIVE"
    assert cli._load(str(config), "tool_use").bos_token == "<s>"
    code, out, err = _run(capsys, "analyze", str(config), "--template-name", "rag")
    assert (code, out) == (1, "") and "'rag'" in err and "'default', 'tool_use'" in err
    config.write_text(json.dumps({"chat_template": named[1:]}), encoding="utf-8")
    code, _, err = _run(capsys, "analyze", str(config))
    assert code == 1 and "--template-name" in err and "'tool_use'" in err
    code, _, err = _run(capsys, "analyze", "Qwen3-Coder", "--template-name", "tool_use")
    assert code == 2 and "--template-name" in err


def test_chat_template_files_and_model_directories(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A processor's chat_template.json, and a model directory (chat_template.jinja beside tokenizer_config.json,
    extra named templates in additional_chat_templates/)."""
    processor = tmp_path / "chat_template.json"
    processor.write_text(json.dumps({"chat_template": _HERMES}), encoding="utf-8")
    code, out, _ = _run(capsys, "analyze", str(processor), "--json")
    assert code == 0 and json.loads(out)["tools"]["format"]["mode"] == "JSON_NATIVE"
    model = tmp_path / "model"
    (model / "additional_chat_templates").mkdir(parents=True)
    (model / "chat_template.jinja").write_text(_QWEN, encoding="utf-8")
    (model / "additional_chat_templates" / "tool_use.jinja").write_text(_HERMES, encoding="utf-8")
    (model / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|im_end|>"}), encoding="utf-8")
    tmpl = cli._load(str(model))
    assert (tmpl.source, tmpl.eos_token) == (_QWEN, "<|im_end|>")
    assert cli._load(str(model), "tool_use").source == _HERMES
    code, out, _ = _run(capsys, "analyze", str(model), "--json")
    assert code == 0 and json.loads(out)["tools"]["format"]["mode"] == "TAG_WITH_TAGGED"
    code, _, err = _run(capsys, "analyze", str(tmp_path / "empty-dir"))
    assert code == 2
    (tmp_path / "empty-dir").mkdir()
    code, _, err = _run(capsys, "analyze", str(tmp_path / "empty-dir"))
    assert code == 1 and "chat_template.jinja" in err


def test_broken_config_files_are_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = tmp_path / "tokenizer_config.json"
    config.write_text('{\n  "chat_template": "{{ x }}",\n  "eos_token": "</s>"\n  "bos_token": "<s>"\n}', "utf-8")
    code, out, err = _run(capsys, "analyze", str(config))
    assert (code, out) == (1, "")
    assert f"{config}, line 4: invalid JSON at column 3" in err and "Traceback" not in err
    config.write_text(json.dumps({"eos_token": "</s>"}), encoding="utf-8")
    code, _, err = _run(capsys, "analyze", str(config))
    assert code == 1 and str(config) in err and "chat_template" in err
    config.write_bytes(b'{"chat_template": "\xff"}')
    code, _, err = _run(capsys, "analyze", str(config))
    assert code == 1 and str(config) in err and "UTF-8" in err


# --- the real entry point: streamed warnings, schema errors, files that are no chat template ----------------------

_EXAMPLES = Path(__file__).parent.parent / "examples"


def _entry_point(*argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """The installed ``autoparser`` script (the console entry point), or ``python -m autoparser`` without it."""
    script = Path(sys.executable).parent / "autoparser"
    command = [str(script)] if script.is_file() else [sys.executable, "-m", "autoparser"]
    return subprocess.run(
        [*command, *argv], input=stdin, capture_output=True, text=True, timeout=120, check=False
    )


def test_parse_stream_prints_the_warnings_of_the_final_delta() -> None:
    """A call cut off by the end of the output is reported at ``finish()``: the stream's last line says so (it
    printed ``{}``), the warnings are those of the complete parse, and no line is an empty delta."""
    output = "Weather.\n</think>\n\nLet me check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nPar"
    tools = str(_EXAMPLES / "tools.json")
    whole = _entry_point("parse", "Qwen3.5-4B", "-", "--tools", tools, stdin=output)
    streamed = _entry_point("parse", "Qwen3.5-4B", "-", "--tools", tools, "--stream", "--chunk", "5", stdin=output)
    assert whole.returncode == streamed.returncode == 0, streamed.stderr
    expected = json.loads(whole.stdout)["warnings"]
    assert expected
    lines = [json.loads(line) for line in streamed.stdout.splitlines()]
    assert all(lines), "an empty delta was printed"
    assert [w for line in lines for w in line.get("warnings", [])] == expected
    assert lines[-1].get("warnings")
    assert "".join(line.get("content", "") for line in lines) == json.loads(whole.stdout)["content"]


@pytest.mark.parametrize(
    ("parameter", "reason"),
    [
        ({"type": "nonsense"}, "unknown type 'nonsense'"),
        ({"$ref": "#/$defs/missing"}, "cannot resolve $ref '#/$defs/missing'"),
        ({"type": "string", "pattern": "(unclosed"}, "pattern '(unclosed'"),
    ],
)
@pytest.mark.parametrize(
    "template", ["Qwen3-Coder", "meta-llama-Llama-3.1-8B-Instruct", "LFM2-8B-A1B", "google-gemma-4-31B-it"]
)
def test_grammar_with_an_invalid_parameter_schema(
    tmp_path: Path, template: str, parameter: dict[str, object], reason: str
) -> None:
    """One line naming the tool and the parameter, no traceback, exit code 1 like the other bad input files; the
    same on every template (LFM2's and Gemma 4's grammars would silently allow any value)."""
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "when": parameter}}
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "function": {"name": "get_weather", "parameters": schema}}]))
    for extra in ([], ["--format", "lark"]):
        proc = _entry_point("grammar", template, "--tools", str(tools), *extra)
        assert (proc.returncode, proc.stdout) == (1, ""), proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert proc.stderr.startswith(f"autoparser: error: --tools file {tools}: tool 'get_weather', parameter 'when'")
        assert reason in proc.stderr


def test_grammar_with_an_invalid_json_schema(tmp_path: Path) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"type": "nonsense"}))
    proc = _entry_point("grammar", "Qwen3-Coder", "--json-schema", str(schema))
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.strip() == f"autoparser: error: --json-schema file {schema}: unknown type 'nonsense' (at #/type)"
    good = _entry_point("grammar", "Qwen3-Coder", "--tools", str(_EXAMPLES / "tools.json"))
    assert good.returncode == 0 and "tool-get-weather" in good.stdout.replace("_", "-"), good.stderr


@pytest.mark.parametrize("suffix", [".txt", ".jinja"])
def test_a_text_that_is_no_chat_template_fails_like_analyze(tmp_path: Path, suffix: str) -> None:
    """``parse`` used to read everything as content with such a "template"; now it fails as ``analyze`` does."""
    notes = tmp_path / f"notes{suffix}"
    notes.write_text("Meeting notes.\nNothing to render here.\n", encoding="utf-8")
    analyzed = _entry_point("analyze", str(notes))
    assert analyzed.returncode == 1 and "nothing to analyze" in analyzed.stderr
    for argv in (["parse", str(notes), "-"], ["grammar", str(notes)]):
        proc = _entry_point(*argv, stdin="Hello")
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", analyzed.stderr), argv
