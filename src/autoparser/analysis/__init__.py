"""Differential analysis of chat templates (diff primitives so far; the analyzers arrive with issue 3)."""
