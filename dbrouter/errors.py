"""Error classes; every message says what to do next.

This module imports nothing from the rest of the package; ``python_udfs`` imports nothing of
dbrouter at all (its one error, :class:`EmbedderUnavailable`, is defined in
:mod:`python_udfs.errors` and listed in :data:`USER_ERRORS`).
"""

from __future__ import annotations

from python_udfs.errors import EmbedderUnavailable


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


class EmbedderMismatch(DbrouterError):
    """The embedder on a connection is not the one the knowledge base's vectors were made with."""


class EvidenceError(DbrouterError):
    """The route evidence JSON is not what this version of dbrouter expects (rebuild the KB)."""


class DbtRunError(DbrouterError):
    """`dbt build` failed; its log holds the details."""


class BenchmarkError(DbrouterError):
    """A benchmark directory is missing files or malformed."""


# python_udfs is a leaf (it imports nothing of dbrouter, so the Snowflake code zip ships it alone):
# its one user-facing error is defined there and counted here among the errors a command reports in
# one line.
USER_ERRORS: tuple[type[Exception], ...] = (DbrouterError, EmbedderUnavailable)
"""What commands, the endpoint and builds report as one message instead of a traceback."""
