"""The ``autoparser`` command line. A thin layer: ``format_*`` build strings, ``main`` does the I/O."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import __version__

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (subcommands arrive with later features)."""
    parser = argparse.ArgumentParser(
        prog="autoparser",
        description="Learn an LLM's output markup from its chat template and parse what it writes.",
    )
    parser.add_argument("--version", action="version", version=f"autoparser {__version__}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    parser = build_parser()
    parser.parse_args(argv)
    parser.print_help(sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
