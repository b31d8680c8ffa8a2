"""serve."""
