"""SQLite files as sources (``type: sqlite``, ``path`` or ``glob``).

Files are opened read-only and immutable (nothing, not even ``-shm``/``-wal``, is written beside
them); samples come from a bounded scan; SQL from ``ask`` runs on the file itself.
"""

from __future__ import annotations

import sqlite3
import time
import urllib.parse
from pathlib import Path
from typing import Any, ClassVar

from dbrouter.errors import SourceError
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


def sqlite_readonly_uri(path: Path) -> str:
    """URI opening a SQLite file read-only and immutable: nothing (no -shm/-wal) is written beside it.

    Args:
        path: the database file.

    Returns:
        A ``file:`` URI with the path percent-quoted (``?``, ``#``, ``%`` in file names are safe).
    """
    return f"file:{urllib.parse.quote(str(Path(path).resolve()))}?mode=ro&immutable=1"


def _sqlite_foreign_keys(con: sqlite3.Connection, table: str) -> list[ForeignKey]:
    """Declared foreign keys of ``table``; a key naming no column gets the referenced primary key.

    ``FOREIGN KEY (a, b) REFERENCES t`` refers to ``t``'s primary key column by column; when ``t``
    is missing or its primary key has another width, ``ref_column`` stays None (reported later).
    """
    rows = con.execute(f"PRAGMA foreign_key_list({quote_ident(table)})").fetchall()
    widths: dict[int, int] = {}
    for row in rows:
        widths[row[0]] = widths.get(row[0], 0) + 1
    out = []
    for fk_id, seq, ref_table, src, ref_col, *_ in rows:
        if ref_col is None:
            info = con.execute(f"PRAGMA table_info({quote_ident(ref_table)})").fetchall()
            pk = [r[1] for r in sorted((r for r in info if r[5]), key=lambda r: r[5])]
            ref_col = pk[seq] if len(pk) == widths[fk_id] else None
        out.append(ForeignKey(table, src, ref_table, ref_col))
    return out


def read_sqlite(spec: SourceSpec, db_id: str, n_samples: int, chars: int) -> DatabaseSnapshot:
    """Introspect a SQLite file through a read-only connection."""
    path = Path(spec.path)
    if not path.is_file():
        raise SourceError(db_id, f"SQLite file {path} not found: fix `path` in the sources file")
    try:
        con = sqlite3.connect(sqlite_readonly_uri(path), uri=True)
        con.text_factory = lambda b: b.decode("utf-8", errors="replace")
        names = con.execute("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') "
                            "AND name NOT LIKE 'sqlite_%' ORDER BY name").fetchall()
    except sqlite3.DatabaseError as exc:
        raise SourceError(db_id, f"cannot open {path} as SQLite: {exc}") from exc
    snap = DatabaseSnapshot(db_id, "sqlite", str(path), spec.description)
    wal = path.with_name(path.name + "-wal")
    if wal.is_file() and wal.stat().st_size > 0:
        snap.issues.append(Issue(db_id, None, "warning", f"{wal.name} exists beside the file: changes not yet "
                                 "checkpointed into it are not read (sources are read immutable); close the "
                                 "writing application or run PRAGMA wal_checkpoint, then ingest again"))
    clock = QueryClock()
    con.set_progress_handler(lambda: 1 if clock.over() else 0, 10000)
    fetch = clock.fetcher(con)
    try:
        for name, kind in names:
            table = TableInfo(name, label_of(name), kind=kind)
            try:
                info = con.execute(f"PRAGMA table_info({quote_ident(name)})").fetchall()
            except sqlite3.DatabaseError as exc:
                snap.issues.append(Issue(db_id, name, "warning", f"cannot read table: {exc}"))
                continue
            slow = clock.exhausted()
            if not slow:
                try:
                    table.row_count = fetch(f"SELECT count(*) FROM {quote_ident(name)}")[0][0]
                except sqlite3.DatabaseError as exc:
                    if not clock.fired:
                        snap.issues.append(Issue(db_id, name, "warning", f"cannot read table: {exc}"))
                        continue
                    slow = True
                    snap.issues.append(Issue(db_id, name, "warning", f"{kind} kept without count or samples: "
                                             f"{clock.why()}"))
            for cid, cname, ctype, _notnull, _default, pk in info:
                col = ColumnInfo(cname, label_of(cname), cid + 1, (ctype or "").lower() or "text", bool(pk))
                if not slow:
                    try:
                        col.samples = sample_values(fetch, quote_ident(name), cname, n_samples, chars)
                    except sqlite3.DatabaseError as exc:
                        slow = clock.fired
                        snap.issues.append(Issue(db_id, f"{name}.{cname}", "warning",
                                                 f"no samples: {clock.why() if slow else exc}"))
                table.columns.append(col)
            try:
                snap.foreign_keys.extend(_sqlite_foreign_keys(con, name))
            except sqlite3.DatabaseError as exc:
                snap.issues.append(Issue(db_id, name, "warning", f"foreign keys not read: {exc}"))
            snap.tables.append(table)
        if clock.exhausted():
            snap.issues.append(Issue(db_id, None, "warning", f"some tables have no count or samples: {clock.why()}"))
    except sqlite3.Error as exc:
        raise SourceError(db_id, f"cannot read {path} as SQLite: {exc}") from exc
    finally:
        con.close()
    return snap


def fingerprint_sqlite(path: str | Path) -> str:
    """Hash of a SQLite file's schema: tables and views with their SQL, columns, keys.

    Opens the file read-only and immutable and reads only the catalog (no table is scanned), so
    inserting, updating or deleting rows leaves the hash unchanged. Indexes and triggers are left
    out (the knowledge base does not describe them); ``rootpage`` too (``VACUUM`` moves it).

    Args:
        path: the SQLite file.

    Returns:
        A hex sha256.

    Raises:
        SourceError: the file is missing or is not a SQLite database (``db_id`` is the file stem).
    """
    path = Path(path)
    if not path.is_file():
        raise SourceError(path.stem, f"SQLite file {path} not found: fix `path` in the sources file")
    try:
        con = sqlite3.connect(sqlite_readonly_uri(path), uri=True)
    except sqlite3.Error as exc:
        raise SourceError(path.stem, f"cannot open {path} as SQLite: {exc}") from exc
    try:
        con.text_factory = lambda b: b.decode("utf-8", errors="replace")
        objects = con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE type IN ('table', 'view') "
                              "AND name NOT LIKE 'sqlite_%' ORDER BY type, name").fetchall()
        parts: list[Any] = []
        for kind, name, tbl_name, sql in objects:
            info = con.execute(f"PRAGMA table_info({quote_ident(name)})").fetchall()
            fks = con.execute(f"PRAGMA foreign_key_list({quote_ident(name)})").fetchall() if kind == "table" else []
            parts.append([kind, name, tbl_name, " ".join((sql or "").split()), info, fks])
    except sqlite3.Error as exc:
        raise SourceError(path.stem, f"cannot read the schema of {path} as SQLite: {exc}") from exc
    finally:
        con.close()
    return digest(["sqlite", parts])


class SqliteSource(FileSource):
    """``type: sqlite``: one SQLite file a database (see :class:`dbrouter.sources.base.SourceType`)."""

    name: ClassVar[str] = "sqlite"

    def read_file(self, spec: SourceSpec, db_id: str, n_samples: int, chars: int) -> DatabaseSnapshot:
        """See :func:`read_sqlite`."""
        return read_sqlite(spec, db_id, n_samples, chars)

    def fingerprint_file(self, path: Path) -> str:
        """See :func:`fingerprint_sqlite`."""
        return fingerprint_sqlite(path)

    def run_file(self, path: Path, sql: str, timeout: float, row_cap: int) -> QueryResult:
        """See :func:`run_sqlite`."""
        return run_sqlite(path, sql, timeout, row_cap)


# ---------------------------------------------------------------------------------------------
# running SQL (dbrouter.execute.runners.execute checks it first)

SQLITE_VALUE_BYTES = 16 * 1024 * 1024
"""The largest string or blob a SQLite query may make or read (SQLITE_LIMIT_LENGTH): over it the
statement fails with ``string or blob too big``."""
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


def run_sqlite(path: Path, sql: str, timeout: float, row_cap: int) -> QueryResult:
    """Low-level runner: run ``sql`` as is on a read-only SQLite connection (no SQL check: use
    :func:`dbrouter.execute.runners.execute`).

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
    missing = missing_file(path, "SQLite")
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
        collect(cursor, result, row_cap)
    except (sqlite3.Error, sqlite3.Warning, ValueError, OverflowError) as exc:
        if expired:
            timed_out(result, timeout)
        else:
            result.error = str(exc)
            result.rows, result.total_rows, result.truncated = [], 0, False
    finally:
        if con is not None:
            con.close()
    result.seconds = time.monotonic() - start
    return result
