"""The one error the UDFs raise to their caller (python_udfs imports nothing of dbrouter)."""

from __future__ import annotations


class EmbedderUnavailable(RuntimeError):
    """The configured embedding model is unknown or cannot be loaded (the message says what to install)."""
