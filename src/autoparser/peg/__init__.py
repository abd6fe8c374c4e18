"""PEG parsing engine: streaming-aware combinators, JSON parsers, GBNF generation."""
