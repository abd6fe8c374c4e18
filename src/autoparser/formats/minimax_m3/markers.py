"""MiniMax-M3's output markers: shared by its parser, its argument reader and its grammar."""

NS = "]<]minimax[>["  # the namespace token the model writes before every tag of a call
SECTION_START = "<tool_call>"
SECTION_END = "</tool_call>"
INVOKE_PREFIX = '<invoke name="'
NAME_END = '">'
INVOKE_END = "</invoke>"
EOS = "[e~["  # the template's end of turn; a serving stack normally stops on it
THINK_START = "<mm:think>"
THINK_END = "</mm:think>"
