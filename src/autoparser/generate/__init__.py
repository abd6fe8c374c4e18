"""Placeholder: arrives with a later issue."""
