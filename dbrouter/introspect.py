"""Read one source database's metadata: tables, columns, keys, descriptions, samples.

Every reader opens its source read-only and returns a :class:`DatabaseSnapshot`; problems
that concern one object (a table without columns, a foreign key to a missing table) are
recorded as :class:`Issue` rows instead of failing the whole database.
"""

from __future__ import annotations

import json
import re
import sqlite3
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


@dataclass
class ForeignKey:
    table: str
    column: str
    ref_table: str
    ref_column: str


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


def _samples(fetch: Callable[[str], list[tuple]], relation: str, column: str, n: int, chars: int) -> list[str]:
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
    out: list[str] = []
    for (value,) in fetch(sql):
        text = _sample_text(value, chars)
        if text and text not in out:
            out.append(text)
        if len(out) >= n:
            break
    return out


def check_foreign_keys(snap: DatabaseSnapshot) -> None:
    """Flag foreign keys whose table or column does not exist (kept out of the join graph).

    Args:
        snap: the snapshot to check in place; bad keys are removed and reported as issues.
    """
    cols = {(t.name.lower(), c.name.lower()) for t in snap.tables for c in t.columns}
    tables = {t.name.lower() for t in snap.tables}
    good = []
    for fk in snap.foreign_keys:
        name = f"{fk.table}.{fk.column} -> {fk.ref_table}.{fk.ref_column}"
        if fk.ref_table.lower() not in tables:
            snap.issues.append(Issue(snap.db_id, name, "warning",
                                     f"foreign key refers to missing table {fk.ref_table!r}; edge skipped"))
        elif (fk.table.lower(), fk.column.lower()) not in cols or (fk.ref_table.lower(), fk.ref_column.lower()) not in cols:
            snap.issues.append(Issue(snap.db_id, name, "warning",
                                     "foreign key refers to a missing column; edge skipped"))
        else:
            good.append(fk)
    snap.foreign_keys = good


def read_sqlite(spec: SourceSpec, db_id: str, n_samples: int, chars: int) -> DatabaseSnapshot:
    """Introspect a SQLite file through a read-only connection."""
    path = Path(spec.path)
    if not path.is_file():
        raise SourceError(db_id, f"SQLite file {path} not found: fix `path` in the sources file")
    try:
        con = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True)
        con.text_factory = lambda b: b.decode("utf-8", errors="replace")
        names = [r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    except sqlite3.DatabaseError as exc:
        raise SourceError(db_id, f"cannot open {path} as SQLite: {exc}") from exc
    snap = DatabaseSnapshot(db_id, "sqlite", str(path), spec.description)
    fetch = lambda sql: con.execute(sql).fetchall()  # noqa: E731
    try:
        for name in names:
            table = TableInfo(name, label_of(name))
            try:
                info = con.execute(f"PRAGMA table_info({quote_ident(name)})").fetchall()
                table.row_count = con.execute(f"SELECT count(*) FROM {quote_ident(name)}").fetchall()[0][0]
            except sqlite3.DatabaseError as exc:
                snap.issues.append(Issue(db_id, name, "warning", f"cannot read table: {exc}"))
                continue
            pks = [r[1] for r in info if r[5]]
            for cid, cname, ctype, _notnull, _default, pk in info:
                col = ColumnInfo(cname, label_of(cname), cid + 1, (ctype or "").lower() or "text", bool(pk))
                try:
                    col.samples = _samples(fetch, quote_ident(name), cname, n_samples, chars)
                except sqlite3.DatabaseError as exc:
                    snap.issues.append(Issue(db_id, f"{name}.{cname}", "warning", f"no samples: {exc}"))
                table.columns.append(col)
            for row in con.execute(f"PRAGMA foreign_key_list({quote_ident(name)})").fetchall():
                ref_table, src, ref_col = row[2], row[3], row[4]
                if ref_col is None:  # REFERENCES t without a column: the referenced primary key
                    ref_pk = [r[1] for r in con.execute(f"PRAGMA table_info({quote_ident(ref_table)})") if r[5]]
                    ref_col = ref_pk[0] if len(ref_pk) == 1 else (pks[0] if pks else src)
                snap.foreign_keys.append(ForeignKey(name, src, ref_table, ref_col))
            snap.tables.append(table)
    finally:
        con.close()
    return snap


def read_duckdb(spec: SourceSpec, db_id: str, n_samples: int, chars: int) -> DatabaseSnapshot:
    """Introspect a DuckDB file through a read-only connection (comments become descriptions)."""
    import duckdb

    path = Path(spec.path)
    if not path.is_file():
        raise SourceError(db_id, f"DuckDB file {path} not found: fix `path` in the sources file")
    try:
        con = duckdb.connect(str(path), read_only=True)
    except Exception as exc:  # duckdb raises several error classes here
        raise SourceError(db_id, f"cannot open {path} as DuckDB: {exc}") from exc
    snap = DatabaseSnapshot(db_id, "duckdb", str(path), spec.description)
    try:
        tables = con.execute(
            "SELECT schema_name, table_name, comment, estimated_size FROM duckdb_tables() "
            "WHERE NOT internal AND database_name = current_database() ORDER BY 1, 2").fetchall()
        cons = con.execute(
            "SELECT schema_name, table_name, constraint_type, constraint_column_names, "
            "referenced_table, referenced_column_names FROM duckdb_constraints() "
            "WHERE database_name = current_database() AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')").fetchall()
        qual = lambda s, t: t if s == "main" else f"{s}.{t}"  # noqa: E731
        pk_cols = {(qual(s, t), c) for s, t, kind, cols, _rt, _rc in cons if kind == "PRIMARY KEY" for c in cols}
        for schema, tname, comment, _size in tables:
            name = qual(schema, tname)
            table = TableInfo(name, label_of(tname), description=comment or None)
            rel = f"{quote_ident(schema)}.{quote_ident(tname)}"
            table.row_count = con.execute(f"SELECT count(*) FROM {rel}").fetchall()[0][0]
            cols = con.execute(
                "SELECT column_name, column_index, data_type, comment FROM duckdb_columns() "
                "WHERE database_name = current_database() AND schema_name = ? AND table_name = ? "
                "ORDER BY column_index", [schema, tname]).fetchall()
            fetch = lambda sql: con.execute(sql).fetchall()  # noqa: E731
            for cname, idx, dtype, ccomment in cols:
                col = ColumnInfo(cname, label_of(cname), int(idx), str(dtype).lower(),
                                 (name, cname) in pk_cols, ccomment or None)
                col.samples = _samples(fetch, rel, cname, n_samples, chars)
                table.columns.append(col)
            snap.tables.append(table)
        for schema, tname, kind, cols, ref_table, ref_cols in cons:
            if kind == "FOREIGN KEY":
                for c, rc in zip(cols, ref_cols or []):
                    snap.foreign_keys.append(ForeignKey(qual(schema, tname), c, ref_table, rc))
    finally:
        con.close()
    return snap


def _json_objects(path: Path) -> Iterable[tuple[int, Any, str | None]]:
    """(line or item number, object, error) per database in a ``.jsonl`` / ``.json`` file.

    A bad line of a ``.jsonl`` file yields an error for that line only; a bad ``.json`` file
    yields one error.
    """
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        for no, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    yield no, json.loads(line), None
                except json.JSONDecodeError as exc:
                    yield no, None, f"not valid JSON ({exc})"
        return
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        yield 1, None, f"not valid JSON ({exc})"
        return
    for no, obj in enumerate(data if isinstance(data, list) else [data], 1):
        yield no, obj, None


def snapshot_from_json(obj: dict[str, Any], source_path: str, db_id: str | None = None) -> DatabaseSnapshot:
    """Build a snapshot from one ``databases.jsonl`` object (schema-only database).

    Args:
        obj: ``{db_id, tables: [{name, label, columns: [...]}], foreign_keys: [...]}``.
        source_path: file it came from (for messages).
        db_id: overrides ``obj['db_id']`` when given.

    Returns:
        The snapshot (no row counts, no samples).

    Raises:
        SourceError: the object has no db_id or no table list.
    """
    db_id = db_id or obj.get("db_id")
    if not db_id or not isinstance(obj.get("tables"), list):
        raise SourceError(str(db_id or "?"), f"{source_path}: schema object needs `db_id` and a `tables` list")
    snap = DatabaseSnapshot(str(db_id), "schema_json", source_path, obj.get("description"))
    for t in obj["tables"]:
        if not isinstance(t, dict) or not t.get("name"):
            snap.issues.append(Issue(snap.db_id, None, "warning", f"{source_path}: table without a name skipped"))
            continue
        table = TableInfo(t["name"], t.get("label") or label_of(t["name"]), description=t.get("description"))
        for i, c in enumerate(t.get("columns") or [], 1):
            if not isinstance(c, dict) or not c.get("name"):
                snap.issues.append(Issue(snap.db_id, t["name"], "warning", "column without a name skipped"))
                continue
            table.columns.append(ColumnInfo(
                c["name"], c.get("label") or label_of(c["name"]), i, str(c.get("type") or "text").lower(),
                bool(c.get("primary_key")), c.get("description") or None, c.get("value_description") or None,
                [str(v)[:60] for v in (c.get("samples") or [])][:5]))
        snap.tables.append(table)
    for fk in obj.get("foreign_keys") or []:
        try:
            snap.foreign_keys.append(ForeignKey(fk["table"], fk["column"], fk["ref_table"], fk["ref_column"]))
        except (KeyError, TypeError):
            snap.issues.append(Issue(snap.db_id, None, "warning", f"malformed foreign key {fk!r} skipped"))
    return snap


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
    if not path.is_file():
        raise SourceError(spec.id or path.stem, f"schema file {path} not found: fix `path` in the sources file")
    objects = list(_json_objects(path))
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
