"""The examples of docs/batch.md, by name (``<!-- example: NAME -->`` before a code block), for the tests that run
them: the command and the Python API here, the pipelines in tests/pipelines."""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "batch.md"


def example(name: str) -> str:
    found = re.search(rf"<!-- example: {re.escape(name)} -->\n```\w*\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert found is not None, f"docs/batch.md has no example {name!r}"
    return found.group(1)


def shown_output() -> list[str]:
    """The output the page shows for the command: the JSON block after "then holds"."""
    page = PAGE.read_text(encoding="utf-8")
    block = re.search(r"then holds.*?```json\n(.*?)```", page, re.S)
    assert block is not None
    return block.group(1).splitlines()
