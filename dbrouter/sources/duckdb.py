"""DuckDB files as sources (``type: duckdb``, ``path`` or ``glob``).

A DuckDB file is untrusted: its views run whatever SQL their author wrote. Every reader opens it
through :func:`open_duckdb_source` (read-only, no file or network access, no extension loading,
configuration locked), so a view over ``read_text('/proc/self/environ')`` fails instead of
putting the build's secrets into the knowledge base.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import ClassVar

from dbrouter import settings
from dbrouter.errors import SourceError, UnsafeSQL
from dbrouter.query.results import QueryResult, collect, missing_file, timed_out
from dbrouter.sources.base import (
    ColumnInfo,
    DatabaseSnapshot,
    FileSource,
    ForeignKey,
    Issue,
    QueryClock,
    SourceSpec,
    TableInfo,
    digest,
    label_of,
    quote_ident,
    sample_values,
)

SOURCE_MEMORY_LIMIT = "2GB"
"""DuckDB's memory for one opened source file (``$DBROUTER_SOURCE_MEMORY_LIMIT`` overrides; DuckDB's
own default is 80% of the machine's RAM)."""


def open_duckdb_source(path: str | Path):
    """Open a DuckDB file that someone else wrote: read-only, no file or network access, bounded, locked.

    A source file is untrusted: its views run whatever SQL its author wrote, e.g.
    ``read_text('/proc/self/environ')``. External access (files, URLs, ATTACH, COPY) and extension
    installing/autoloading are off and the configuration is locked, so no view can turn them back
    on; evaluating such a view fails instead of reading the file. Memory is capped at
    :data:`SOURCE_MEMORY_LIMIT` and nothing spills to disk (DuckDB would write ``<file>.tmp/`` next
    to the source): a query that needs more fails with DuckDB's out-of-memory error. Every reader
    of a DuckDB source (introspection, the refresh fingerprint, ``ask``'s runner) opens it here.

    Args:
        path: the DuckDB file.

    Returns:
        A ``duckdb.DuckDBPyConnection``.

    Raises:
        duckdb.Error: the file cannot be opened (missing, locked for writing, not DuckDB), or
            ``$DBROUTER_SOURCE_MEMORY_LIMIT`` is not a DuckDB memory size.
    """

    import duckdb

    config = {"autoinstall_known_extensions": False, "autoload_known_extensions": False,
              "memory_limit": settings.get("DBROUTER_SOURCE_MEMORY_LIMIT") or SOURCE_MEMORY_LIMIT}
    con = duckdb.connect(str(path), read_only=True, config=config)  # ty: ignore[invalid-argument-type] - duckdb takes booleans
    try:
        # in this order: no temp directory can be set once external access is off
        con.execute("SET temp_directory=''")
        con.execute("SET enable_progress_bar=false")  # DuckDB draws one on the terminal for a query over 2 s
        con.execute("SET enable_external_access=false")
        con.execute("SET lock_configuration=true")
    except Exception:
        con.close()
        raise
    return con


def read_duckdb(spec: SourceSpec, db_id: str, n_samples: int, chars: int) -> DatabaseSnapshot:
    """Introspect a DuckDB file through a read-only connection (comments become descriptions)."""
    import duckdb

    path = Path(spec.path)
    if not path.is_file():
        raise SourceError(db_id, f"DuckDB file {path} not found: fix `path` in the sources file")
    try:
        con = open_duckdb_source(path)
    except Exception as exc:  # duckdb raises several error classes here
        raise SourceError(db_id, f"cannot open {path} as DuckDB: {exc}") from exc
    snap = DatabaseSnapshot(db_id, "duckdb", str(path), spec.description)
    clock = QueryClock()
    watching = clock.watch(con.interrupt)
    fetch = clock.fetcher(con)
    try:
        tables = con.execute(
            "SELECT schema_name, table_name, comment, 'table' FROM duckdb_tables() "
            "WHERE NOT internal AND database_name = current_database() UNION ALL "
            "SELECT schema_name, view_name, comment, 'view' FROM duckdb_views() "
            "WHERE NOT internal AND NOT temporary AND database_name = current_database() ORDER BY 1, 2").fetchall()
        cons = con.execute(
            "SELECT schema_name, table_name, constraint_type, constraint_column_names, "
            "referenced_table, referenced_column_names FROM duckdb_constraints() "
            "WHERE database_name = current_database() AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')").fetchall()
        qual = lambda s, t: t if s == "main" else f"{s}.{t}"  # noqa: E731
        pk_cols = {(qual(s, t), c) for s, t, kind, cols, _rt, _rc in cons if kind == "PRIMARY KEY" for c in cols}
        for schema, tname, comment, kind in tables:
            name = qual(schema, tname)
            table = TableInfo(name, label_of(tname), description=comment or None, kind=kind)
            rel = f"{quote_ident(schema)}.{quote_ident(tname)}"
            cols = con.execute(
                "SELECT column_name, column_index, data_type, comment FROM duckdb_columns() "
                "WHERE database_name = current_database() AND schema_name = ? AND table_name = ? "
                "ORDER BY column_index", [schema, tname]).fetchall()
            table.columns = [ColumnInfo(cname, label_of(cname), int(idx), str(dtype).lower(),
                                        (name, cname) in pk_cols, ccomment or None)
                             for cname, idx, dtype, ccomment in cols]
            try:
                if not clock.exhausted():
                    table.row_count = fetch(f"SELECT count(*) FROM {rel}")[0][0]
                    for col in table.columns:
                        col.samples = sample_values(fetch, rel, col.name, n_samples, chars)
            except duckdb.Error as exc:
                if not clock.fired:
                    # A view over read_text()/read_blob()/a URL fails here: that is the guard working.
                    snap.issues.append(Issue(db_id, name, "warning", f"{kind} skipped: it cannot be read with file "
                                             f"and network access off, as sources are opened "
                                             f"({' '.join(str(exc).split())[:300]})"))
                    continue
                snap.issues.append(Issue(db_id, name, "warning", f"{kind} kept without count or all samples: "
                                         f"{clock.why()}"))
            snap.tables.append(table)
        if clock.exhausted():
            snap.issues.append(Issue(db_id, None, "warning", f"some tables have no count or samples: {clock.why()}"))
        for schema, tname, kind, cols, ref_table, ref_cols in cons:
            if kind == "FOREIGN KEY":
                for c, rc in zip(cols, ref_cols or []):
                    snap.foreign_keys.append(ForeignKey(qual(schema, tname), c, ref_table, rc))
    except duckdb.Error as exc:
        raise SourceError(db_id, f"cannot read {path} as DuckDB: {' '.join(str(exc).split())}") from exc
    finally:
        watching.set()
        con.close()
    return snap


def fingerprint_duckdb(path: str | Path) -> str:
    """Hash of a DuckDB file's schema: tables, views, columns with types and comments, keys.

    Reads only DuckDB's catalog functions through a read-only connection.

    Args:
        path: the DuckDB file.

    Returns:
        A hex sha256.

    Raises:
        SourceError: the file is missing, cannot be opened (e.g. another process has it open for
            writing) or read.
    """
    import duckdb

    path = Path(path)
    if not path.is_file():
        raise SourceError(path.stem, f"DuckDB file {path} not found: fix `path` in the sources file")
    try:
        con = open_duckdb_source(path)
    except Exception as exc:  # noqa: BLE001 - duckdb raises several error classes here
        raise SourceError(path.stem, f"cannot open {path} as DuckDB: {' '.join(str(exc).split())}") from exc
    here = "database_name = current_database() AND NOT internal"
    try:
        parts = [
            con.execute(f"SELECT schema_name, table_name, comment FROM duckdb_tables() WHERE {here} "
                        "ORDER BY 1, 2").fetchall(),
            con.execute(f"SELECT schema_name, view_name, comment, sql FROM duckdb_views() WHERE {here} "
                        "ORDER BY 1, 2").fetchall(),
            con.execute(f"SELECT schema_name, table_name, column_index, column_name, data_type, comment, "
                        f"is_nullable FROM duckdb_columns() WHERE {here} ORDER BY 1, 2, 3").fetchall(),
            con.execute("SELECT schema_name, table_name, constraint_type, constraint_column_names, referenced_table, "
                        "referenced_column_names FROM duckdb_constraints() WHERE database_name = current_database() "
                        "AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY', 'UNIQUE') "
                        "ORDER BY 1, 2, 3, 4::varchar").fetchall(),
        ]
    except duckdb.Error as exc:
        raise SourceError(path.stem, f"cannot read the schema of {path} as DuckDB: "
                                     f"{' '.join(str(exc).split())}") from exc
    finally:
        con.close()
    return digest(["duckdb", parts])


class DuckdbSource(FileSource):
    """``type: duckdb``: one DuckDB file a database (see :class:`dbrouter.sources.base.SourceType`)."""

    name: ClassVar[str] = "duckdb"

    def read_file(self, spec: SourceSpec, db_id: str, n_samples: int, chars: int) -> DatabaseSnapshot:
        """See :func:`read_duckdb`."""
        return read_duckdb(spec, db_id, n_samples, chars)

    def fingerprint_file(self, path: Path) -> str:
        """See :func:`fingerprint_duckdb`."""
        return fingerprint_duckdb(path)

    def run_file(self, path: Path, sql: str, timeout: float, row_cap: int) -> QueryResult:
        """See :func:`run_duckdb`."""
        return run_duckdb(path, sql, timeout, row_cap)


# ---------------------------------------------------------------------------------------------
# running SQL (dbrouter.execute.runners.execute checks it first)

def _duckdb_open_error(path: Path, exc: Exception) -> str:
    text = str(exc)
    if "lock" in text.lower():
        return (f"DuckDB file {path} is locked by another process that has it open for writing: close that "
                f"program (or wait for it to finish) and run the query again ({text})")
    if "different configuration" in text.lower():
        return (f"DuckDB file {path} is already open in this process with another configuration (read-write): "
                f"close that connection first ({text})")
    return f"cannot open {path} as DuckDB: {text}"


def run_duckdb(path: Path, sql: str, timeout: float, row_cap: int, require_select: bool = True) -> QueryResult:
    """Low-level runner: run ``sql`` on a read-only DuckDB connection (use
    :func:`dbrouter.execute.runners.execute`, which checks the SQL).

    The file is opened ``read_only=True`` with external access and extension loading disabled and
    the configuration locked, so a write, ATTACH, COPY or file read that reaches it fails.

    Args:
        path: the DuckDB file.
        sql: one statement.
        timeout: seconds before a timer interrupts the statement.
        row_cap: rows kept.
        require_select: also ask DuckDB's own parser that ``sql`` is exactly one SELECT (False only
            to test the connection's own protection).

    Returns:
        The :class:`QueryResult` (database errors, refusals and timeouts in ``error``).
    """
    import duckdb

    missing = missing_file(path, "DuckDB")
    if missing:
        return missing
    try:
        con = open_duckdb_source(path)
    except duckdb.Error as exc:
        return QueryResult(error=_duckdb_open_error(Path(path), exc))
    result = QueryResult()
    fired = threading.Event()

    def interrupt() -> None:
        fired.set()
        con.interrupt()

    timer = threading.Timer(timeout, interrupt)
    start = time.monotonic()
    try:
        if require_select:
            statements = con.extract_statements(sql)
            if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
                kinds = ", ".join(s.type.name for s in statements)
                raise UnsafeSQL(f"DuckDB reads this as {len(statements)} statement(s) of type {kinds or 'none'}")
        timer.start()
        cursor = con.execute(sql)
        result.columns = [d[0] for d in cursor.description or []]
        collect(cursor, result, row_cap)
    except duckdb.Error as exc:
        if fired.is_set() or isinstance(exc, duckdb.InterruptException):
            timed_out(result, timeout)
        else:
            result.error = str(exc)
            result.rows, result.total_rows, result.truncated = [], 0, False
    finally:
        timer.cancel()
        con.close()
    result.seconds = time.monotonic() - start
    return result
