"""Chat templates: an HF-compatible sandboxed Jinja environment, rendering, bundled templates."""

from .capabilities import TemplateCapabilities, probe_capabilities
from .chat_template import JinjaChatTemplate, bundled_templates

__all__ = ["JinjaChatTemplate", "TemplateCapabilities", "bundled_templates", "probe_capabilities"]
