"""``autoparser serve --workers N``: N processes on one port, one set of metrics, stopped together.

The real command runs in a process of its own (a session of its own: whatever happens, the test kills what it
started) in front of the upstream double. Which worker answered shows in ``/metrics``: each worker reports its
caches' sizes with its pid.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

import autoparser.serve as serve_package
from autoparser import cli

from .double import UpstreamDouble

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or not Path("/proc").is_dir(), reason="POSIX with /proc")

QWEN = "Qwen3.5-4B"
SRC = str(Path(serve_package.__file__).parents[2])
CHAT = "/v1/chat/completions"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _children(pid: int) -> set[int]:
    """The live (not zombie) processes whose parent is ``pid``."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(stat[1]) == pid and stat[0] != "Z":
            found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _until(condition: Any, seconds: float, what: str) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@contextmanager
def _server(upstream: str, workers: int, tmp: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    port = _free_port()
    command = [sys.executable, "-m", "autoparser", "serve", QWEN, "--upstream", upstream, "--port", str(port)]
    env = {**os.environ, "PYTHONPATH": SRC, "TMPDIR": str(tmp)}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    process = subprocess.Popen(
        [*command, "--workers", str(workers), "--log-level", "warning"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:

        def up() -> bool:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            try:
                return httpx2.get(url + "/health/live", timeout=1).status_code == 200
            except httpx2.HTTPError:
                return False

        _until(up, 60, "the server")
        yield process, url
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
        if process.stderr:
            process.stderr.close()


def _metrics(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = httpx2.get(url + "/metrics", timeout=10)
    assert response.status_code == 200
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def _chat(url: str, stream: bool) -> None:
    """One chat completion on a connection of its own (so that any worker may accept it)."""
    body = {"model": QWEN, "messages": [{"role": "user", "content": "Hello"}], "stream": stream}
    with httpx2.Client(timeout=30) as client:
        response = client.post(url + CHAT, json=body)
    assert response.status_code == 200, response.text
    if stream:
        assert response.text.rstrip().endswith("data: [DONE]")
    else:
        assert response.json()["choices"][0]["finish_reason"] == "stop"


def _serving_pids(url: str) -> set[str]:
    """The workers whose parser cache holds something: those that answered a chat completion."""
    return {
        dict(labels)["pid"]
        for (name, labels), value in _metrics(url).items()
        if name == "autoparser_cache_entries" and dict(labels).get("cache") == "parser" and value > 0
    }


def test_workers_share_a_port_add_up_their_metrics_and_stop_together(double: UpstreamDouble, tmp_path: Path) -> None:
    with _server(double.url, 2, tmp_path) as (process, url):  # type: ignore[attr-defined]
        workers = _until(lambda: (found := _children(process.pid)) and len(found) == 2 and found, 20, "2 workers")
        (folder,) = tmp_path.iterdir()  # the metrics' directory
        assert folder.name.startswith("autoparser-metrics-")
        sent = 0
        with ThreadPoolExecutor(8) as pool:
            # Connections go to whichever worker accepts first: ask until both answered (the first round mostly does)
            for _ in range(25):
                list(pool.map(lambda i: _chat(url, stream=i % 2 == 0), range(8)))
                sent += 8
                if len(_serving_pids(url)) == 2:
                    break
        assert _serving_pids(url) == {str(pid) for pid in workers}
        samples = _metrics(url)
        assert samples[("autoparser_requests_total", (("endpoint", CHAT), ("status", "200")))] == sent
        assert samples[("autoparser_request_duration_seconds_count", (("endpoint", CHAT),))] == sent
        assert samples[("autoparser_time_to_first_token_seconds_count", ())] == sent // 2
        # The scrape itself is in flight; a request whose client already has its last byte may still be finishing
        # in its worker for a moment (its gauge goes down after the response's last send), so wait for it to settle
        in_flight = ("autoparser_requests_in_flight", ())
        _until(lambda: _metrics(url)[in_flight] == 1, 10, "one request in flight: the scrape")
        assert samples[("autoparser_completion_tokens_total", ())] > 0

        # A worker that dies is replaced; what it counted stays counted, its cache gauge goes
        killed = min(workers)
        os.kill(killed, signal.SIGKILL)
        workers = _until(lambda: (f := _children(process.pid)) and len(f) == 2 and killed not in f and f, 20, "a new")
        _chat(url, stream=False)
        samples = _metrics(url)
        assert samples[("autoparser_requests_total", (("endpoint", CHAT), ("status", "200")))] == sent + 1
        assert all(dict(labels).get("pid") != str(killed) for _, labels in samples)

        process.send_signal(signal.SIGTERM)
        assert process.wait(20) == 0
        assert not any(_alive(pid) for pid in workers)
        assert not list(tmp_path.iterdir())  # the metrics' directory is gone
        with socket.socket() as sock:  # nothing listens on the port any more
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", int(url.rsplit(":", 1)[1])))
            sock.listen()
        stderr = process.stderr.read() if process.stderr else ""
        assert "replaced by worker" in stderr


@pytest.mark.parametrize("workers", ["0", "-1"])
def test_workers_must_be_one_or_more(workers: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["serve", QWEN, "--upstream", "http://x", "--workers", workers]) == 2
    assert "--workers must be a whole number >= 1" in capsys.readouterr().err


def test_a_bad_template_fails_before_any_worker_starts(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "autoparser", "serve", "no-such-template", "--upstream", "http://x"]
    env = {**os.environ, "PYTHONPATH": SRC, "TMPDIR": str(tmp_path)}
    done = subprocess.run([*command, "--workers", "2"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "no template file or bundled template" in done.stderr
    assert not list(tmp_path.iterdir())  # the metrics' directory made for the workers is gone too


def test_workers_that_keep_dying_are_given_up_on() -> None:
    """Replaced, but not forever: past 3 replacements per worker within a minute the parent stops, exit status 1."""
    code = (
        "import socket, sys\n"
        "from autoparser.serve.ops.workers import Supervisor\n"
        "sock = socket.socket()\n"
        "sys.exit(Supervisor(lambda sock: 3, sock, 2).run())\n"
    )
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": SRC}, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1, done.stderr
    assert time.monotonic() - start < 30
