"""enrich."""
