"""autoparser: learn a model's output markup from its chat template and parse what it writes."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("autoparser")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"

from .analysis.model import TemplateAnalysis
from .api import ChatTemplate
from .cache import cache_usage, set_cache_budget
from .message import CallStatus, ChatMessage, MessageDelta, ToolCall, ToolCallDelta, merge_deltas
from .params import ChatParams
from .template.chat_template import bundled_templates
from .template.limits import RenderLimits

__all__ = [
    "CallStatus",
    "ChatMessage",
    "ChatParams",
    "ChatTemplate",
    "MessageDelta",
    "RenderLimits",
    "TemplateAnalysis",
    "ToolCall",
    "ToolCallDelta",
    "__version__",
    "bundled_templates",
    "cache_usage",
    "merge_deltas",
    "set_cache_budget",
]
