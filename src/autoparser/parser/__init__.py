"""parser."""
