"""`dbrouter ingest`: snapshot every declared source into the warehouse's raw schema.

Why a Python step and not a dbt source plugin: introspection needs per-source error
handling (one unreadable database must not stop the other 205), read-only connections to
SQLite/DuckDB files and bounded sampling; the result is a plain raw snapshot that the dbt
models read as ``source('catalog', ...)``. The snapshot is replaced as a whole in one
transaction, so a removed database disappears and a changed schema is picked up, while a
failed ingest leaves the previous snapshot in place.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import pyarrow as pa

from dbrouter.errors import SourceError
from dbrouter.introspect import (DatabaseSnapshot, Issue, check_foreign_keys, read_duckdb,
                                 read_schema_json, read_sqlite)
from dbrouter.sources import SourcesConfig
from dbrouter.store import ensure_tables

RAW_SCHEMA = "dbrouter_raw"

RAW_TABLES: dict[str, pa.Schema] = {
    "databases": pa.schema([("db_id", pa.string()), ("source_type", pa.string()), ("source_path", pa.string()),
                            ("description", pa.string()), ("status", pa.string()), ("ingested_at", pa.string())]),
    "tables": pa.schema([("db_id", pa.string()), ("table_name", pa.string()), ("table_label", pa.string()),
                         ("description", pa.string()), ("row_count", pa.int64())]),
    "columns": pa.schema([("db_id", pa.string()), ("table_name", pa.string()), ("column_name", pa.string()),
                          ("column_label", pa.string()), ("ordinal", pa.int32()), ("data_type", pa.string()),
                          ("is_primary_key", pa.bool_()), ("description", pa.string()),
                          ("value_description", pa.string()), ("sample_values", pa.list_(pa.string()))]),
    "foreign_keys": pa.schema([("db_id", pa.string()), ("table_name", pa.string()), ("column_name", pa.string()),
                               ("ref_table", pa.string()), ("ref_column", pa.string())]),
    "issues": pa.schema([("db_id", pa.string()), ("object_name", pa.string()), ("severity", pa.string()),
                         ("message", pa.string())]),
    "examples": pa.schema([("db_id", pa.string()), ("question", pa.string()), ("sql", pa.string()),
                           ("origin", pa.string())]),
    "statements": pa.schema([("db_id", pa.string()), ("statement", pa.string()), ("origin", pa.string())]),
}


@dataclass
class IngestReport:
    """What one ingest did."""

    databases: int = 0
    tables: int = 0
    columns: int = 0
    foreign_keys: int = 0
    examples: int = 0
    statements: int = 0
    issues: list[Issue] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        errors = sum(1 for i in self.issues if i.severity == "error")
        return (f"ingested {self.databases} databases, {self.tables} tables, {self.columns} columns, "
                f"{self.foreign_keys} foreign keys, {self.examples} examples, {self.statements} statements "
                f"in {self.seconds:.1f}s; {errors} errors, {len(self.issues) - errors} warnings")


def read_source_databases(config: SourcesConfig, progress: Callable[[str], None] | None = None
                          ) -> tuple[list[DatabaseSnapshot], list[Issue]]:
    """Introspect every declared database; failures become issues, not exceptions.

    Args:
        config: the parsed sources file.
        progress: called with a progress line now and then.

    Returns:
        (snapshots of the readable databases, issues for the unreadable ones)
    """
    snaps: list[DatabaseSnapshot] = []
    issues: list[Issue] = []
    seen: set[str] = set()
    total = len(config.databases)
    for i, spec in enumerate(config.databases, 1):
        db_id = spec.id or Path(spec.path).stem
        try:
            if spec.type == "sqlite":
                found = [read_sqlite(spec, db_id, config.sample_values, config.sample_value_chars)]
            elif spec.type == "duckdb":
                found = [read_duckdb(spec, db_id, config.sample_values, config.sample_value_chars)]
            else:
                found, bad = read_schema_json(spec)
                issues.extend(bad)
        except SourceError as exc:
            issues.append(Issue(exc.db_id, None, "error", f"{exc} (database left out of the knowledge base)"))
            continue
        for snap in found:
            if snap.db_id in seen:
                issues.append(Issue(snap.db_id, None, "error",
                                    f"duplicate database id from {snap.source_path}; give it a distinct `id`"))
                continue
            seen.add(snap.db_id)
            check_foreign_keys(snap)
            for table in snap.tables:
                if not table.columns:
                    snap.issues.append(Issue(snap.db_id, table.name, "warning",
                                             "table has no columns; kept without column documents"))
            snaps.append(snap)
        if progress and (i % 25 == 0 or i == total):
            progress(f"  read {i}/{total} sources")
    return snaps, issues


def _jsonl_rows(paths: Iterable[Path], fields: tuple[str, ...], issues: list[Issue]) -> list[dict]:
    rows = []
    for path in paths:
        if not path.is_file():
            issues.append(Issue("*", str(path), "error", f"file {path} not found; nothing loaded from it"))
            continue
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                row = {f: str(obj[f]) for f in fields}
            except (json.JSONDecodeError, KeyError, TypeError):
                issues.append(Issue("*", f"{path}:{no}", "warning", f"line skipped: needs {', '.join(fields)}"))
                continue
            row["origin"] = f"{path.name}:{no}"
            rows.append(row)
    return rows


def snapshot_rows(snaps: list[DatabaseSnapshot]) -> dict[str, list[dict]]:
    """Flatten snapshots into rows of the raw tables.

    Args:
        snaps: introspected databases.

    Returns:
        Rows per raw table name (databases, tables, columns, foreign_keys, issues).
    """
    now = time.strftime("%Y-%m-%dT%H:%M:%S")
    out: dict[str, list[dict]] = {k: [] for k in ("databases", "tables", "columns", "foreign_keys", "issues")}
    for s in snaps:
        out["databases"].append(dict(db_id=s.db_id, source_type=s.source_type, source_path=s.source_path,
                                     description=s.description, status=s.status, ingested_at=now))
        for t in s.tables:
            out["tables"].append(dict(db_id=s.db_id, table_name=t.name, table_label=t.label,
                                      description=t.description, row_count=t.row_count))
            for c in t.columns:
                out["columns"].append(dict(
                    db_id=s.db_id, table_name=t.name, column_name=c.name, column_label=c.label,
                    ordinal=c.ordinal, data_type=c.data_type, is_primary_key=c.is_primary_key,
                    description=c.description, value_description=c.value_description, sample_values=c.samples))
        for fk in s.foreign_keys:
            out["foreign_keys"].append(dict(db_id=s.db_id, table_name=fk.table, column_name=fk.column,
                                            ref_table=fk.ref_table, ref_column=fk.ref_column))
        out["issues"].extend(vars(i) for i in s.issues)
    return out


def write_raw(con, rows: dict[str, list[dict]], schema: str = RAW_SCHEMA) -> None:
    """Replace the raw snapshot tables in one transaction.

    Args:
        con: DuckDB connection to the warehouse.
        rows: rows per raw table (missing tables are written empty).
        schema: target schema.
    """
    con.execute("BEGIN TRANSACTION")
    try:
        ensure_tables(con)
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        for name, arrow_schema in RAW_TABLES.items():
            data = pa.Table.from_pylist(rows.get(name, []), schema=arrow_schema)
            con.register("_dbrouter_raw_rows", data)
            con.execute(f"CREATE OR REPLACE TABLE {schema}.{name} AS SELECT * FROM _dbrouter_raw_rows")
            con.unregister("_dbrouter_raw_rows")
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise


def ingest(config: SourcesConfig, warehouse: str | Path, progress: Callable[[str], None] | None = None
           ) -> IngestReport:
    """Snapshot all sources of ``config`` into ``warehouse``.

    Args:
        config: the parsed sources file.
        warehouse: path of the DuckDB warehouse file (created if missing).
        progress: progress callback (e.g. ``print`` to stderr).

    Returns:
        An :class:`IngestReport`.
    """
    import duckdb

    started = time.time()
    snaps, issues = read_source_databases(config, progress)
    rows = snapshot_rows(snaps)
    rows["issues"] = [vars(i) for i in issues] + rows["issues"]
    extra: list[Issue] = []
    rows["examples"] = _jsonl_rows(config.examples, ("db_id", "question", "sql"), extra)
    rows["statements"] = _jsonl_rows(config.statements, ("db_id", "statement"), extra)
    rows["issues"] += [vars(i) for i in extra]
    Path(warehouse).parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(warehouse))
    try:
        write_raw(con, rows)
    finally:
        con.close()
    report = IngestReport(
        databases=len(rows["databases"]), tables=len(rows["tables"]), columns=len(rows["columns"]),
        foreign_keys=len(rows["foreign_keys"]), examples=len(rows["examples"]),
        statements=len(rows["statements"]),
        issues=issues + [i for s in snaps for i in s.issues] + extra, seconds=time.time() - started)
    return report


def print_issues(report: IngestReport, stream=sys.stderr, limit: int = 30) -> None:
    """Print the report's issues, one line each, naming database and object."""
    for issue in report.issues[:limit]:
        where = f"{issue.db_id}" + (f" / {issue.object_name}" if issue.object_name else "")
        print(f"  {issue.severity.upper():7} {where}: {issue.message}", file=stream)
    if len(report.issues) > limit:
        print(f"  ... and {len(report.issues) - limit} more (see table kb_ingest_issues)", file=stream)
