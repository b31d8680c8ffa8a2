"""The connection every stage takes as ``con``: what dbrouter asks of it, as a Protocol.

A DuckDB connection from :func:`dbrouter.connect` (or a ``cursor()`` of one) is one; so is the
CLI's :class:`dbrouter.serve.client.EndpointConnection`, which routes through a running
`dbrouter serve`. Code that needs more of DuckDB (UDFs, temp macros, Arrow results) takes
``duckdb.DuckDBPyConnection`` instead.
"""

from __future__ import annotations

import weakref
from typing import Any, Protocol

SCOPE_VARIABLE = "dbrouter_allowed_databases"
"""The DuckDB session variable of an access scope: the databases a restricted session may see
(:func:`dbrouter.access.scope_ddl` sets it; macro ``allowed_database`` and the held routing query
read it)."""

#: The route path of each connection (or cursor) whose dbrouter calls name the path's entry points
#: (``route_query_json_udf``) rather than the plain names (:func:`entry`). Weak: a dropped
#: connection leaves it.
_PATHS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


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


def record_route_path(con: Connection, route_path: str) -> None:
    """Make dbrouter's functions call ``route_path``'s entry points on ``con`` (:func:`entry`).

    For a connection or cursor that has no plain names (they are temp macros, per cursor) but
    whose KB has both paths (:func:`dbrouter.kb.connect.route_path_ddl` is not None).

    Args:
        con: a connection or cursor on a built warehouse with the UDFs registered.
        route_path: ``udf`` or ``sql`` (checked by the caller).
    """
    _PATHS[con] = route_path


def entry(con: Connection, name: str) -> str:
    """The name dbrouter's functions call the entry point ``name`` by on ``con``.

    Args:
        con: any connection: from :func:`dbrouter.connect`, a cursor given
            :func:`record_route_path`, a plain DuckDB connection, or a `dbrouter serve` endpoint.
        name: a plain entry-point name (``route_query_json``, ``retrieve_examples``, ...).

    Returns:
        ``<name>_<path>`` for a connection whose path is recorded; otherwise ``name``, which on
        such a connection is what its plain name is (a plain DuckDB client's: the pure-SQL path;
        an endpoint's: its sessions' path; a KB built before the two paths: the only one).
    """
    try:
        path = _PATHS.get(con)
    except TypeError:  # an object that cannot be weakly referenced was never recorded
        path = None
    return f"{name}_{path}" if path else name
