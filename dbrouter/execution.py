"""Safe execution of generated SQL on a user's database.

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

import logging
import math
import re
import sqlite3
import threading
import time
import urllib.parse
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime, time as dtime
from decimal import Decimal
from pathlib import Path

from dbrouter.errors import DbrouterError
from dbrouter.introspect import open_duckdb_source

DIALECTS = ("sqlite", "duckdb", "snowflake")
COUNT_FACTOR = 100  # rows are counted up to COUNT_FACTOR * row_cap, then total_rows is a lower bound
BATCH = 500
CELL_CHARS = 80
SIGNIFICANT = 10  # result_key rounds floats to 10 significant digits (see result_key)


class UnsafeSQL(DbrouterError):
    """The SQL is not a single read-only SELECT; ``reason`` says what was refused."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"refused to run this SQL: {reason}. Only one read-only SELECT (WITH ... SELECT, UNION) runs")
        self.reason = reason


class NoDataSource(DbrouterError):
    """The database has no executable source (e.g. it was ingested from a schema JSON file)."""


@dataclass(frozen=True)
class Target:
    """A database SQL can run on: ``kind`` is ``sqlite`` or ``duckdb``; ``path`` its file."""

    db_id: str
    kind: str
    path: Path

    @property
    def dialect(self) -> str:
        """The sqlglot dialect of SQL written for this target."""
        return self.kind


@dataclass
class QueryResult:
    """What one statement returned (``error`` set verbatim when the database refused it).

    ``total_rows`` counts rows up to ``COUNT_FACTOR * row_cap``; beyond that counting stops and
    ``total_capped`` is True (``total_rows`` is then a lower bound).
    """

    columns: list[str] = field(default_factory=list)
    rows: list[tuple] = field(default_factory=list)
    total_rows: int = 0
    truncated: bool = False
    seconds: float = 0.0
    error: str | None = None
    timed_out: bool = False
    total_capped: bool = False

    @property
    def ok(self) -> bool:
        """True when the statement ran without error or timeout."""
        return self.error is None


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
    if kind == "schema_json":
        raise NoDataSource(f"database {db_id!r} was ingested from a schema file ({path}) without data, so SQL cannot "
                           "run on it: ingest it from its real SQLite or DuckDB database (its `path` in the sources "
                           "file) and build again")
    if kind not in ("sqlite", "duckdb"):
        raise NoDataSource(f"database {db_id!r} comes from a {kind} source ({path}); SQL runs only on SQLite and "
                           "DuckDB files: ingest it from one of those and build again")
    file = Path(path)
    if not file.is_file():
        raise NoDataSource(f"database {db_id!r}: its {kind} file {file} no longer exists: restore it, or fix its "
                           "path in the sources file and build again")
    return Target(db_id, kind, file)


# ---------------------------------------------------------------------------------------------
# check_read_only

_STATEMENT_NAMES = {
    "Insert": "INSERT", "Update": "UPDATE", "Delete": "DELETE", "Merge": "MERGE", "Create": "CREATE",
    "Drop": "DROP", "Alter": "ALTER", "TruncateTable": "TRUNCATE", "Pragma": "PRAGMA", "Attach": "ATTACH",
    "Detach": "DETACH", "Copy": "COPY", "Set": "SET", "Transaction": "BEGIN (transaction)", "Commit": "COMMIT",
    "Rollback": "ROLLBACK", "Use": "USE", "Install": "INSTALL", "Describe": "DESCRIBE", "Show": "SHOW",
    "Analyze": "ANALYZE", "Summarize": "SUMMARIZE", "Kill": "KILL", "Grant": "GRANT", "Revoke": "REVOKE",
    "LoadData": "LOAD DATA", "Refresh": "REFRESH", "Cache": "CACHE", "Uncache": "UNCACHE", "Comment": "COMMENT",
    "Export": "EXPORT", "Into": "SELECT ... INTO (creates a table)", "Command": "COMMAND",
}
# Never allowed anywhere in the tree (a data-modifying CTE, SELECT ... INTO, a nested command).
_FORBIDDEN_NODES = {name for name in _STATEMENT_NAMES if name not in ("Describe", "Show", "Summarize")}

_DENIED_FUNCTIONS = {
    "glob", "sniff_csv", "sqlite_scan", "sqlite_attach", "query", "query_table", "getenv", "load_extension",
    "readfile", "writefile", "edit", "system", "shell", "exec", "sys_exec", "sys_eval", "popen", "fsdir",
    "zipfile", "lines_read", "duckdb_secrets", "which_secret",
}
_DENIED_PREFIXES = ("read_", "parquet_", "iceberg_", "delta_", "postgres_", "mysql_", "fts", "http", "sqlar_",
                    "json_read", "csv_", "s3_", "gcs_", "azure_", "shell", "system_")
_DENIED_SUFFIXES = ("_scan", "_attach")
_FILE_NAME = re.compile(r"[/\\:]|\.(csv|tsv|txt|parquet|json|jsonl|ndjson|gz|zst|zip|xlsx?|db|sqlite3?|duckdb|"
                        r"arrow|avro|orc|ipc|feather)$", re.IGNORECASE)
_FIRST_WORD = re.compile(r"^(?:\s|--[^\n]*(?:\n|$)|/\*.*?\*/|\()*([A-Za-z_]+)", re.DOTALL)
_NON_QUERY_WORDS = {
    "INSERT", "UPDATE", "DELETE", "MERGE", "CREATE", "DROP", "ALTER", "TRUNCATE", "REPLACE", "UPSERT", "PRAGMA",
    "ATTACH", "DETACH", "COPY", "INSTALL", "LOAD", "EXPORT", "IMPORT", "SET", "RESET", "CALL", "VACUUM",
    "CHECKPOINT", "BEGIN", "COMMIT", "ROLLBACK", "START", "END", "ABORT", "SAVEPOINT", "RELEASE", "EXPLAIN",
    "ANALYZE", "REINDEX", "DESCRIBE", "SHOW", "SUMMARIZE", "USE", "GRANT", "REVOKE", "COMMENT", "PREPARE",
    "EXECUTE", "DEALLOCATE", "FORCE", "UPDATE_EXTENSIONS", "PIVOT", "UNPIVOT",
}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@contextmanager
def _quiet_sqlglot():
    """Silence sqlglot's "falling back to parsing as a Command" warnings (we report refusals ourselves)."""
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _parse(sql: str, dialect: str) -> list:
    import sqlglot
    from sqlglot import exp

    with _quiet_sqlglot():
        parsed = sqlglot.parse(sql, read=dialect)
    return [s for s in parsed if s is not None and not isinstance(s, exp.Semicolon)]


def _first_word(sql: str) -> str:
    match = _FIRST_WORD.match(sql)
    return match.group(1).upper() if match else ""


def _kind(node) -> str:
    """A statement's name for a refusal reason (``DELETE``, ``PRAGMA``, ``LOAD``...)."""
    from sqlglot import exp

    if isinstance(node, exp.Command):
        return str(node.this).upper()
    return _STATEMENT_NAMES.get(type(node).__name__, type(node).__name__.upper())


def _function_names(node) -> set[str]:
    from sqlglot import exp

    if isinstance(node, exp.Anonymous):
        return {str(node.name).lower()}
    names = {node.sql_name().lower()}
    names.update(n.lower() for n in getattr(type(node), "_sql_names", []) or [])
    return names


def _denied_function(name: str) -> bool:
    return (name in _DENIED_FUNCTIONS or name.startswith(_DENIED_PREFIXES) or name.endswith(_DENIED_SUFFIXES))


def _check_node(node, sql: str) -> None:
    """Raise UnsafeSQL for one forbidden node of the tree (statement, function, file reference)."""
    from sqlglot import exp

    name = type(node).__name__
    if name in _FORBIDDEN_NODES and isinstance(node, getattr(exp, name)):
        raise UnsafeSQL(f"{_kind(node)} inside the query")
    if isinstance(node, exp.Func):
        for fname in _function_names(node):
            if _denied_function(fname):
                raise UnsafeSQL(f"function {fname}() can read or write files, the network or the environment")
        parent = node.parent
        if isinstance(parent, exp.Dot) and str(parent.this.name if hasattr(parent.this, "name") else "").lower() \
                .startswith("fts"):
            raise UnsafeSQL(f"full-text-search function {parent.this.name}.{node.name}()")
    if isinstance(node, exp.Table):
        if isinstance(node.this, exp.Func) and str(node.args.get("db") or "").lower().startswith("fts"):
            raise UnsafeSQL(f"full-text-search function {node.args['db']}.{node.this.sql()}")
        ident = node.this
        if isinstance(ident, exp.Identifier):
            start = ident.meta.get("start") if ident.meta else None
            if start is not None and 0 <= start < len(sql) and sql[start] == "'":
                raise UnsafeSQL(f"string-literal table reference '{ident.name}' (DuckDB reads it as a file)")
            if _FILE_NAME.search(ident.name):
                raise UnsafeSQL(f"table reference {ident.name!r} looks like a file or URL (DuckDB would read it)")


def _statement_text(sql: str, dialect: str) -> str:
    """``sql`` up to its last token that is not a semicolon (trailing ``;`` and comments dropped)."""
    import sqlglot

    try:
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)
    except Exception:  # noqa: BLE001 - parse succeeded, so the tokenizer will too; be safe anyway
        return sql.strip().rstrip(";").strip()
    from sqlglot.tokens import TokenType

    while tokens and tokens[-1].token_type == TokenType.SEMICOLON:
        tokens.pop()
    return sql[: tokens[-1].end + 1].strip() if tokens else sql.strip()


def _unparseable_reason(sql: str, dialect: str, exc: Exception) -> str:
    """Why SQL sqlglot cannot parse is refused: a statement keyword or a denied function when one is
    visible (``EXPORT DATABASE``, ``glob(...)`` in SQLite), else ``cannot parse: <sqlglot message>``."""
    import sqlglot
    from sqlglot.tokens import TokenType

    word = _first_word(sql)
    if word in _NON_QUERY_WORDS:
        return f"{word} statement (not a query)"
    try:
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)
    except Exception:  # noqa: BLE001 - the tokenizer failing is reported as the parse error below
        tokens = []
    for tok, nxt in zip(tokens, tokens[1:]):
        if nxt.token_type == TokenType.L_PAREN and _denied_function(tok.text.lower()):
            return f"function {tok.text.lower()}() can read or write files, the network or the environment"
    message = " ".join(_ANSI.sub("", str(exc)).split())
    return f"cannot parse: {message}"


def check_read_only(sql: str, dialect: str) -> str:
    """Return the single read-only statement in ``sql`` or raise :class:`UnsafeSQL`.

    Args:
        sql: SQL text (one statement; a trailing semicolon and trailing comments are fine).
        dialect: ``sqlite``, ``duckdb`` or ``snowflake`` (sqlglot dialect names).

    Returns:
        The statement as given, without the trailing semicolon (and comments after it).

    Raises:
        UnsafeSQL: empty input, unparseable SQL, more than one statement, anything but a query, a
            write/DDL/command anywhere in the tree, a file/network/environment function, or a
            file-path table reference; ``reason`` names what was found.
        DbrouterError: ``dialect`` is not one of :data:`DIALECTS`.
    """
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    if dialect not in DIALECTS:
        raise DbrouterError(f"unknown SQL dialect {dialect!r}: use one of {', '.join(DIALECTS)}")
    if not isinstance(sql, str) or not sql.strip():
        raise UnsafeSQL("empty SQL (no statement given)")
    try:
        statements = _parse(sql, dialect)
    except SqlglotError as exc:
        raise UnsafeSQL(_unparseable_reason(sql, dialect, exc)) from None
    if not statements:
        raise UnsafeSQL("empty SQL (only comments or semicolons)")
    if len(statements) > 1:
        kinds = ", ".join(_kind(s) if not isinstance(s, (exp.Select, exp.SetOperation)) else "SELECT"
                          for s in statements)
        raise UnsafeSQL(f"multiple statements ({len(statements)}: {kinds}); only one may run")
    root = statements[0]
    while isinstance(root, exp.Subquery):
        root = root.this
    if not isinstance(root, (exp.Select, exp.SetOperation)):
        name = type(root).__name__
        kind = _kind(root) if name in _STATEMENT_NAMES or name == "Values" else (_first_word(sql) or name.upper())
        raise UnsafeSQL(f"{kind} statement (not a query)")
    for node in statements[0].walk():
        _check_node(node, sql)
    return _statement_text(sql, dialect)


def has_order_by(sql: str, dialect: str) -> bool:
    """True when the outermost query of ``sql`` has an ORDER BY.

    Args:
        sql: one query.
        dialect: sqlglot dialect.

    Returns:
        Whether the outermost SELECT / set operation (or a parenthesised query around it) is
        ordered; False when the SQL cannot be parsed.
    """
    from sqlglot import exp

    try:
        statements = _parse(sql, dialect)
    except Exception:  # noqa: BLE001 - unparseable SQL is simply not known to be ordered
        return False
    if not statements:
        return False
    node = statements[0]
    while True:
        if node.args.get("order") is not None:
            return True
        if not isinstance(node, exp.Subquery):
            return False
        node = node.this


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


def _collect(cursor, result: QueryResult, row_cap: int) -> None:
    """Fetch ``cursor`` in batches: keep ``row_cap`` rows, count up to ``COUNT_FACTOR * row_cap``."""
    limit = COUNT_FACTOR * max(row_cap, 1)
    while True:
        batch = cursor.fetchmany(BATCH)
        if not batch:
            break
        room = row_cap - len(result.rows)
        if room > 0:
            result.rows.extend(tuple(r) for r in batch[:room])
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


def execute(target: Target, sql: str, timeout: float = 30.0, row_cap: int = 1000) -> QueryResult:
    """Check and run ``sql`` read-only on ``target`` (errors returned in ``QueryResult.error``).

    Args:
        target: the database (from :func:`target_for` or :func:`dbrouter.eval.dumps.targets`).
        sql: one SELECT in the target's dialect.
        timeout: seconds before the statement is stopped (``timed_out`` set).
        row_cap: rows kept in ``QueryResult.rows``; more are counted (up to ``COUNT_FACTOR`` times).

    Returns:
        The :class:`QueryResult`; a database error, a timeout, a missing or locked file is in ``error``.

    Raises:
        UnsafeSQL: the SQL is not one read-only SELECT (nothing ran).
        DbrouterError: ``target.kind`` is not sqlite/duckdb, or timeout/row_cap are not positive.
    """
    if target.kind not in ("sqlite", "duckdb"):
        raise DbrouterError(f"cannot run SQL on a {target.kind!r} target ({target.db_id}): only sqlite and duckdb")
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise DbrouterError(f"timeout must be a positive number of seconds, not {timeout!r}")
    if not (isinstance(row_cap, int) and row_cap >= 0):
        raise DbrouterError(f"row_cap must be a non-negative integer, not {row_cap!r}")
    statement = check_read_only(sql, target.dialect)
    if target.kind == "sqlite":
        return run_sqlite(target.path, statement, timeout, row_cap)
    return run_duckdb(target.path, statement, timeout, row_cap)


# ---------------------------------------------------------------------------------------------
# format_observation / result_key


def _cell(value, chars: int = CELL_CHARS) -> str:
    if value is None:
        text = "NULL"
    elif isinstance(value, (bytes, bytearray, memoryview)):
        text = f"x'{bytes(value).hex()}'"
    else:
        text = str(value)
    text = text.replace("\r", "\\r").replace("\n", "\\n").replace("\t", " ")
    return text if len(text) <= chars else text[: chars - 3] + "..."


def format_observation(result: QueryResult, max_rows: int = 5) -> str:
    """The paper's R_SQL text: total rows, time, top rows as a table, or the error verbatim.

    Args:
        result: what :func:`execute` returned.
        max_rows: rows shown (cells longer than ``CELL_CHARS`` characters are cut with ``...``).

    Returns:
        ``[Total rows: N, Execution time: Ts, Top-K rows are shown below]`` + a ``A | B`` table +
        ``M rows truncated ...``; ``[No data found for the specified query, Execution time: Ts]``;
        or ``[[ERROR: message]]`` for a timeout or database error.
    """
    if result.error is not None:
        return f"[[ERROR: {result.error}]]"
    secs = f"{result.seconds:.2f}s"
    if result.total_rows == 0:
        return f"[No data found for the specified query, Execution time: {secs}]"
    shown = result.rows[: max(max_rows, 0)]
    plus = "+" if result.total_capped else ""
    lines = [f"[Total rows: {result.total_rows}{plus}, Execution time: {secs}, "
             f"Top-{len(shown)} rows are shown below]"]
    lines.append(" | ".join(_cell(c) for c in result.columns))
    lines.append("|".join("-----" for _ in result.columns))
    lines.extend(" | ".join(_cell(v) for v in row) for row in shown)
    hidden = result.total_rows - len(shown)
    if hidden > 0:
        lines.append(f"{hidden}{plus} rows truncated ...")
    return "\n".join(lines)


def _number(value: float):
    """A float rounded to ``SIGNIFICANT`` digits; integral values become ints (1.0 -> 1)."""
    if math.isnan(value):
        return (5, "nan")
    if math.isinf(value):
        return (1, value)
    rounded = float(f"{value:.{SIGNIFICANT}g}")
    if rounded.is_integer():
        return (1, int(rounded))
    return (1, rounded)


def _value_key(value) -> tuple:
    """A type-tagged, mutually comparable key of one cell: (0,) NULL, (1, n) number, (2, s) text,
    (3, b) bytes, (4, type, repr) anything else; dates/times compare as their ISO-like text."""
    if value is None:
        return (0,)
    if isinstance(value, bool):
        return (1, int(value))
    if isinstance(value, int):
        return (1, value)
    if isinstance(value, (float, Decimal)):
        return _number(float(value))
    if isinstance(value, str):
        return (2, value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return (3, bytes(value))
    if isinstance(value, (datetime, date, dtime)):
        return (2, str(value))
    return (4, type(value).__name__, repr(value))


def result_key(result: QueryResult, ordered: bool) -> object:
    """A hashable key: equal keys = equal result sets (order-insensitive unless ``ordered``).

    Values only (column names are not part of it, as in Spider/BIRD evaluation). Numbers compare by
    value: ints exactly, floats and decimals rounded to ``SIGNIFICANT`` (10) significant digits so
    summation-order noise (``0.1 + 0.2``) does not split votes, and an integral float equals the int
    (``1 == 1.0``). NULLs, text, bytes and other types never compare equal to each other; dates and
    times compare as their text (SQLite stores them as text). Unordered keys are the sorted multiset
    of rows (duplicates count). Only the kept rows are compared: a truncated result also carries
    its ``total_rows``.

    Args:
        result: what :func:`execute` returned.
        ordered: keep row order (the query has an ORDER BY, see :func:`has_order_by`).

    Returns:
        A hashable tuple, or None for a result with an error (never equal to a result set).
    """
    if result.error is not None:
        return None
    rows = [tuple(_value_key(v) for v in row) for row in result.rows]
    key = tuple(rows) if ordered else tuple(sorted(rows))
    return ("truncated", result.total_rows, key) if result.truncated else key
