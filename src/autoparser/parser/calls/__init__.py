"""calls."""
