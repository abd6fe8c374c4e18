"""Reading model output with a built parser: from the tagged parse tree to OpenAI-style messages.

:mod:`.mapper` turns the tree into a :class:`~autoparser.message.ChatMessage` (content, reasoning, tool calls,
warnings), prefix-monotone so that a stream can only append; :mod:`.streaming` turns a growing output into
append-only :class:`~autoparser.message.MessageDelta` objects, parsing incrementally; :mod:`.json_args` decides what a
client is shown of raw JSON arguments while they arrive. One reader serves every format, generic or dedicated: all
of them tag their trees with :mod:`autoparser.parser.tags`.
"""
