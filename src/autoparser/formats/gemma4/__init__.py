"""Gemma 4 (dedicated format, see docs/formats.md): its markers, its parser and its grammar."""

from .grammar import build_grammar
from .parser import build_parser

__all__ = ["build_grammar", "build_parser"]
