"""Anthropic's Messages API on the same server: ``POST /v1/messages`` (streamed and not) and
``POST /v1/messages/count_tokens``, in front of the same template and upstream as the chat endpoint.

A Messages request is translated into the equivalent chat-completions request (:mod:`.request`), so it renders
exactly as the chat endpoint renders that request; the reply's events (:mod:`..events`) are written as Anthropic's
content blocks (:mod:`.encoder`). Thinking blocks carry signatures the server can check when they come back
(:mod:`.signatures`); the model's call ids travel as ``toolu_`` ids that decode back to them (:mod:`.ids`); errors
are Anthropic's shape and codes (:mod:`.errors`, :mod:`.failures`). :mod:`.routes` puts it together. See
docs/serving.md, "Anthropic Messages API".

Nothing is imported here: :mod:`..security` reads :mod:`.errors` while the server's modules are still loading.
"""
