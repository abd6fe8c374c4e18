"""The disk cache (autoparser/disk_cache.py): what a process reads back is what it would have computed, and a cache
that is unsafe, damaged, full or off costs nothing but time.

The suite runs with the cache off (tests/conftest.py); these tests turn it on in folders of their own and empty the
in-memory caches between a "first process" and a "next process", so the second reads everything from disk.
"""

from __future__ import annotations

import json
import marshal
import multiprocessing
import os
import pickle
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from autoparser import ChatTemplate, bundled_templates, disk_cache
from autoparser.analysis import analyzer
from autoparser.cli import main
from autoparser.requests import profile
from autoparser.template import environment

from .support.outputs import TOOLS
from .support.sample import sampled

CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "Sunny, 21 C"},
]


def _forget() -> None:
    """Empty the in-memory caches per template source: what a new process starts with."""
    analyzer.clear_cache()
    environment.clear_compile_cache()
    profile._profile.cache_clear()


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The cache on, in a fresh folder; the in-memory caches empty before and after."""
    root = tmp_path / "cache"
    monkeypatch.setenv(disk_cache.ENV, str(root))
    _forget()
    yield root
    _forget()


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the steps computed (not read from disk) during the test."""
    seen: list[str] = []
    for module, name in ((environment, "_compile_source"), (analyzer, "_analyze"), (profile, "_work_out")):
        original = getattr(module, name)

        def counted(*args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
            seen.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)
    return seen


def _everything(name: str) -> tuple[Any, ...]:
    """What a process works out for a template: its analysis, request profile, and prompts and parse results."""
    template = ChatTemplate.load(name)
    analysis = template.analysis
    results: list[Any] = [analysis, profile.request_profile(template)]
    for messages, tools in ((CONVERSATION[:2], TOOLS), (CONVERSATION, TOOLS), (CONVERSATION[1:2], None)):
        try:
            params = template.apply(messages, tools=tools)
        except Exception as err:  # the same refusal either way
            results.append(repr(err))
            continue
        results.append(params.prompt)
        reply = params.parse('<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>')
        calls = [(call.name, call.arguments, call.status, call.id_generated) for call in reply.tool_calls]
        results.append((reply.content, reply.reasoning_content, calls, reply.warnings))  # (generated ids are random)
    return tuple(results)


@pytest.mark.parametrize("name", sampled())
def test_a_new_process_reads_back_what_it_would_compute(
    name: str, folder: Path, computed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(disk_cache.ENV, "off")
    fresh = _everything(name)  # no cache at all
    monkeypatch.setenv(disk_cache.ENV, str(folder))
    _forget()
    computed.clear()
    assert _everything(name) == fresh  # the first process: computes and writes
    assert sorted(set(computed)) == ["_analyze", "_compile_source", "_work_out"]
    _forget()
    computed.clear()
    again = _everything(name)  # the next process: reads
    assert computed == []
    assert again == fresh


@pytest.mark.parametrize("name", ["Mistral-Small-3.2-24B-Instruct-2506", "microsoft-Phi-3.5-mini-instruct"])
def test_the_special_tokens_are_part_of_the_key(
    name: str, folder: Path, computed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(disk_cache.ENV, "off")
    fresh = {eos: ChatTemplate.load(name, eos_token=eos).analysis for eos in ("", "</s>")}
    assert fresh[""] != fresh["</s>"]  # (these templates write the EOS string where the analysis reads it)
    monkeypatch.setenv(disk_cache.ENV, str(folder))
    for eos in ("", "</s>"):  # the first process, with both
        _forget()
        computed.clear()
        assert ChatTemplate.load(name, eos_token=eos).analysis == fresh[eos]
        assert "_analyze" in computed  # the other EOS's entry is not this one's
    for eos in ("", "</s>"):  # the next, reading both
        _forget()
        computed.clear()
        assert ChatTemplate.load(name, eos_token=eos).analysis == fresh[eos]
        assert computed == []


def test_the_templates_share_one_folder_with_three_files_each(folder: Path) -> None:
    names = ["Qwen3.5-4B", "NousResearch-Hermes-3-Llama-3.1-8B-tool_use", "Mistral-Small-3.2-24B-Instruct-2506"]
    for name in names:
        ChatTemplate.load(name).apply(CONVERSATION[1:2], tools=TOOLS)
    (version,) = folder.iterdir()
    kinds = sorted(path.suffix for path in version.iterdir())
    assert kinds == sorted([".jinja", ".analysis", ".profile"] * len(names))
    assert stat.S_IMODE(folder.stat().st_mode) & 0o077 == 0
    assert all(stat.S_IMODE(path.stat().st_mode) & 0o077 == 0 for path in version.iterdir())


@pytest.mark.parametrize("damage", ["truncate", "garbage", "wrong type", "wrong shape", "empty"])
def test_a_damaged_entry_is_computed_and_written_again(damage: str, folder: Path, computed: list[str]) -> None:
    name = "Qwen3.5-4B"
    expected = _everything(name)
    (version,) = folder.iterdir()
    for path in version.iterdir():
        data = path.read_bytes()
        path.write_bytes(
            {
                "truncate": data[: len(data) // 2],
                "garbage": os.urandom(len(data)),
                "wrong type": pickle.dumps(("not", "an", "entry")),
                "wrong shape": pickle.dumps((marshal.dumps(compile("0", "", "eval")), "a", "b", "c", "d")),
                "empty": b"",
            }[damage]
        )
    _forget()
    computed.clear()
    assert _everything(name) == expected
    assert sorted(computed) == ["_analyze", "_compile_source", "_work_out"]
    _forget()
    computed.clear()
    assert _everything(name) == expected  # written again, read back
    assert computed == []


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757])
def test_a_folder_others_can_write_is_not_used(mode: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "shared"
    root.mkdir()
    root.chmod(mode)
    monkeypatch.setenv(disk_cache.ENV, str(root))
    assert disk_cache.cache_folder() is None
    _forget()
    ChatTemplate.load("Qwen3.5-4B").apply(CONVERSATION[1:2], tools=TOOLS)
    assert list(root.iterdir()) == []
    _forget()


def test_a_symlink_for_the_folder_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    monkeypatch.setenv(disk_cache.ENV, str(tmp_path / "link"))
    assert disk_cache.cache_folder() is None


@pytest.mark.parametrize("setting", ["off", "", "0", "OFF", "none"])
def test_off_writes_nothing(setting: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(disk_cache.ENV, setting)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    _forget()
    ChatTemplate.load("Qwen3.5-4B").apply(CONVERSATION[1:2], tools=TOOLS)
    _forget()
    assert disk_cache.cache_folder() is None
    assert list(tmp_path.iterdir()) == []


def test_the_default_folder_follows_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(disk_cache.ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    folder = disk_cache.cache_folder()
    assert folder is not None and folder.parent == tmp_path / "xdg" / "autoparser"


@pytest.mark.parametrize("error", [PermissionError(13, "Permission denied"), OSError(28, "No space left on device")])
def test_a_failing_write_costs_nothing_but_time(
    error: OSError, folder: Path, computed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(disk_cache.ENV, "off")
    expected = _everything("Qwen3.5-4B")
    monkeypatch.setenv(disk_cache.ENV, str(folder))
    _forget()

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise error

    monkeypatch.setattr(tempfile, "mkstemp", failing)
    assert _everything("Qwen3.5-4B") == expected
    (version,) = folder.iterdir()
    assert list(version.iterdir()) == []


def test_a_full_folder_drops_its_oldest_entries(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(disk_cache, "MAX_ENTRIES", 20)
    version = disk_cache.cache_folder()
    assert version is not None
    for index in range(19):
        disk_cache.save("test", f"old{index:02}", index)
        os.utime(version / f"old{index:02}.test", (1000 + index, 1000 + index))
    disk_cache.save("test", "new", "kept")
    assert len(list(version.iterdir())) == 20
    disk_cache.save("test", "newer", "kept too")  # 21 > 20: the oldest tenth (plus the excess) goes
    left = sorted(path.stem for path in version.iterdir())
    assert len(left) == 20 - 2
    assert "old00" not in left and "old01" not in left and "old02" not in left
    assert disk_cache.load("test", "new") == "kept" and disk_cache.load("test", "newer") == "kept too"


def test_other_code_versions_are_removed_past_the_limit(folder: Path) -> None:
    current = disk_cache.cache_folder()
    assert current is not None
    for index in range(disk_cache.KEEP_VERSIONS + 3):
        old = folder / f"v-old{index}"
        old.mkdir(mode=0o700)
        os.utime(old, (1000 + index, 1000 + index))
    disk_cache._folders.clear()  # a new process
    assert disk_cache.cache_folder() == current
    others = sorted(path.name for path in folder.iterdir() if path != current)
    assert len(others) == disk_cache.KEEP_VERSIONS - 1
    assert others == [f"v-old{index}" for index in range(4, disk_cache.KEEP_VERSIONS + 3)]


def test_an_edited_module_gets_a_folder_of_its_own(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    package = tmp_path / "package"
    (package / "sub").mkdir(parents=True)
    module = package / "sub" / "module.py"
    module.write_text("x = 1\n")
    monkeypatch.setattr(disk_cache, "_PACKAGE", package)
    monkeypatch.setattr(disk_cache, "_code_version", None)
    before = disk_cache._version()
    monkeypatch.setattr(disk_cache, "_code_version", None)
    assert disk_cache._version() == before  # stable
    module.write_text("x = 22\n")
    monkeypatch.setattr(disk_cache, "_code_version", None)
    assert disk_cache._version() != before


def test_keys_do_not_collide_across_parts() -> None:
    assert disk_cache.digest("ab", "c") != disk_cache.digest("a", "bc")
    assert disk_cache.digest("a", "") != disk_cache.digest("a")


def _analyse_in_a_process(name: str) -> bytes:
    template = ChatTemplate.load(name)
    return pickle.dumps((template.analysis, template.apply(CONVERSATION, tools=TOOLS).prompt))


def test_processes_filling_one_folder_at_once_agree(folder: Path) -> None:
    names = [n for n in bundled_templates() if n.startswith(("Qwen3", "NousResearch-Hermes", "meta-llama"))][:3]
    context = multiprocessing.get_context("spawn")
    with context.Pool(4) as pool:
        first = pool.map(_analyse_in_a_process, names * 4)  # every template by several processes at once
    with context.Pool(2) as pool:
        second = pool.map(_analyse_in_a_process, names)  # read back
    assert len(set(first)) == len(names)
    assert [pickle.loads(blob) for blob in second] == [pickle.loads(blob) for blob in first[: len(names)]]
    (version,) = folder.iterdir()
    assert not [path for path in version.iterdir() if path.name.startswith(".")]  # no temporary file left


def test_the_cache_command_shows_and_clears(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ChatTemplate.load("Qwen3.5-4B").apply(CONVERSATION[1:2], tools=TOOLS)
    assert main(["cache", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    version = disk_cache.cache_folder()
    assert shown["used"] and shown["root"] == str(folder) and shown["folder"] == str(version)
    assert shown["files"] == 3 and shown["bytes"] == sum(path.stat().st_size for path in version.iterdir())
    assert main(["cache", "--clear"]) == 0
    assert capsys.readouterr().out.startswith("removed 3 files\ndisk cache: ")
    assert list(version.iterdir()) == []


@pytest.mark.parametrize("setting", ["off", "shared"])
def test_the_cache_command_says_why_it_is_not_used(
    setting: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv(disk_cache.ENV, "off" if setting == "off" else str(shared))
    assert main(["cache"]) == 0
    said = capsys.readouterr().out
    assert said == (
        "disk cache off: AUTOPARSER_CACHE_DIR='off'\n"
        if setting == "off"
        else f"disk cache not used: {shared} is not a folder of this user's that only this user can write\n"
    )
    assert main(["cache", "--clear", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["removed"] == 0 and not shown["used"] and shown["files"] == 0


def test_warming_leaves_nothing_for_the_next_process(folder: Path, computed: list[str], tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    sources = {name: ChatTemplate.load(name).source for name in ("Qwen3.5-4B", "meta-llama-Llama-3.1-8B-Instruct")}
    config = {
        "chat_template": [
            {"name": "default", "template": sources["Qwen3.5-4B"]},
            {"name": "tool_use", "template": sources["meta-llama-Llama-3.1-8B-Instruct"]},
        ]
    }
    (model / "tokenizer_config.json").write_text(json.dumps(config))
    assert main(["cache", "--warm", "GLM-5.2", str(model)]) == 0
    assert sorted(computed).count("_analyze") == 3
    _forget()
    computed.clear()
    for template in (*ChatTemplate.from_pretrained(model).templates.values(), ChatTemplate.load("GLM-5.2")):
        template.apply(CONVERSATION[1:2], tools=TOOLS)
    assert "_analyze" not in computed and "_compile_source" not in computed and "_work_out" not in computed


def test_warming_without_a_usable_cache_fails(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(disk_cache.ENV, "off")
    assert main(["cache", "--warm", "GLM-5.2"]) == 1
    assert "nothing to warm: the disk cache is off: AUTOPARSER_CACHE_DIR='off'" in capsys.readouterr().err


def test_root_and_this_user_are_trusted_owners(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "getuid", lambda: 4242)
    assert disk_cache._trusted(4242) and disk_cache._trusted(0)
    assert not disk_cache._trusted(4243) and not disk_cache._trusted(1)
