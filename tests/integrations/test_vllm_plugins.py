"""The ``vllm.general_plugins`` entry point against real vLLM: ``vllm serve`` and an in-process ``vllm.LLM`` find the
``autoparser`` parsers with no ``--*-parser-plugin`` flag.

The launch paths run in a fresh interpreter (``vllm_launch.py``), where nothing imports autoparser's vLLM module
before vLLM asks for a parser: whatever finds the parsers there found them through the entry point. Without a GPU
both stop where vLLM starts its engine (see ``vllm_launch.py`` and docs/integrations.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

if os.environ.get("AUTOPARSER_REQUIRE_VLLM"):  # .ci/run's vLLM step: a missing vLLM is a failure, not a skip
    import vllm  # noqa: F401
else:
    pytest.importorskip("vllm", reason="vLLM is not installed here; .ci/run runs these tests in its own vLLM venv")

from autoparser.integrations.entry_points import register_vllm

from . import vllm_support as vs

ROOT = Path(__file__).resolve().parents[2]
TOOL = "autoparser.integrations.vllm.AutoparserToolParser"
REASONING = "autoparser.integrations.vllm.AutoparserReasoningParser"
NONE_REGISTERED = {"tool_registered": False, "reasoning_registered": False, "imported": False}


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    """A Qwen3.5 tokenizer in a model directory (tokenizer, chat template, config.json; no weights)."""
    return vs.tokenizer_for("Qwen3.5-4B", ("<think>\nHmm.\n</think>\n\nHello.",))


@pytest.fixture(scope="module")
def launches(tokenizer: Any) -> dict[str, dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if k != "VLLM_PLUGINS"}
    command = [sys.executable, "-m", "tests.integrations.vllm_launch", str(tokenizer.name_or_path)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, (done.stdout + done.stderr)[-4000:]
    return json.loads(lines[-1].removeprefix("RESULT "))


def test_the_distribution_declares_the_entry_point() -> None:
    (entry,) = [e for e in entry_points(group="vllm.general_plugins") if e.name == "autoparser"]
    assert entry.load() is register_vllm


def test_vllm_serve_finds_both_parsers_with_no_plugin_flag(launches: dict[str, dict[str, Any]]) -> None:
    run = launches["serve"]
    assert "error" not in run, run["error"]
    assert run["before"] == NONE_REGISTERED
    # The command line passed vLLM's check that --tool-call-parser names a registered parser; the parsers are
    # registered, and nothing of autoparser's vLLM module was imported for it (lazy registration).
    assert run["at_engine_start"] == {"tool_registered": True, "reasoning_registered": True, "imported": False}
    assert (run["tool_parser"], run["reasoning_parser"]) == (TOOL, REASONING)


def test_without_the_entry_point_vllm_serve_refuses_the_name(launches: dict[str, dict[str, Any]]) -> None:
    assert launches["without"]["error"].startswith("KeyError: 'invalid tool call parser: autoparser")


def test_an_in_process_llm_finds_both_parsers(launches: dict[str, dict[str, Any]], tokenizer: Any) -> None:
    run = launches["llm"]
    assert "error" not in run, run["error"]
    assert not run["before"]["tool_registered"] and not run["before"]["reasoning_registered"]
    # LLM built its VllmConfig: the reasoning parser was looked up by name and built from the tokenizer for the
    # reasoning token ids; the engine core's structured-output manager finds it by name too.
    ids = {marker: tokenizer.encode(marker, add_special_tokens=False) for marker in ("<think>", "</think>")}
    assert run["reasoning_config"] == {"parser": "autoparser", "start_ids": ids["<think>"], "end_ids": ids["</think>"]}
    assert run["engine_reasoner"] == REASONING
    assert run["tool_parser"] == TOOL
