"""OpenAI's Responses API (``POST /v1/responses``, served by ``app.responses``) on the server's one completion
endpoint.

A Responses body is translated into the equivalent chat request (:mod:`.request`, :mod:`.inputs`; errors renamed to
the Responses fields: :mod:`.names`), rendered, sent and parsed exactly as the chat endpoint does it, and the
reply's events are written as a ``response`` object or its event stream (:mod:`.encoder`, :mod:`.shapes`). The
server is stateless: nothing is stored, ``previous_response_id`` is refused (docs/serving.md).
"""

from .encoder import ResponsesEncoder
from .request import Translation, read_responses_request

__all__ = ["ResponsesEncoder", "Translation", "read_responses_request"]
