"""``autoparser check``: the report (what was learned, a status and reason per case), its exit status, its JSON and
Markdown forms, and documented faults found by content for a copy of a bundled template.

The verdicts themselves are the round trip's: tests/robustness/test_roundtrip.py runs the check over every bundled
template and compares its table with docs/roundtrip.md.
"""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path

import pytest

from autoparser import ChatTemplate
from autoparser.check import Status, check_template, run
from autoparser.check.cases import CASES, CaseSet
from autoparser.check.readback import Verdict
from autoparser.check.report import MARKDOWN_INTRO, markdown
from autoparser.cli import main


@pytest.fixture(autouse=True)
def _plain_console(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")


def _bundled_file(name: str, tmp_path: Path) -> Path:
    """A copy of a bundled template under another name, as a user would have it."""
    target = tmp_path / "my-model.jinja"
    with resources.as_file(resources.files("autoparser.templates").joinpath(f"{name}.jinja")) as source:
        shutil.copy(source, target)
    return target


def test_a_template_that_works_reads_back_every_case() -> None:
    report = check_template(ChatTemplate.load("Qwen3.5-4B"))
    assert report.passed and not report.error
    assert [r.case for r in report.results] == list(CASES)
    assert all(r.status is Status.OK for r in report.results)
    assert report.learned["format"] == "generic"
    assert report.learned["calls"] == "TAG_WITH_TAGGED"
    assert "<think>" in report.learned["reasoning markers"]
    assert "<|im_end|>" in report.learned["end of turn"]
    # every rendered output was read back: parse, the streams, and the grammar (refusing only a documented spelling)
    assert len(report.verdicts) == 7 and all(v.reads_back for v in report.verdicts.values())
    refused = [r for r in report.results if r.grammar]
    assert [r.case for r in refused] == ["one call"] and "Python True/None" in refused[0].grammar_reason


def test_cases_a_template_cannot_render_say_why() -> None:
    report = check_template(ChatTemplate.load("google-gemma-2-2b-it"))
    missing = {r.case: r for r in report.results if r.status is Status.NOT_RENDERED}
    assert set(missing) == {"reasoning+content", *CASES[2:]}
    assert all(r.observed and r.reason for r in missing.values())
    assert report.passed  # a case the template cannot render is no failure of autoparser's


def test_a_case_that_does_not_read_back_fails_the_check(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(params: object, case: object, markers: object, grammar: object = None) -> Verdict:
        return Verdict(parse="content 'something else'")

    monkeypatch.setattr(run, "read_back", broken)
    report = check_template(ChatTemplate.load("Qwen3.5-4B"))
    assert not report.passed
    assert {r.status for r in report.results} == {Status.FAILS}
    assert all(r.observed == "content 'something else'" for r in report.failures)
    assert main(["check", "Qwen3.5-4B"]) == 1
    out = capsys.readouterr().out
    assert "0/6 rendered cases read back; 6 fail with no documented template fault" in out


def test_a_documented_template_fault_is_shown_and_does_not_fail(capsys: pytest.CaptureFixture[str]) -> None:
    report = check_template(ChatTemplate.load("MiniMax-M3"))
    one = next(r for r in report.results if r.case == "one call")
    assert one.status is Status.FAILS and "leaves out an argument set to None" in one.reason
    assert report.passed
    assert main(["check", "MiniMax-M3"]) == 0
    assert "leaves out an argument set to None" in capsys.readouterr().out


def test_a_copy_of_a_bundled_template_gets_its_documented_faults(tmp_path: Path) -> None:
    copy = ChatTemplate.from_pretrained(_bundled_file("MiniMax-M3", tmp_path))
    assert run.known_name(copy) == "MiniMax-M3"
    report = check_template(copy)
    assert report.template == "MiniMax-M3" and report.passed


def test_json_report(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = _bundled_file("NousResearch-Hermes-3-Llama-3.1-8B-tool_use", tmp_path)
    assert main(["check", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["passed"] is True and data["error"] == ""
    assert data["learned"]["calls"] == "JSON_NATIVE"
    by_case = {c["case"]: c for c in data["cases"]}
    assert by_case["one call"]["status"] == "ok" and by_case["one call"]["symbol"] == "✓"
    assert by_case["content+call"]["status"] == "not_rendered" and by_case["content+call"]["reason"]
    assert data["seconds"] > 0


def test_several_templates_and_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "Qwen3.5-4B", "google-gemma-2-2b-it", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(MARKDOWN_INTRO)
    rows = [line for line in out.splitlines() if line.startswith("| Qwen3.5-4B |") or line.startswith("| google-")]
    assert len(rows) == 2
    assert "- 2 templates: 2 read back every case they render" in out


def test_a_template_that_renders_no_user_turn_alone_is_checked_after_a_system_message() -> None:
    source = "{% if messages[0].role != 'system' %}{{ raise_exception('a system prompt is required') }}{% endif %}"
    source += "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
    source += "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    cases = CaseSet(ChatTemplate(source, name="needs-system.jinja"))
    assert cases.conversation[0]["role"] == "system"
    assert "rendered after a system message" in cases.notes[0]
    assert [c.case for c in cases.cases] == ["content"]
    assert cases.cases[0].text == cases.cases[0].content


def test_text_that_is_no_chat_template_cannot_be_checked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "notes.jinja"
    path.write_text("{{ raise_exception('not a chat template') }}", encoding="utf-8")
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert "not a chat template" in out


def test_check_needs_a_template(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check"]) == 2
    assert "--all" in capsys.readouterr().err


def test_markdown_summarises_statuses() -> None:
    reports = [check_template(ChatTemplate.load(name)) for name in ("Qwen3.5-4B", "MiniMax-M3")]
    table = markdown(reports)
    assert "- 2 templates: 1 read back every case they render, 1 some of them, 0 none" in table
    assert "| MiniMax-M3 | minimax-m3 · TAG_WITH_TAGGED · TAG_BASED | ✓ | ✓ | ✗ |" in table
