"""Read one source database's metadata: tables, columns, keys, descriptions, samples.

Every reader opens its source read-only and returns a :class:`DatabaseSnapshot`; problems
that concern one object (a table without columns, a foreign key to a missing table) are
recorded as :class:`Issue` rows instead of failing the whole database.
"""

from __future__ import annotations

import json
import re
import sqlite3
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from dbrouter.errors import SourceError
from dbrouter.sources import SourceSpec

SAMPLE_SCAN_ROWS = 10000


@dataclass
class ColumnInfo:
    name: str
    label: str
    ordinal: int
    data_type: str
    is_primary_key: bool = False
    description: str | None = None
    value_description: str | None = None
    samples: list[str] = field(default_factory=list)


@dataclass
class TableInfo:
    name: str
    label: str
    columns: list[ColumnInfo] = field(default_factory=list)
    description: str | None = None
    row_count: int | None = None
    kind: str = "table"  # 'table' or 'view' (views are ingested like tables, marked)


@dataclass
class ForeignKey:
    table: str
    column: str
    ref_table: str
    ref_column: str | None  # None: the source named no column (`REFERENCES t`), resolved by check_foreign_keys


@dataclass
class Issue:
    db_id: str
    object_name: str | None
    severity: str  # 'error' (database skipped) or 'warning' (object skipped/flagged)
    message: str


@dataclass
class DatabaseSnapshot:
    db_id: str
    source_type: str
    source_path: str
    description: str | None = None
    tables: list[TableInfo] = field(default_factory=list)
    foreign_keys: list[ForeignKey] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)
    status: str = "ok"


def label_of(name: str) -> str:
    """Natural-language label of an identifier: ``HomeTown_ID`` -> ``home town id``.

    Args:
        name: an identifier.

    Returns:
        Lower-case words separated by single spaces.
    """
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return re.sub(r"[\W_]+", " ", spaced).strip().lower() or name.lower()


def quote_ident(name: str) -> str:
    """Double-quote an identifier for SQLite/DuckDB, escaping embedded quotes."""
    return '"' + name.replace('"', '""') + '"'


def _sample_text(value: Any, max_chars: int) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return None  # binary blobs carry no routing signal
    text = str(value).strip().replace("\n", " ")
    return text[:max_chars] if text else None


def sample_values(fetch: Callable[[str], list[tuple]], relation: str, column: str, n: int, chars: int) -> list[str]:
    """Up to ``n`` distinct non-empty values of ``column``, read from a bounded scan.

    Args:
        fetch: runs a query, returns rows.
        relation: the already-quoted table reference.
        column: column name (quoted here).
        n: how many values; chars: cut each value to this length.

    Returns:
        The sample values as text.
    """
    if n <= 0:
        return []
    col = quote_ident(column)
    sql = (f"SELECT DISTINCT {col} FROM (SELECT {col} FROM {relation} WHERE {col} IS NOT NULL "
           f"LIMIT {SAMPLE_SCAN_ROWS}) AS s LIMIT {n * 3}")
    return distinct_samples(fetch(sql), n, chars)


def distinct_samples(rows: Iterable[tuple], n: int, chars: int) -> list[str]:
    """The first ``n`` distinct non-empty texts of one-column ``rows`` (binary values skipped).

    Args:
        rows: query result rows of one value each.
        n: how many values; chars: cut each value to this length.

    Returns:
        The sample values as text.
    """
    out: list[str] = []
    for (value,) in rows:
        text = _sample_text(value, chars)
        if text and text not in out:
            out.append(text)
        if len(out) >= n:
            break
    return out


def check_foreign_keys(snap: DatabaseSnapshot) -> None:
    """Flag foreign keys whose table or column does not exist (kept out of the join graph).

    A key that names no referenced column (``REFERENCES t``) refers to ``t``'s primary key: it is
    resolved when that key is a single column, and reported as unresolvable otherwise.

    Args:
        snap: the snapshot to check in place; bad keys are removed and reported as issues.
    """
    cols = {(t.name.lower(), c.name.lower()) for t in snap.tables for c in t.columns}
    tables = {t.name.lower(): t for t in snap.tables}
    good = []
    for fk in snap.foreign_keys:
        name = f"{fk.table}.{fk.column} -> {fk.ref_table}" + (f".{fk.ref_column}" if fk.ref_column is not None else "")
        ref = tables.get(fk.ref_table.lower())
        if ref is None:
            snap.issues.append(Issue(snap.db_id, name, "warning",
                                     f"foreign key refers to missing table {fk.ref_table!r}; edge skipped"))
            continue
        if fk.ref_column is None:
            pk = [c.name for c in ref.columns if c.is_primary_key]
            if len(pk) != 1:
                snap.issues.append(Issue(
                    snap.db_id, name, "warning",
                    f"foreign key names no referenced column and table {ref.name!r} has "
                    f"{'no' if not pk else 'a ' + str(len(pk)) + '-column'} primary key, so it cannot be "
                    "resolved; edge skipped (name the column: REFERENCES table(column))"))
                continue
            fk = ForeignKey(fk.table, fk.column, fk.ref_table, pk[0])
        if (fk.table.lower(), fk.column.lower()) not in cols or (fk.ref_table.lower(), fk.ref_column.lower()) not in cols:
            snap.issues.append(Issue(snap.db_id, name, "warning",
                                     "foreign key refers to a missing column; edge skipped"))
        else:
            good.append(fk)
    snap.foreign_keys = good


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
    fetch = lambda sql: con.execute(sql).fetchall()  # noqa: E731
    try:
        for name, kind in names:
            table = TableInfo(name, label_of(name), kind=kind)
            try:
                info = con.execute(f"PRAGMA table_info({quote_ident(name)})").fetchall()
                table.row_count = con.execute(f"SELECT count(*) FROM {quote_ident(name)}").fetchall()[0][0]
            except sqlite3.DatabaseError as exc:
                snap.issues.append(Issue(db_id, name, "warning", f"cannot read table: {exc}"))
                continue
            for cid, cname, ctype, _notnull, _default, pk in info:
                col = ColumnInfo(cname, label_of(cname), cid + 1, (ctype or "").lower() or "text", bool(pk))
                try:
                    col.samples = sample_values(fetch, quote_ident(name), cname, n_samples, chars)
                except sqlite3.DatabaseError as exc:
                    snap.issues.append(Issue(db_id, f"{name}.{cname}", "warning", f"no samples: {exc}"))
                table.columns.append(col)
            try:
                snap.foreign_keys.extend(_sqlite_foreign_keys(con, name))
            except sqlite3.DatabaseError as exc:
                snap.issues.append(Issue(db_id, name, "warning", f"foreign keys not read: {exc}"))
            snap.tables.append(table)
    except sqlite3.Error as exc:
        raise SourceError(db_id, f"cannot read {path} as SQLite: {exc}") from exc
    finally:
        con.close()
    return snap


def open_duckdb_source(path: str | Path):
    """Open a DuckDB file that someone else wrote: read-only, no file or network access, locked.

    A source file is untrusted: its views run whatever SQL its author wrote, e.g.
    ``read_text('/proc/self/environ')``. External access (files, URLs, ATTACH, COPY) and extension
    installing/autoloading are off and the configuration is locked, so no view can turn them back
    on; evaluating such a view fails instead of reading the file. Every reader of a DuckDB source
    (introspection, the refresh fingerprint, ``ask``'s runner) opens it here.

    Args:
        path: the DuckDB file.

    Returns:
        A ``duckdb.DuckDBPyConnection``.

    Raises:
        duckdb.Error: the file cannot be opened (missing, locked for writing, not DuckDB).
    """
    import duckdb

    config = {"enable_external_access": False, "autoinstall_known_extensions": False,
              "autoload_known_extensions": False}
    con = duckdb.connect(str(path), read_only=True, config=config)
    try:
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
            try:
                table.row_count = con.execute(f"SELECT count(*) FROM {rel}").fetchall()[0][0]
                cols = con.execute(
                    "SELECT column_name, column_index, data_type, comment FROM duckdb_columns() "
                    "WHERE database_name = current_database() AND schema_name = ? AND table_name = ? "
                    "ORDER BY column_index", [schema, tname]).fetchall()
                fetch = lambda sql: con.execute(sql).fetchall()  # noqa: E731
                for cname, idx, dtype, ccomment in cols:
                    col = ColumnInfo(cname, label_of(cname), int(idx), str(dtype).lower(),
                                     (name, cname) in pk_cols, ccomment or None)
                    col.samples = sample_values(fetch, rel, cname, n_samples, chars)
                    table.columns.append(col)
            except duckdb.Error as exc:
                # A view over read_text()/read_blob()/a URL fails here: that is the guard working.
                snap.issues.append(Issue(db_id, name, "warning", f"{kind} skipped: it cannot be read with file and "
                                         f"network access off, as sources are opened "
                                         f"({' '.join(str(exc).split())[:300]})"))
                continue
            snap.tables.append(table)
        for schema, tname, kind, cols, ref_table, ref_cols in cons:
            if kind == "FOREIGN KEY":
                for c, rc in zip(cols, ref_cols or []):
                    snap.foreign_keys.append(ForeignKey(qual(schema, tname), c, ref_table, rc))
    except duckdb.Error as exc:
        raise SourceError(db_id, f"cannot read {path} as DuckDB: {' '.join(str(exc).split())}") from exc
    finally:
        con.close()
    return snap


def utf8_error(exc: UnicodeDecodeError) -> str:
    """``byte 0xe9 at offset 12``: where a text is not UTF-8."""
    return f"byte {exc.object[exc.start]:#04x} at offset {exc.start}"


def _json_objects(path: Path) -> Iterable[tuple[int, Any, str | None]]:
    """(line or item number, object, error) per database in a ``.jsonl`` / ``.json`` file.

    A bad line of a ``.jsonl`` file (not JSON, not UTF-8) yields an error for that line only; a
    bad ``.json`` file yields one error.
    """
    data = path.read_bytes()
    if path.suffix == ".jsonl":
        for no, raw in enumerate(data.splitlines(), 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield no, None, f"line is not valid UTF-8 ({utf8_error(exc)}); save the file as UTF-8"
                continue
            if line.strip():
                try:
                    yield no, json.loads(line), None
                except json.JSONDecodeError as exc:
                    yield no, None, f"not valid JSON ({exc})"
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        yield 1, None, f"file is not valid UTF-8 ({utf8_error(exc)}); save it as UTF-8"
        return
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        yield 1, None, f"not valid JSON ({exc})"
        return
    for no, item in enumerate(obj if isinstance(obj, list) else [obj], 1):
        yield no, item, None


def _typed(obj: dict[str, Any], key: str, kinds: type | tuple[type, ...], where: str, db_id: str) -> Any:
    """``obj[key]`` when absent/None or of ``kinds``; otherwise the database is left out (SourceError)."""
    value = obj.get(key)
    if value is None or isinstance(value, kinds):
        return value
    names = " or ".join(k.__name__ for k in (kinds if isinstance(kinds, tuple) else (kinds,)))
    wanted = {"str": "a string", "list": "a list", "bool": "true or false", "dict": "an object"}.get(names, names)
    raise SourceError(db_id, f"{where}.{key} must be {wanted}, got {json.dumps(value)[:60]} "
                             f"({type(value).__name__}); fix the schema file")


def snapshot_from_json(obj: dict[str, Any], source_path: str, db_id: str | None = None) -> DatabaseSnapshot:
    """Build a snapshot from one ``databases.jsonl`` object (schema-only database).

    Args:
        obj: ``{db_id, tables: [{name, label, columns: [...]}], foreign_keys: [...]}``.
        source_path: file it came from (for messages).
        db_id: overrides ``obj['db_id']`` when given.

    Returns:
        The snapshot (no row counts, no samples).

    Raises:
        SourceError: the object has no db_id or no table list, or a value has the wrong JSON type
            (a name, label, type or description that is not a string, columns that are not a
            list, a primary_key that is not true/false, ...): the message gives its place.
    """
    given = db_id or obj.get("db_id")
    if not isinstance(given, str) or not given.strip() or not isinstance(obj.get("tables"), list):
        raise SourceError(str(given or "?"), f"{source_path}: schema object needs `db_id` (a string) and a `tables` list")
    db_id = given
    _typed(obj, "description", str, "database", db_id)
    _typed(obj, "foreign_keys", list, "database", db_id)
    snap = DatabaseSnapshot(db_id, "schema_json", source_path, obj.get("description"))
    for ti, t in enumerate(obj["tables"]):
        where = f"tables[{ti}]"
        if not isinstance(t, dict):
            raise SourceError(db_id, f"{where} must be an object with `name` and `columns`, got {json.dumps(t)[:60]}")
        for key in ("name", "label", "description"):
            _typed(t, key, str, where, db_id)
        _typed(t, "columns", list, where, db_id)
        if not t.get("name"):
            snap.issues.append(Issue(snap.db_id, None, "warning", f"{source_path}: table without a name skipped"))
            continue
        table = TableInfo(t["name"], t.get("label") or label_of(t["name"]), description=t.get("description"))
        for i, c in enumerate(t.get("columns") or [], 1):
            cwhere = f"{where}.columns[{i - 1}]"
            if not isinstance(c, dict):
                raise SourceError(db_id, f"{cwhere} must be an object with `name`, got {json.dumps(c)[:60]}")
            for key in ("name", "label", "type", "description", "value_description"):
                _typed(c, key, str, cwhere, db_id)
            _typed(c, "primary_key", bool, cwhere, db_id)
            _typed(c, "samples", list, cwhere, db_id)
            if not c.get("name"):
                snap.issues.append(Issue(snap.db_id, t["name"], "warning", "column without a name skipped"))
                continue
            table.columns.append(ColumnInfo(
                c["name"], c.get("label") or label_of(c["name"]), i, str(c.get("type") or "text").lower(),
                bool(c.get("primary_key")), c.get("description") or None, c.get("value_description") or None,
                [str(v)[:60] for v in (c.get("samples") or []) if v is not None][:5]))
        snap.tables.append(table)
    for fk in obj.get("foreign_keys") or []:
        ends = [fk.get(k) for k in ("table", "column", "ref_table")] if isinstance(fk, dict) else [None]
        ref_column = fk.get("ref_column") if isinstance(fk, dict) else None
        if not all(isinstance(e, str) and e for e in ends) or not (ref_column is None or isinstance(ref_column, str)):
            snap.issues.append(Issue(snap.db_id, None, "warning",
                                     f"malformed foreign key {fk!r} skipped (needs strings table, column, "
                                     "ref_table and optionally ref_column)"))
            continue
        snap.foreign_keys.append(ForeignKey(*ends, ref_column or None))
    return snap


def schema_file_objects(spec: SourceSpec) -> list[tuple[int, Any, str | None]]:
    """The JSON objects of a schema-only source file (``.jsonl`` lines, or a ``.json`` object/list).

    Args:
        spec: the declared source.

    Returns:
        (line or item number, the object or None, the parse error or None) per object.

    Raises:
        SourceError: the file is missing or cannot be read.
    """
    path = Path(spec.path)
    if not path.is_file():
        raise SourceError(spec.id or path.stem, f"schema file {path} not found: fix `path` in the sources file")
    try:
        return list(_json_objects(path))
    except OSError as exc:
        raise SourceError(spec.id or path.stem, f"cannot read schema file {path}: {exc.strerror or exc}") from exc


def read_schema_json(spec: SourceSpec) -> tuple[list[DatabaseSnapshot], list[Issue]]:
    """Read a schema-only file (``.jsonl``: one database a line; ``.json``: object or list).

    Args:
        spec: the declared source.

    Returns:
        (snapshots of the well-formed databases, issues naming each bad line or object)

    Raises:
        SourceError: the file is missing, or ``id`` is given for a file holding several databases.
    """
    path = Path(spec.path)
    objects = schema_file_objects(spec)
    if spec.id and len(objects) > 1:
        raise SourceError(spec.id, f"{path} holds {len(objects)} databases; `id` only fits a single one")
    snaps: list[DatabaseSnapshot] = []
    issues: list[Issue] = []
    for no, obj, error in objects:
        where = f"{path}:{no}"
        if error:
            issues.append(Issue(spec.id or path.stem, where, "error", f"{error}; this database is left out"))
            continue
        try:
            snaps.append(snapshot_from_json(obj if isinstance(obj, dict) else {}, where, spec.id))
        except SourceError as exc:
            issues.append(Issue(exc.db_id, where, "error", f"{exc}; this database is left out"))
    return snaps, issues
