"""answer."""
