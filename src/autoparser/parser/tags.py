"""AST tag names shared by the generated parsers and the mapper."""

REASONING = "reasoning"
CONTENT = "content"
TOOL = "tool"  # a whole call; its node is partial while the call is still arriving
TOOL_NAME = "tool-name"
TOOL_ID = "tool-id"
TOOL_ARGS = "tool-args"  # raw JSON arguments (JSON formats)
TOOL_ARG = "tool-arg"  # one tagged argument: name + value
TOOL_ARG_NAME = "tool-arg-name"
TOOL_ARG_STRING = "tool-arg-string"  # a string-typed tagged value (raw text)
TOOL_ARG_VALUE = "tool-arg-value"  # a tagged value that should be JSON (kept as a string if it is not)
TOOL_UNKNOWN = "tool-unknown"  # a member of a JSON call object that the format does not define
CUT = "cut"  # zero-width: a call closed by the end of the output rather than by its end marker
COMMIT = "commit"  # zero-width: the call is committed (announced); see peg.commit() / peg.recover()
STRAY = "stray"  # markup text a format reads but does not understand (a damaged channel name): kept in a warning
DROPPED = "dropped"  # markup a format leaves out of the message on purpose; reported with its text in a warning
UNPARSED = "unparsed"  # markup that did not parse as structure: kept as content, reported as a warning
UNCLOSED_REASONING = "unclosed-reasoning"  # zero-width: an unterminated reasoning block was read as ending at a call
UNOPENED_REASONING = "unopened-reasoning"  # an end marker whose block the model never opened (text before: reasoning)
MISSING = "missing:"  # zero-width, inside a call: prefix of a tag naming a marker the call was read without


UNCLOSED = "unclosed:"  # zero-width, inside a TOOL_ARG: prefix of a tag naming the end tag the value was read without


def missing(marker: str) -> str:
    """The tag of a zero-width node recording that a call was read without ``marker`` (a dropped special token)."""
    return MISSING + marker


def unclosed(marker: str) -> str:
    """The tag of a zero-width node recording that an argument's value was read without its end tag ``marker``: it
    ended where the next argument or the call's end began (the call is repaired)."""
    return UNCLOSED + marker


UNDECLARED = "undeclared"  # zero-width, inside a TOOL: the call names a tool the request does not declare
# The rest of a call that broke (peg.recover(..., rest=...)), up to where the call ends: left out, in a warning
MALFORMED = "malformed"
