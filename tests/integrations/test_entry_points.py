"""The engine plugin entry points, with no engine installed: what pyproject.toml declares exists, and a plugin
function never stops an engine from starting (a missing registry is a logged warning). Against the real engines:
test_vllm_plugins.py and test_sglang.py."""

from __future__ import annotations

import importlib
import logging
import sys
import tomllib
from pathlib import Path

import pytest

from autoparser.integrations import entry_points

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


@pytest.mark.parametrize(
    ("group", "function"),
    [("vllm.general_plugins", entry_points.register_vllm), ("sglang.srt.plugins", entry_points.register_sglang)],
)
def test_pyproject_declares_each_engine_plugin(group: str, function: object) -> None:
    declared = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["entry-points"][group]
    module, _, name = declared["autoparser"].partition(":")
    assert getattr(importlib.import_module(module), name) is function


@pytest.mark.parametrize(
    ("function", "hidden"),
    [
        (entry_points.register_vllm, ("vllm", "autoparser.integrations.vllm")),
        (entry_points.register_sglang, ("sglang", "autoparser.integrations.sglang")),
    ],
)
def test_a_missing_engine_is_a_warning_not_a_crash(
    function: object, hidden: tuple[str, ...], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for module in hidden:  # as if not installed (None in sys.modules makes the import fail)
        monkeypatch.setitem(sys.modules, module, None)
    with caplog.at_level(logging.WARNING, logger=entry_points.__name__):
        assert function() is None  # type: ignore[operator]
    assert "could not register the 'autoparser' parsers" in caplog.text
