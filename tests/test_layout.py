"""The package's layout keeps the shape docs/architecture.md describes (issue 20).

Data flows one way (template → analysis → parser and grammars → reading → message; requests, the integrations and
the server on top), so: no import circle between modules, no floor importing one above it, no folder growing past a
dozen modules, and the README's Layout section and the architecture page name exactly the folders there are.

Imports are read from the source (an ``ast`` walk), at any depth, a function's lazy import included; what runs only
for a type checker (``if TYPE_CHECKING:``) is left out: it never executes.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "autoparser"

# Each top-level part of the package, by floor: a part may import only parts on lower floors (and itself).
FLOORS: dict[str, int] = {
    "errors": 0,
    "cache": 0,
    "disk_cache": 0,
    "peg": 1,
    "template": 1,
    "templates": 1,
    "message": 1,
    "analysis": 2,
    "parser": 3,
    "requests": 3,
    "grammar": 4,
    "reading": 4,
    "formats": 5,
    "build": 6,
    "params": 7,
    "api": 8,
    "__init__": 9,
    "integrations": 9,
    "check": 9,
    "serve": 9,
    "batch": 9,
    "pipelines": 10,
    "cli": 10,
    "__main__": 11,
}
MAX_MODULES = 13  # "no folder with more than ~12 modules of different jobs"


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement except those under ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for branch in node.orelse:
                yield from _runtime_imports(branch)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from _runtime_imports(node)


def _imports(name: str, path: Path) -> set[str]:
    """The package's modules ``name`` imports (``from pkg import sub`` counts as importing ``pkg.sub``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
            continue
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            source = ".".join([*base, *([node.module] if node.module else [])])
        else:
            source = node.module or ""
        for alias in node.names:
            sub = f"{source}.{alias.name}"
            targets.add(sub if sub in MODULES else source)
    return {t for t in targets if t in MODULES and t != name}


@functools.cache
def _graph() -> dict[str, set[str]]:
    """Each module's imports of the package's modules (read when a test needs them, not at collection)."""
    return {name: _imports(name, path) for name, path in MODULES.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def test_the_walk_sees_the_package() -> None:
    # The checks below mean something only if the walk finds the modules and their imports.
    assert len(MODULES) > 100
    graph = _graph()
    assert "autoparser.parser.assemble" in graph["autoparser.build"]
    assert "autoparser.parser.tags" in graph["autoparser.params"]  # `from .parser import tags`
    assert "autoparser.peg.engine" not in graph["autoparser.peg.nodes"]  # TYPE_CHECKING only


def test_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]


def test_no_import_circle() -> None:
    assert _circles(_graph()) == []


def _part(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_part_has_a_floor() -> None:
    assert {_part(name) for name in MODULES} <= set(FLOORS)


def test_no_import_runs_up_the_chain() -> None:
    upward = sorted(
        f"{name} imports {target}"
        for name, targets in _graph().items()
        for target in targets
        if _part(name) != _part(target) and FLOORS[_part(target)] >= FLOORS[_part(name)]
    )
    assert upward == []


def _package_dirs() -> list[str]:
    return sorted(
        str(init.parent.relative_to(PACKAGE)) + "/" for init in PACKAGE.rglob("__init__.py") if init.parent != PACKAGE
    )


@pytest.mark.parametrize("folder", _package_dirs())
def test_no_folder_outgrows_a_dozen_modules(folder: str) -> None:
    modules = [p.name for p in (PACKAGE / folder).glob("*.py") if p.name != "__init__.py"]
    assert len(modules) <= MAX_MODULES, f"{folder} holds {len(modules)} modules: split it by job"


def test_readme_layout_matches_the_tree() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1]
    listed = sorted(set(re.findall(r"^  ([a-z_0-9/]+/)\s", block, re.M)))
    assert listed == _package_dirs()
    files = set(re.findall(r"^  ([a-z_]+\.py)\b", block, re.M))
    assert files and all((PACKAGE / f).is_file() for f in files)
    assert "docs/architecture.md" in section


def test_architecture_page_names_every_folder() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [folder for folder in _package_dirs() if folder not in page]
    assert missing == []
