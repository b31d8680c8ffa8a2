"""The embedders' names, kept once and importable without numpy (the CLI's `--embedder` choices)."""

from __future__ import annotations

EMBEDDERS = ("minilm", "m2v", "hash")
"""The shipped embedders (python_udfs.embeddings implements each)."""

DEFAULT_EMBEDDER = "minilm"
"""The embedder used when neither an argument nor ``$DBROUTER_EMBEDDER`` names one."""
