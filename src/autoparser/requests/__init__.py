"""The request side: OpenAI chat requests as clients send them, shaped into what a chat template renders.

``ChatTemplate.apply()`` (and the CLI and the vLLM plugin through it) runs every request through here:

* :mod:`.content_format` — does the template read content as a string or as a list of parts (vLLM's rule);
* :mod:`.profile` — per template, learned once: content shape per role, media, developer role, argument shape,
  call id format;
* :mod:`.messages` — the messages normalised by the profile (and which texts the rendered prompt left out);
* :mod:`.json_data` — request data that prints as JSON, never as a Python repr;
* :mod:`.call_ids` — client call ids mapped into the template's id format;
* :mod:`.checks` — request data of bounded depth without lone surrogates, schemas that are JSON Schema;
* :mod:`.tools` — the tools checked, and completed with OpenAI's defaults where a template needs them.

docs/requests.md says what is normalised and why, and how the prompts compare with transformers and vLLM.
"""

from .checks import MAX_DEPTH, check_json_data, check_schema
from .content_format import ContentFormat, content_format
from .messages import NormalizedMessages, left_out, normalize_messages
from .profile import RequestProfile, request_profile
from .tools import check_tools, missing_defaults, with_defaults

__all__ = [
    "MAX_DEPTH",
    "ContentFormat",
    "NormalizedMessages",
    "RequestProfile",
    "check_json_data",
    "check_schema",
    "check_tools",
    "content_format",
    "left_out",
    "missing_defaults",
    "normalize_messages",
    "request_profile",
    "with_defaults",
]
