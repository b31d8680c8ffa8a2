"""Running generated SQL on a user's database, read-only, bounded in time and rows.

Only one read-only statement ever runs. Three layers, each enough on its own for the common cases:

1. :func:`check_read_only` parses the SQL with sqlglot and refuses anything but one SELECT
   (``WITH ... SELECT``, ``UNION``/``INTERSECT``/``EXCEPT``): no DML/DDL anywhere in the tree (also
   data-modifying CTEs), no PRAGMA/ATTACH/COPY/SET/... commands, no function that reads files, the
   network or the environment, no DuckDB file-path table references (``FROM 'data.csv'``).
2. The source type's ``run`` (:meth:`dbrouter.sources.base.SourceType.run`, called by
   :func:`execute`) checks again with the engine's own parser where it has one (DuckDB
   ``extract_statements`` must find exactly one SELECT; Python's sqlite3 refuses a second statement).
3. The connection cannot write: SQLite opens the file with a ``mode=ro`` URI, ``PRAGMA query_only``
   and an authorizer allowing only reads; DuckDB opens it ``read_only=True`` with external access
   (files, network, extensions) disabled and the configuration locked.

A timeout (SQLite progress handler, DuckDB ``interrupt()`` from a timer, a server's statement
timeout) and a row cap (:func:`dbrouter.query.results.collect`) bound the work. A new source type
runs SQL by giving its ``run``; nothing here lists the types.
"""

from __future__ import annotations

import dataclasses

from dbrouter.connection import Connection
from dbrouter.errors import DbrouterError
from dbrouter.query.guard import UnsafeSQL, check_read_only
from dbrouter.query.results import QueryResult
from dbrouter.sources.base import Target
from dbrouter.sources.registry import source_type

# ---------------------------------------------------------------------------------------------
# target_for


def target_for(con: Connection, db_id: str) -> Target:
    """The executable source of ``db_id`` from ``kb_databases`` (source_type/source_path).

    Args:
        con: KB connection from :func:`dbrouter.connect`.
        db_id: a database of the knowledge base.

    Returns:
        The :class:`Target` (``sqlite`` or ``duckdb`` file) SQL for ``db_id`` runs on.

    Raises:
        DbrouterError: ``db_id`` is not in the knowledge base (the message names close db_ids).
        NoDataSource: the database was ingested without data (schema file) or its file is gone.
    """
    from dbrouter.retrieval import require_database

    require_database(con, db_id)
    kind, path = con.execute("select source_type, source_path from kb_databases where db_id = ?", [db_id]).fetchone()
    target = source_type(kind).target(db_id, path)
    if target.url is not None and kind == "url":  # a server: its role may see more than this database
        target = dataclasses.replace(target, tables=kb_table_names(con, db_id))
    return target


def kb_table_names(con: Connection, db_id: str) -> frozenset[str]:
    """The tables the knowledge base holds for ``db_id``, as :attr:`Target.tables` names them.

    Args:
        con: KB connection.
        db_id: a database of the knowledge base.

    Returns:
        Lower-case table names and shard-group patterns (``events_*``).
    """
    rows = con.execute("select table_name, shard_pattern from kb_tables where db_id = ?", [db_id]).fetchall()
    return frozenset({str(n).lower() for n, _ in rows} | {str(p).lower() for _, p in rows if p})




# ---------------------------------------------------------------------------------------------
# execute

def execute(target: Target, sql: str, timeout: float = 30.0, row_cap: int = 1000) -> QueryResult:
    """Check and run ``sql`` read-only on ``target`` (errors returned in ``QueryResult.error``).

    Args:
        target: the database (from :func:`target_for` or :func:`dbrouter.eval.dumps.targets`).
        sql: one SELECT in the target's dialect (:attr:`Target.dialect`).
        timeout: seconds before the statement is stopped (``timed_out`` set).
        row_cap: rows kept in ``QueryResult.rows``; more are counted (up to ``COUNT_FACTOR`` times).

    Returns:
        The :class:`QueryResult`; a database error, a timeout, a missing or locked file, an
        unreachable server is in ``error``.

    Raises:
        UnsafeSQL: the SQL is not one read-only SELECT in the target's dialect (nothing ran).
        DbrouterError: ``target.kind`` is no source type, or timeout/row_cap are not positive.
        NoDataSource: SQL does not run on that type (schema files, Snowflake).
    """
    kind = source_type(target.kind)
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise DbrouterError(f"timeout must be a positive number of seconds, not {timeout!r}")
    if not (isinstance(row_cap, int) and row_cap >= 0):
        raise DbrouterError(f"row_cap must be a non-negative integer, not {row_cap!r}")
    statement = check_read_only(sql, target.dialect)
    if target.tables is not None:
        check_tables(statement, target)
    return kind.run(target, statement, timeout, row_cap)


def check_tables(sql: str, target: Target) -> None:
    """Refuse SQL that reads a relation outside ``target``'s tables (:attr:`Target.tables`).

    Each table a statement reads is found with sqlglot's scope resolution, so a CTE is told from a
    table of the same name in every scope; an unqualified name is the home schema's (the search
    path :func:`dbrouter.sources.url.run_url` sets), a qualified one must name a schema the
    knowledge base holds for this database, and a catalog (``pg_catalog``, ``information_schema``)
    is not one of them.

    Args:
        sql: one checked SELECT in ``target``'s dialect.
        target: a target with :attr:`Target.tables`.

    Raises:
        UnsafeSQL: a relation outside the database, or SQL whose scopes cannot be resolved.
    """
    import sqlglot
    from sqlglot import exp
    from sqlglot.optimizer.scope import traverse_scope

    assert target.tables is not None
    try:
        scopes = traverse_scope(sqlglot.parse_one(sql, read=target.dialect))
    except Exception as exc:  # noqa: BLE001 - sqlglot's OptimizeError and parse errors
        raise UnsafeSQL(f"cannot tell which tables this statement reads ({' '.join(str(exc).split())[:200]})") from None
    home = (target.schema or "").lower()
    for scope in scopes:
        for source in scope.sources.values():
            if not isinstance(source, exp.Table) or not isinstance(source.this, exp.Identifier):
                continue  # a CTE or subquery (its own scope is checked), or a table function
            schema, name = source.db.lower(), source.name.lower()
            qualified = name if schema in ("", home) and not source.catalog else f"{schema}.{name}"
            if source.catalog or not _known_table(qualified, target.tables):
                shown = ".".join(p for p in (source.catalog, source.db, source.name) if p)
                raise UnsafeSQL(f"table {shown} is not a table of database {target.db_id} in the knowledge base "
                                "(only its own tables are read here)")


def _known_table(name: str, tables: frozenset[str]) -> bool:
    from fnmatch import fnmatchcase

    return name in tables or any("*" in t and fnmatchcase(name, t) for t in tables)
