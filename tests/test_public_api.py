"""The public names are a contract: `__all__` lists exactly what the packages export."""

from __future__ import annotations

import subprocess
import sys

import autoparser
from autoparser import errors, peg


def test_peg_all_is_sorted_and_complete() -> None:
    assert peg.__all__ == sorted(peg.__all__)
    for name in peg.__all__:
        assert hasattr(peg, name), name


def test_issue_combinator_names_exist() -> None:
    names = [
        "eps", "start", "end", "literal", "any", "chars", "sequence", "choice", "optional", "zero_or_more",
        "one_or_more", "repeat", "peek", "negate", "space", "until", "until_one_of", "rest", "rule", "ref",
        "trigger_rule", "atomic", "tag", "schema", "json", "object", "array", "string", "string_content",
        "number", "bool", "null", "member", "python_value", "to_gbnf",
    ]
    for name in names:
        assert callable(getattr(peg, name)), name


def test_errors_hierarchy() -> None:
    assert issubclass(errors.GrammarError, errors.AutoparserError) and issubclass(errors.GrammarError, ValueError)
    assert issubclass(errors.SchemaError, errors.GrammarError)
    assert issubclass(errors.PatternError, errors.SchemaError)
    assert issubclass(errors.ParseError, errors.AutoparserError)


def test_cli_version() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "autoparser", "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == f"autoparser {autoparser.__version__}"
