"""``autoparser batch``: files in, files out, in order, with worker processes, failures kept in their rows, and a
resume after a real interruption (a subprocess killed mid-run) that neither repeats nor loses a row."""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from autoparser.batch import parse_rows
from autoparser.cli import BATCH_ROWS_FAILED, main

from ..support import outputs
from . import cases

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

TEMPLATE = "Qwen3-Coder"
SRC = str(Path(__file__).resolve().parents[2] / "src")
BAD = [
    b"not json\n",
    b"\n",  # blank: no row
    b"[1, 2]\n",
    b'{"id": "no-text"}\n',
    b'{"id": "bad-request", "text": "Hi", "messages": [{"content": "no role"}]}\n',
    b'{"id": "latin-1", "text": "caf\xe9"}\n',
]


def _write(path: Path, rows: list[dict[str, Any]], extra: list[bytes] = ()) -> Path:  # type: ignore[assignment]
    with open(path, "wb") as f:
        for i, row in enumerate(rows):
            f.write(json.dumps(row, ensure_ascii=False).encode() + b"\n")
            if i == 1:
                f.writelines(extra)
    return path


def _rows(copies: int = 1) -> list[dict[str, Any]]:
    base = cases.rows(TEMPLATE)
    return [{**row, "id": f"{i}:{row['id']}"} for i in range(copies) for row in base]


def _request_files(tmp: Path) -> list[str]:
    (tmp / "tools.json").write_text(json.dumps(outputs.request_tools(TEMPLATE)), encoding="utf-8")
    (tmp / "messages.json").write_text(json.dumps(outputs.conversation(TEMPLATE)), encoding="utf-8")
    return ["--tools", str(tmp / "tools.json"), "--messages", str(tmp / "messages.json"), "--parallel", "--thinking"]


def _read(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pylist()
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _canonical(out: list[dict[str, Any]], rows: list[dict[str, Any]]) -> list[Any]:
    texts = {row["id"]: row["text"] for row in rows}
    return [
        (o.get("id"), cases.canonical(o["message"], texts.get(o.get("id"), "")), o["warnings"], o["error"]) for o in out
    ]


def _batch(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["batch", *argv])
    return code, capsys.readouterr().err


def test_jsonl_to_jsonl_with_failures_in_their_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = _rows()
    source = _write(tmp_path / "in.jsonl", rows, BAD)
    code, err = _batch(
        capsys, TEMPLATE, str(source), str(tmp_path / "out.jsonl"), "--keep", "id", *_request_files(tmp_path)
    )
    assert code == BATCH_ROWS_FAILED == 3
    out = _read(tmp_path / "out.jsonl")
    assert len(out) == len(rows) + 5  # the blank line is no row
    ids = [o["id"] for o in out]
    assert ids == [rows[0]["id"], rows[1]["id"], None, None, "no-text", "bad-request", None] + [
        r["id"] for r in rows[2:]
    ]
    errors = [o["error"] for o in out[2:7]]
    assert errors[0].startswith("the line is not valid JSON")
    assert errors[1] == "the line holds a JSON list, not an object"
    assert errors[2] == "no reply: the row has no 'text' field (nor OpenAI choices)"
    assert errors[3].startswith("RequestError: messages[0].role")
    assert errors[4].startswith("the line is not UTF-8 text")
    assert all(o["message"] is None for o in out[2:7])
    good = [o for o in out if o["id"] in {r["id"] for r in rows}]
    expected = list(parse_rows(cases.parser(TEMPLATE, keep=["id"]), rows))
    assert _canonical(good, rows) == _canonical(expected, rows)
    assert err.strip().splitlines()[-1].startswith(f"autoparser: {len(out)} rows to ")
    assert "5 failed (see their 'error' field)" in err


def test_all_rows_parsed_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = _write(tmp_path / "in.jsonl", _rows())
    code, err = _batch(capsys, TEMPLATE, str(source), str(tmp_path / "out.jsonl"), *_request_files(tmp_path))
    assert code == 0 and "none failed" in err
    assert not (tmp_path / "out.jsonl.resume.json").exists()  # the checkpoint goes once the batch is complete


def test_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = _write(tmp_path / "in.jsonl", _rows())
    assert _batch(capsys, "Qwen3-Cder", str(source), str(tmp_path / "o.jsonl"))[0] == 2
    code, err = _batch(capsys, TEMPLATE, str(source), str(tmp_path / "o.csv"))
    assert code == 1 and "cannot tell the format from '.csv'" in err
    code, err = _batch(capsys, TEMPLATE, str(tmp_path / "none.jsonl"), str(tmp_path / "o.jsonl"))
    assert code == 1 and "no such input file" in err
    code, err = _batch(capsys, TEMPLATE, str(source), str(tmp_path / "o.jsonl"), "--keep", "id,message")
    assert code == 2 and "message would be overwritten" in err
    (tmp_path / "bad.json").write_text('[{"content": "no role"}]', encoding="utf-8")
    code, err = _batch(
        capsys, TEMPLATE, str(source), str(tmp_path / "o.jsonl"), "--messages", str(tmp_path / "bad.json")
    )
    assert code == 1 and "role" in err and not (tmp_path / "o.jsonl").exists()  # refused before any row
    assert _batch(capsys, TEMPLATE, str(source), str(tmp_path / "o.jsonl"), "--workers", "0")[0] == 2


def test_parquet_in_and_out_and_two_workers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """JSONL → Parquet (two workers) → JSONL: the same rows as one worker writes, in order, kept columns typed."""
    rows = _rows(copies=3)
    source = _write(tmp_path / "in.jsonl", rows, BAD)
    request = _request_files(tmp_path)
    one, two, back = tmp_path / "one.jsonl", tmp_path / "two.parquet", tmp_path / "back.jsonl"
    assert _batch(capsys, TEMPLATE, str(source), str(one), "--keep", "id", *request)[0] == 3
    code, _ = _batch(
        capsys, TEMPLATE, str(source), str(two), "--keep", "id", "--workers", "2", "--chunk-rows", "4", *request
    )
    assert code == 3
    table = pq.read_table(two)
    assert table.schema.names == ["message", "warnings", "call_statuses", "error", "id"]
    assert table.schema.field("message").type.field("tool_calls").type.value_type.field("function").name == "function"
    assert _canonical(table.to_pylist(), rows) == _canonical(_read(one), rows)
    # Parquet in: the reply and the id columns of a table of records (here the source rows)
    pq.write_table(
        pa.table({"id": [r["id"] for r in rows], "text": [r["text"] for r in rows]}), tmp_path / "in.parquet"
    )
    code, _ = _batch(capsys, TEMPLATE, str(tmp_path / "in.parquet"), str(back), "--keep", "id", *request)
    assert code == 0
    good = [o for o in _read(one) if o["id"] in {r["id"] for r in rows}]
    assert _canonical(_read(back), rows) == _canonical(good, rows)


def _command(*argv: str) -> list[str]:
    return [sys.executable, "-m", "autoparser", "batch", *argv]


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra}


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _interrupt(command: list[str], output: Path, sig: signal.Signals, at_least: int) -> subprocess.Popen[bytes]:
    """Start ``command``, and once ``output`` holds ``at_least`` rows (lines, or any part for Parquet), send
    ``sig`` to its process group (the command and its workers)."""
    process = subprocess.Popen(command, env=_env(), stderr=subprocess.PIPE, start_new_session=True)
    parts = output.with_name(output.name + ".parts")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        if _lines(output) >= at_least or (parts.exists() and any(parts.glob("part-*.parquet"))):
            break
        time.sleep(0.005)
    assert process.poll() is None, "the batch ended before it could be interrupted"
    os.killpg(process.pid, sig)
    process.wait(timeout=60)
    return process


def test_resume_after_a_kill(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SIGKILL to the command and its two workers mid-run, then --resume: what an uninterrupted run writes, each
    row once; the rows written before the kill are not parsed again."""
    rows = _rows(copies=200)
    source = _write(tmp_path / "in.jsonl", rows, BAD)
    output = tmp_path / "out.jsonl"
    request = _request_files(tmp_path)
    argv = [TEMPLATE, str(source), str(output), "--keep", "id", "--workers", "2", "--chunk-rows", "20", *request]
    killed = _interrupt(_command(*argv), output, signal.SIGKILL, at_least=100)
    assert killed.returncode == -signal.SIGKILL
    written = _lines(output)
    assert 100 <= written < len(rows)
    code, err = _batch(capsys, *argv, "--resume")
    assert code == 3, err
    summary = err.strip().splitlines()[-1]
    total = len(rows) + 5
    from_before = int(summary.split("(")[1].split()[0])  # "... rows (N from the interrupted run) ..."
    assert summary.startswith(f"autoparser: {total} rows ") and written - 1 <= from_before <= written
    reference = tmp_path / "reference.jsonl"
    assert _batch(capsys, TEMPLATE, str(source), str(reference), "--keep", "id", *request)[0] == 3
    out, expected = _read(output), _read(reference)
    assert len(out) == total
    assert [o["id"] for o in out] == [o["id"] for o in expected]
    assert _canonical(out, rows) == _canonical(expected, rows)
    assert not output.with_name("out.jsonl.resume.json").exists()


def test_resume_after_ctrl_c_with_parquet_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Ctrl-C: exit 130 with what was parsed kept as parts; --resume finishes the file; a changed input is not
    resumed into it."""
    rows = _rows(copies=600)  # enough rows that Ctrl-C comes mid-run, however fast parsing is
    source = _write(tmp_path / "in.jsonl", rows)
    output = tmp_path / "out.parquet"
    argv = [TEMPLATE, str(source), str(output), "--keep", "id", "--chunk-rows", "20", "--flush-seconds", "0"]
    argv += _request_files(tmp_path)
    stopped = _interrupt(_command(*argv), output, signal.SIGINT, at_least=1)
    assert stopped.returncode == 130
    assert stopped.stderr is not None and b"--resume" in stopped.stderr.read()
    parts = sorted(output.with_name("out.parquet.parts").glob("part-*.parquet"))
    assert parts and not output.exists()
    done = sum(pq.read_metadata(p).num_rows for p in parts)
    assert 0 < done < len(rows)
    code, err = _batch(capsys, *argv, "--resume")
    assert code == 0, err
    assert f"({done} from the interrupted run)" in err
    expected = list(parse_rows(cases.parser(TEMPLATE, keep=["id"]), rows))
    assert _canonical(_read(output), rows) == _canonical(expected, rows)
    # a finished output has no checkpoint: --resume refuses to guess
    code, err = _batch(capsys, *argv, "--resume")
    assert code == 1 and "has no checkpoint" in err


def test_resume_refuses_another_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = _write(tmp_path / "in.jsonl", _rows())
    output = tmp_path / "out.jsonl"
    output.write_text("", encoding="utf-8")
    mark = tmp_path / "out.jsonl.resume.json"
    from autoparser.batch.resume import Checkpoint

    Checkpoint({"input": "elsewhere", "input_size": 1, "input_mtime_ns": 1, "options": "x"}).save(mark)
    code, err = _batch(capsys, TEMPLATE, str(source), str(output), "--resume")
    assert code == 1 and "the input file changed" in err


def test_without_pyarrow(tmp_path: Path) -> None:
    """JSONL needs nothing more; Parquet says which extra to install."""
    source = _write(tmp_path / "in.jsonl", _rows())
    run = (
        "import sys; sys.modules['pyarrow'] = None; from autoparser.cli import main\n"
        f"for out in sys.argv[1:]: print(main(['batch', 'Qwen3-Coder', {str(source)!r}, out]))"
    )
    argv = [sys.executable, "-c", run, str(tmp_path / "o.jsonl"), str(tmp_path / "o.parquet")]
    ran = subprocess.run(argv, env=_env(), capture_output=True, text=True, timeout=60)
    assert ran.stdout.split() == ["0", "1"], ran.stderr
    assert _read(tmp_path / "o.jsonl")[0]["error"] is None
    assert ran.stderr.strip().splitlines()[-1] == (
        "autoparser: error: Parquet and Arrow tables need pyarrow: pip install 'autoparser[batch]'"
    )


def test_progress_bar_on_a_terminal_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = _write(tmp_path / "in.jsonl", _rows(copies=10))
    argv = [TEMPLATE, str(source), str(tmp_path / "o.jsonl")]
    code, err = _batch(capsys, *argv)  # stderr is no terminal here
    assert code == 0 and err.strip().splitlines() == [err.strip()]  # the summary alone
    leader, follower = pty.openpty()
    with subprocess.Popen(_command(*argv), env=_env(COLUMNS="120"), stderr=follower, stdout=subprocess.DEVNULL) as run:
        os.close(follower)
        shown = b""
        while True:
            try:
                data = os.read(leader, 4096)
            except OSError:  # the terminal's other end closed
                break
            if not data:
                break
            shown += data
    os.close(leader)
    assert run.returncode == 0
    text = shown.decode(errors="replace")
    assert "parsing" in text and "rows/s" in text and "ETA" in text and f"/{10 * len(cases.rows(TEMPLATE))}" in text


def test_importing_loads_no_pipeline_library() -> None:
    """``import autoparser`` loads neither the batch nor the pipelines; they load their libraries only when used."""
    check = (
        "import sys, autoparser; assert 'autoparser.batch' not in sys.modules\n"
        "import autoparser.batch, autoparser.pipelines.datasets, autoparser.pipelines.ray, "
        "autoparser.pipelines.vllm_offline\n"
        "print(sorted(m for m in ('pyarrow', 'datasets', 'ray', 'vllm') if m in sys.modules))"
    )
    ran = subprocess.run([sys.executable, "-c", check], env=_env(), capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "[]"


def test_kept_values_of_mixed_types_in_parquet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A kept JSONL field whose values differ in type from part to part (numbers, strings, objects) becomes a
    text column; one that agrees keeps its type, nulls included."""
    values = [1, 2, "x", None, {"a": 1}, 3]
    rows = [{"text": "Hi", "v": v, "n": i if i != 3 else None} for i, v in enumerate(values)]
    source = _write(tmp_path / "in.jsonl", rows)
    output = tmp_path / "out.parquet"
    argv = [TEMPLATE, str(source), str(output), "--keep", "v,n", "--chunk-rows", "2", "--flush-seconds", "0"]
    assert _batch(capsys, *argv)[0] == 0
    table = pq.read_table(output)
    assert table.schema.field("v").type == pa.string() and table.schema.field("n").type == pa.int64()
    assert table.column("v").to_pylist() == ["1", "2", "x", None, '{"a": 1}', "3"]
    assert table.column("n").to_pylist() == [0, 1, 2, None, 4, 5]


def test_resume_without_its_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from autoparser.batch import BatchParser
    from autoparser.batch.resume import Checkpoint, checkpoint_path, fingerprint
    from autoparser.batch.runner import _options

    source = _write(tmp_path / "in.jsonl", _rows())
    output = tmp_path / "out.jsonl"
    as_the_command = {"reasoning_format": "auto", "enable_thinking": None, "parallel_tool_calls": None}
    parser = BatchParser(TEMPLATE, tool_choice="auto", undeclared_tools="call", **as_the_command)
    Checkpoint(fingerprint(source, _options(parser, "jsonl", "jsonl"))).save(checkpoint_path(output))
    code, err = _batch(capsys, TEMPLATE, str(source), str(output), "--resume")
    assert code == 1 and "is gone (its checkpoint is still there)" in err
