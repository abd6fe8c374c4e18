"""MiniMax-M3 (dedicated format, see docs/formats.md): its markers, its parser, its XML argument reader and its
grammar."""

from .grammar import build_grammar
from .parser import build_parser

__all__ = ["build_grammar", "build_parser"]
