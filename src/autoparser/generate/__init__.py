"""Parser generation: from a template analysis and a request, the PEG parser for the model's output."""

from .assemble import GeneratedParser, build_parser
from .request import ParseRequest, ToolSpec

__all__ = ["GeneratedParser", "ParseRequest", "ToolSpec", "build_parser"]
