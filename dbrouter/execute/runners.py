"""Running generated SQL on a user's database, read-only, bounded in time and rows.

Only one read-only statement ever runs. Three layers, each enough on its own for the common cases:

1. :func:`check_read_only` parses the SQL with sqlglot and refuses anything but one SELECT
   (``WITH ... SELECT``, ``UNION``/``INTERSECT``/``EXCEPT``): no DML/DDL anywhere in the tree (also
   data-modifying CTEs), no PRAGMA/ATTACH/COPY/SET/... commands, no function that reads files, the
   network or the environment, no DuckDB file-path table references (``FROM 'data.csv'``).
2. :func:`execute` checks again with the engine's own parser where it has one (DuckDB
   ``extract_statements`` must find exactly one SELECT; Python's sqlite3 refuses a second statement).
3. The connection cannot write: SQLite opens the file with a ``mode=ro`` URI, ``PRAGMA query_only``
   and an authorizer allowing only reads; DuckDB opens it ``read_only=True`` with external access
   (files, network, extensions) disabled and the configuration locked.

A timeout (SQLite progress handler, DuckDB ``interrupt()`` from a timer) and a row cap bound the work.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path

from dbrouter.errors import DbrouterError
from dbrouter.execute.guard import UnsafeSQL, check_read_only
from dbrouter.execute.results import COUNT_FACTOR, QueryResult
from dbrouter.sources.base import Target, quote_ident
from dbrouter.sources.duckdb import open_duckdb_source
from dbrouter.sources.registry import source_type

BATCH = 500


# ---------------------------------------------------------------------------------------------
# target_for


def target_for(con, db_id: str) -> Target:
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


def kb_table_names(con, db_id: str) -> frozenset[str]:
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

# SQLite functions touching files or extensions (the CLI's readfile/writefile/edit/fsdir/zipfile, an
# application's load_extension, fts3_tokenizer); not _denied_function: SQLite's glob() is `x GLOB 'p*'`.
_SQLITE_DENIED_FUNCTIONS = {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "fsdir", "zipfile",
                            "sqlar_compress", "sqlar_uncompress", "shell", "system"}
_SQLITE_ALLOWED = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}


def _sqlite_authorizer(action: int, arg1, arg2, _db, _trigger) -> int:
    """Allow reads only: no write, ATTACH, PRAGMA, transaction, or file/extension function."""
    if action not in _SQLITE_ALLOWED:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and str(arg2 or "").lower() in _SQLITE_DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


RESULT_BYTES = 16 * 1024 * 1024
"""Text kept of one result, all cells together: past it rows are counted, not kept (``truncated``)."""
SQLITE_VALUE_BYTES = 16 * 1024 * 1024
"""The largest string or blob a SQLite query may make or read (SQLITE_LIMIT_LENGTH): over it the
statement fails with ``string or blob too big``."""
CELL_CHARS_KEPT = 64 * 1024
"""Characters (bytes for binary) kept of one cell; longer values are cut, ending in ``...[N chars]``."""


def _kept(value):
    """``value`` with text or bytes longer than :data:`CELL_CHARS_KEPT` cut (a marker says how long it was)."""
    if isinstance(value, str) and len(value) > CELL_CHARS_KEPT:
        return f"{value[:CELL_CHARS_KEPT]}...[{len(value):,} chars]"
    if isinstance(value, (bytes, bytearray, memoryview)) and len(value) > CELL_CHARS_KEPT:
        return bytes(value[:CELL_CHARS_KEPT])
    return value


def _size(row: tuple) -> int:
    return sum(len(v) if isinstance(v, (str, bytes, bytearray)) else 16 for v in row)


def _collect(cursor, result: QueryResult, row_cap: int) -> None:
    """Fetch ``cursor`` in batches: keep ``row_cap`` rows and :data:`RESULT_BYTES` of text (cells cut
    at :data:`CELL_CHARS_KEPT`), count up to ``COUNT_FACTOR * row_cap``.

    The first row comes alone and sets the batch size, so a query of huge cells holds a few of
    them at a time, not a batch of :data:`BATCH`.
    """
    limit = COUNT_FACTOR * max(row_cap, 1)
    kept_bytes, size = 0, 1
    while True:
        batch = cursor.fetchmany(min(size, limit - result.total_rows))
        if not batch:
            break
        widest = max(_size(tuple(r)) for r in batch)
        size = max(1, min(BATCH, RESULT_BYTES // max(widest * 4, 1)))
        for row in batch:
            if len(result.rows) >= row_cap or kept_bytes >= RESULT_BYTES:
                break
            kept = tuple(_kept(v) for v in row)
            kept_bytes += _size(kept)
            result.rows.append(kept)
        result.total_rows += len(batch)
        if result.total_rows >= limit:
            result.total_capped = cursor.fetchmany(1) != []
            break
    result.truncated = result.total_rows > len(result.rows)


def _timed_out(result: QueryResult, timeout: float) -> QueryResult:
    result.rows, result.total_rows, result.truncated, result.total_capped = [], 0, False, False
    result.timed_out = True
    result.error = f"SQL execution timed out after {timeout:g} seconds"
    return result


def _missing(path: Path, kind: str) -> QueryResult | None:
    if Path(path).is_file():
        return None
    return QueryResult(error=f"{kind} database file {path} not found: restore it, or fix its path in the sources "
                             "file and build again")


def run_sqlite(path: Path, sql: str, timeout: float, row_cap: int) -> QueryResult:
    """Low-level runner: run ``sql`` as is on a read-only SQLite connection (no SQL check: use :func:`execute`).

    The file is opened with a ``mode=ro`` URI, ``PRAGMA query_only=ON`` and an authorizer that
    allows only reads, so even a write statement that reaches it fails.

    Args:
        path: the SQLite file.
        sql: one statement.
        timeout: seconds before a progress handler aborts the statement.
        row_cap: rows kept.

    Returns:
        The :class:`QueryResult` (database errors and timeouts in ``error``).
    """
    missing = _missing(path, "SQLite")
    if missing:
        return missing
    result = QueryResult()
    start = time.monotonic()
    deadline = start + timeout
    expired = []

    def progress() -> int:
        if time.monotonic() > deadline:
            expired.append(True)
            return 1
        return 0

    con = None
    try:
        con = sqlite3.connect(f"file:{urllib.parse.quote(str(Path(path).resolve()))}?mode=ro", uri=True)
        con.text_factory = lambda b: b.decode("utf-8", errors="replace")
        con.execute("PRAGMA query_only=ON")
        # a value SQLite makes is bounded before it exists (zeroblob(9e8) three times took 5.5 GB):
        # the cell cap cuts what is kept only after a row is fetched
        con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, SQLITE_VALUE_BYTES)
        con.set_authorizer(_sqlite_authorizer)
        con.set_progress_handler(progress, 1000)
        cursor = con.execute(sql)
        result.columns = [d[0] for d in cursor.description or []]
        _collect(cursor, result, row_cap)
    except (sqlite3.Error, sqlite3.Warning, ValueError, OverflowError) as exc:
        if expired:
            _timed_out(result, timeout)
        else:
            result.error = str(exc)
            result.rows, result.total_rows, result.truncated = [], 0, False
    finally:
        if con is not None:
            con.close()
    result.seconds = time.monotonic() - start
    return result


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
    """Low-level runner: run ``sql`` on a read-only DuckDB connection (use :func:`execute`, which checks the SQL).

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

    missing = _missing(path, "DuckDB")
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
        _collect(cursor, result, row_cap)
    except duckdb.Error as exc:
        if fired.is_set() or isinstance(exc, duckdb.InterruptException):
            _timed_out(result, timeout)
        else:
            result.error = str(exc)
            result.rows, result.total_rows, result.truncated = [], 0, False
    finally:
        timer.cancel()
        con.close()
    result.seconds = time.monotonic() - start
    return result


def run_url(target: Target, sql: str, timeout: float, row_cap: int) -> QueryResult:
    """Low-level runner: run ``sql`` on a server database (``type: url``) in a read-only transaction.

    The session is read-only with a server-side statement timeout (PostgreSQL ``SET TRANSACTION
    READ ONLY`` and ``statement_timeout``, MySQL/MariaDB their equivalents; see
    :func:`dbrouter.sources.url.session_guards`), the search path is the database's home schema,
    and the transaction is rolled back. Give the URL a read-only role (``GRANT SELECT`` only) to
    make that a guarantee the server keeps. ``${ENV}`` references of the URL are read now, from
    the environment of this process.

    Args:
        target: a ``url`` target (:meth:`dbrouter.sources.url.UrlSource.target`).
        sql: one checked statement.
        timeout: seconds before the server cancels the statement.
        row_cap: rows kept.

    Returns:
        The :class:`QueryResult` (connection and database errors, timeouts in ``error``; no secret
        in any message).
    """
    from dbrouter.errors import SourceError
    from dbrouter.sources.url import CONNECT_TIMEOUT_S, _engine, connect_url, dispose, redact, scrub

    assert target.url is not None, "a url target carries its URL"
    shown_url = redact(target.url)
    result = QueryResult()
    start = time.monotonic()
    try:
        url, secrets = connect_url(target.url, name=target.db_id)
    except SourceError as exc:
        return QueryResult(error=f"cannot connect to {target.db_id}: {exc}")
    try:
        # the watchdog: a server that goes silent is cut off after the statement's own time and a margin
        engine = _engine(url, timeout_ms=max(1, int(timeout * 1000)), silence_s=timeout + CONNECT_TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 - no driver installed for the dialect
        return QueryResult(error=f"no SQLAlchemy driver for {shown_url}: {type(exc).__name__}: "
                                 f"{scrub(str(exc), secrets)} (install it, e.g. `pip install psycopg`)")
    raw = None
    try:
        raw = engine.raw_connection()
        cursor = raw.cursor()
        for statement in _transaction_guards(engine.dialect.name, target.schema):
            cursor.execute(statement)
        if engine.dialect.name == "postgresql":
            # a server-side cursor: rows arrive in batches, so the row cap also bounds this process's memory
            cursor.close()
            cursor = raw.cursor(name="dbrouter_answer")
        cursor.execute(sql)
        bounded = _postgres_cells_bounded(sql, cursor.description) if engine.dialect.name == "postgresql" else None
        if bounded is not None:  # text cells cut on the server, before a giant one reaches this process
            cursor.close()
            cursor = raw.cursor(name="dbrouter_answer_bounded")
            cursor.execute(bounded)
        result.columns = [d[0] for d in cursor.description or []]
        _collect(cursor, result, row_cap)
    except Exception as exc:  # noqa: BLE001 - the driver's own error types (psycopg, pymysql, ...)
        text = scrub(str(exc), secrets)
        if _is_timeout(text):
            _timed_out(result, timeout)
        else:
            result.error = f"{type(exc).__name__}: {text}" if raw is not None else \
                f"cannot connect to {shown_url}: {type(exc).__name__}: {text}"
            result.rows, result.total_rows, result.truncated = [], 0, False
    finally:
        if raw is not None:
            with contextlib.suppress(Exception):  # a broken connection has nothing to roll back
                raw.rollback()
            raw.close()
        if dispose(engine) and not result.timed_out:
            result.error = (f"{shown_url} stopped answering: nothing came back for {timeout + CONNECT_TIMEOUT_S:.0f} s, "
                            "so the connection was closed")
            result.rows, result.total_rows, result.truncated = [], 0, False
    result.seconds = time.monotonic() - start
    return result


SERVER_CELL_BYTES = 16 * 1024 * 1024
"""Characters (bytes for ``bytea``) of one text cell a PostgreSQL server sends (each is up to 1 GB
there: three took this process past 2.7 GB); the cell is then cut to :data:`CELL_CHARS_KEPT`."""
_PG_TEXT_TYPES = {25, 1043, 1042, 142, 19}  # text, varchar, char, xml, name: read as str either way
_PG_BYTEA = 17


def _postgres_cells_bounded(sql: str, description) -> str | None:
    """``sql`` wrapped so that each text and bytea cell is cut at :data:`SERVER_CELL_BYTES` on the
    server, the other columns as they are, names and order kept (the columns are renamed by
    position first, so duplicate names are fine); None when it has no such column.

    Args:
        sql: one checked SELECT.
        description: its cursor's description (declared, nothing fetched).

    Returns:
        The wrapped statement, or None.
    """
    columns = [(d.name, d.type_code) for d in description or []]
    if not any(oid in _PG_TEXT_TYPES or oid == _PG_BYTEA for _, oid in columns):
        return None
    exprs = []
    for i, (name, oid) in enumerate(columns):
        alias = '"' + str(name).replace('"', '""') + '"'
        if oid in _PG_TEXT_TYPES:
            exprs.append(f"left(dbrouter_q.c{i}::text, {SERVER_CELL_BYTES + 1}) AS {alias}")
        elif oid == _PG_BYTEA:
            exprs.append(f"substring(dbrouter_q.c{i} from 1 for {SERVER_CELL_BYTES + 1}) AS {alias}")
        else:
            exprs.append(f"dbrouter_q.c{i} AS {alias}")
    names = ", ".join(f"c{i}" for i in range(len(columns)))
    return f"SELECT {', '.join(exprs)} FROM ({sql}) AS dbrouter_q({names})"


def _transaction_guards(dialect: str, schema: str | None) -> list[str]:
    """Per-transaction statements of :func:`run_url` (the session ones come from the engine)."""
    if dialect == "postgresql":
        out = ["SET TRANSACTION READ ONLY"]
        if schema:
            out.append(f"SET LOCAL search_path TO {quote_ident(schema)}")
        return out
    return []


def _is_timeout(text: str) -> bool:
    low = text.lower()
    return ("statement timeout" in low or "canceling statement" in low or "max_execution_time" in low
            or "max_statement_time" in low or "query execution was interrupted" in low)


def _file(target: Target) -> Path:
    assert target.path is not None, f"a {target.kind} target carries its file"
    return target.path


RUNNERS: dict[str, Callable[[Target, str, float, int], QueryResult]] = {
    "sqlite": lambda t, sql, timeout, cap: run_sqlite(_file(t), sql, timeout, cap),
    "duckdb": lambda t, sql, timeout, cap: run_duckdb(_file(t), sql, timeout, cap),
    "url": run_url,
}
"""Source types SQL runs on, and their runner (the other types' targets raise :class:`NoDataSource`)."""


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
        DbrouterError: ``target.kind`` has no runner, or timeout/row_cap are not positive.
    """
    if target.kind not in RUNNERS:
        raise DbrouterError(f"cannot run SQL on a {target.kind!r} target ({target.db_id}): SQL runs on "
                            f"{', '.join(RUNNERS)} sources")
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise DbrouterError(f"timeout must be a positive number of seconds, not {timeout!r}")
    if not (isinstance(row_cap, int) and row_cap >= 0):
        raise DbrouterError(f"row_cap must be a non-negative integer, not {row_cap!r}")
    statement = check_read_only(sql, target.dialect)
    if target.tables is not None:
        check_tables(statement, target)
    return RUNNERS[target.kind](target, statement, timeout, row_cap)


def check_tables(sql: str, target: Target) -> None:
    """Refuse SQL that reads a relation outside ``target``'s tables (:attr:`Target.tables`).

    Each table a statement reads is found with sqlglot's scope resolution, so a CTE is told from a
    table of the same name in every scope; an unqualified name is the home schema's (the search
    path :func:`run_url` sets), a qualified one must name a schema the knowledge base holds for
    this database, and a catalog (``pg_catalog``, ``information_schema``) is not one of them.

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
