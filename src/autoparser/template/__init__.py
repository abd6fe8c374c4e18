"""Chat templates: an HF-compatible sandboxed Jinja environment, rendering, bundled templates."""

from .chat_template import ChatTemplate, bundled_templates

__all__ = ["ChatTemplate", "bundled_templates"]
