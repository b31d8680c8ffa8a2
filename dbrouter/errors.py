"""Error classes; every message says what to do next.

This module imports nothing from the rest of the package, so ``python_udfs`` can raise these
errors without pulling in the CLI, the LLM client or DuckDB.
"""

from __future__ import annotations


class DbrouterError(Exception):
    """Base class of dbrouter's errors."""


class SourcesConfigError(DbrouterError):
    """The sources file is missing or malformed."""


class SourceError(DbrouterError):
    """One source database cannot be read; the rest of the knowledge base still builds."""

    def __init__(self, db_id: str, message: str) -> None:
        super().__init__(f"database {db_id!r}: {message}")
        self.db_id = db_id


class WarehouseError(DbrouterError):
    """The warehouse file is missing or has no knowledge base yet."""


class EmbedderUnavailable(DbrouterError):
    """The configured embedding model is unknown or cannot be loaded."""


class EmbedderMismatch(DbrouterError):
    """The embedder on a connection is not the one the knowledge base's vectors were made with."""


class EvidenceError(DbrouterError):
    """The route evidence JSON is not what this version of dbrouter expects (rebuild the KB)."""


class DbtRunError(DbrouterError):
    """`dbt build` failed; its log holds the details."""


class BenchmarkError(DbrouterError):
    """A benchmark directory is missing files or malformed."""
