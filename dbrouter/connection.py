"""The connection every stage takes as ``con``: what dbrouter asks of it, as a Protocol.

A DuckDB connection from :func:`dbrouter.connect` (or a ``cursor()`` of one) is one; so is the
CLI's :class:`dbrouter.serve.client.EndpointConnection`, which routes through a running
`dbrouter serve`. Code that needs more of DuckDB (UDFs, temp macros, Arrow results) takes
``duckdb.DuckDBPyConnection`` instead.
"""

from __future__ import annotations

from typing import Any, Protocol


class Cursor(Protocol):
    """The result of :meth:`Connection.execute`, read like a DB-API cursor."""

    @property
    def description(self) -> Any:
        """The result's columns (DB-API ``description``), None for a statement without rows."""
        ...

    def fetchall(self) -> list[Any]:
        """Every remaining row."""
        ...

    def fetchone(self) -> Any:
        """The next row, or None."""
        ...


class Connection(Protocol):
    """A connection to the knowledge base: statements with ``?`` parameters, read as cursors."""

    def execute(self, query: str, parameters: Any = None, /) -> Cursor:
        """Run one statement."""
        ...

    def close(self) -> None:
        """Close it."""
        ...
