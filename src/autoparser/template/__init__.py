"""Chat templates: an HF-compatible sandboxed Jinja environment, rendering, bundled templates."""

from .capabilities import TemplateCapabilities, probe_capabilities
from .chat_template import JinjaChatTemplate, bundled_templates
from .limits import DEFAULT_LIMITS, RenderLimits

__all__ = [
    "DEFAULT_LIMITS",
    "JinjaChatTemplate",
    "RenderLimits",
    "TemplateCapabilities",
    "bundled_templates",
    "probe_capabilities",
]
