"""Gemma 4's output markers: shared by its parser and its grammar."""

CALL_START = "<|tool_call>"
CALL_PREFIX = "call:"
CALL_END = "<tool_call|>"
QUOTE = '<|"|>'
CHANNEL_START = "<|channel>"
CHANNEL_END = "<channel|>"
THOUGHT = "thought"
TURN_END = "<turn|>"
RESPONSE_START = "<|tool_response>"
