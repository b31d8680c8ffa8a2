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
import logging
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from dbrouter.connection import Connection
from dbrouter.errors import SourceError
from dbrouter.kb import changes as user_changes
from dbrouter.kb.tables import ensure_tables, load_query_log
from dbrouter.sources.base import DatabaseSnapshot, Issue, SourcesConfig, check_foreign_keys, default_db_id, utf8_error
from dbrouter.sources.registry import source_type

if TYPE_CHECKING:
    import duckdb

_log = logging.getLogger(__name__)

RAW_SCHEMA = "dbrouter_raw"

RAW_TABLES: dict[str, pa.Schema] = {
    "databases": pa.schema([("db_id", pa.string()), ("source_type", pa.string()), ("source_path", pa.string()),
                            ("description", pa.string()), ("status", pa.string()), ("ingested_at", pa.string())]),
    "tables": pa.schema([("db_id", pa.string()), ("table_name", pa.string()), ("table_label", pa.string()),
                         ("description", pa.string()), ("row_count", pa.int64()), ("table_kind", pa.string())]),
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


BUILD_INPUTS = "build_inputs"
"""The raw schema's table where a build records the digests of its inputs (:mod:`dbrouter.kb.inputs`);
every ingest drops it, so a warehouse ingested in place is rebuilt by the next build."""


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


def _arrow_collisions(prefixes: set[str], suffixes: set[str]) -> list[str]:
    """Pairs ``(a, b)`` whose key ``a->b`` (reachability pair / join-edge key) another pair also gives.

    ``a->b == a'->b'`` with ``a != a'`` needs ``a' = a->u`` and ``b = u->b'``: only names holding
    ``->`` can collide, so this walks those (cheap; nothing to do for ordinary names).
    """
    found = []
    for longer in sorted(p for p in prefixes if "->" in p):
        at = longer.find("->")
        while at >= 0:
            shorter, middle = longer[:at], longer[at + 2:]
            if shorter in prefixes:
                for b in sorted(suffixes):
                    if b.startswith(middle + "->") and b[len(middle) + 2:] in suffixes:
                        found.append(f"{shorter!r} -> {b!r} and {longer!r} -> {b[len(middle) + 2:]!r} "
                                     f"both give '{shorter}->{b}'")
            at = longer.find("->", at + 1)
    return found


def key_collisions(snap: DatabaseSnapshot) -> list[str]:
    """Names of one database that would give two objects the same knowledge-base key.

    The dbt models key tables as ``db.table``, columns as ``db.table.column``, table pairs as
    ``db.from->to`` and join edges as ``db.t.c->t.c``; a repeated name, or names holding ``.``
    or ``->`` that join into the same string (tables ``"a.b"(c)`` and ``"a"("b.c")`` are both
    ``db.a.b.c``), fail the KB's unique tests and stop the whole build.

    Args:
        snap: one introspected database.

    Returns:
        One description per collision (empty: the database is safe to load).
    """
    problems = []
    seen_tables: dict[str, int] = {}
    for t in snap.tables:
        seen_tables[t.name] = seen_tables.get(t.name, 0) + 1
    problems += [f"table {name!r} appears {n} times" for name, n in seen_tables.items() if n > 1]
    by_key: dict[str, set[tuple[str, str]]] = {}
    for t in snap.tables:
        seen_cols: dict[str, int] = {}
        for c in t.columns:
            seen_cols[c.name] = seen_cols.get(c.name, 0) + 1
            by_key.setdefault(f"{t.name}.{c.name}", set()).add((t.name, c.name))
        problems += [f"column {name!r} appears {n} times in table {t.name!r}"
                     for name, n in seen_cols.items() if n > 1]
    for key, owners in sorted(by_key.items()):
        if len(owners) > 1:
            named = " and ".join(f"table {t!r} column {c!r}" for t, c in sorted(owners))
            problems.append(f"{named} both give the column key '{snap.db_id}.{key}'")
    tables = {t.name for t in snap.tables}
    problems += _arrow_collisions({f"{snap.db_id}.{t}" for t in tables}, tables)
    problems += _arrow_collisions({f"{snap.db_id}.{k}" for k in by_key}, set(by_key))
    return problems


def _keys(snap: DatabaseSnapshot) -> dict[str, str]:
    """The database's table and column keys, each with the object it names (for messages)."""
    out = {f"{snap.db_id}.{t.name}": f"table {t.name!r}" for t in snap.tables}
    out.update({f"{snap.db_id}.{t.name}.{c.name}": f"table {t.name!r} column {c.name!r}"
                for t in snap.tables for c in t.columns})
    return out


def _clash_with_kept(snap: DatabaseSnapshot, kept: dict[str, DatabaseSnapshot], dotted: list[str]
                     ) -> tuple[list[tuple[str, str]], str, str]:
    """Keys of ``snap`` that a database already kept also has: ``([(key, object)], other db, its object)``.

    ``D.rest == D'.rest'`` with ``D != D'`` needs one id to be a dot-prefix of the other
    (``x`` and ``x.y``), so only those pairs are compared (no key index over all databases);
    ``dotted`` lists the kept ids holding a dot.
    """
    parts = snap.db_id.split(".")
    others = [".".join(parts[:n]) for n in range(1, len(parts))]
    others += [d for d in dotted if d.startswith(snap.db_id + ".")]
    others = [d for d in others if d in kept]
    if not others:
        return [], "", ""
    mine = _keys(snap)
    for other_id in others:  # all in kept (filtered above)
        theirs = _keys(kept[other_id])
        clash = sorted((k, mine[k]) for k in mine if k in theirs)
        if clash:
            return clash, other_id, theirs[clash[0][0]]
    return [], "", ""


def _exclude_tables(snap: DatabaseSnapshot, names: tuple[str, ...]) -> None:
    """Drop the tables named by the source's ``exclude_tables`` (and foreign keys touching them)."""
    if not names:
        return
    drop = set(names)
    present = {t.name for t in snap.tables}
    for name in sorted(drop - present):
        snap.issues.append(Issue(snap.db_id, name, "warning", "`exclude_tables` names a table the database does not have"))
    snap.tables = [t for t in snap.tables if t.name not in drop]
    snap.foreign_keys = [fk for fk in snap.foreign_keys if fk.table not in drop and fk.ref_table not in drop]


def read_source_databases(config: SourcesConfig, progress: Callable[[str], None] | None = None
                          ) -> tuple[list[DatabaseSnapshot], list[Issue]]:
    """Introspect every declared database; failures become issues, not exceptions.

    A database is left out (with an error naming it) when it cannot be read, when its id is
    already taken by another source, or when its names would collide in the knowledge base's
    keys (see :func:`key_collisions`); a database without tables is kept with a warning.

    Args:
        config: the parsed sources file.
        progress: called with a progress line now and then.

    Returns:
        (snapshots of the databases to load, issues about the ones left out)
    """
    snaps: list[DatabaseSnapshot] = []
    issues: list[Issue] = []
    seen: dict[str, str] = {}  # db_id -> the source it came from
    kept: dict[str, DatabaseSnapshot] = {}
    dotted: list[str] = []  # kept ids holding a '.'
    total = len(config.databases)
    for i, spec in enumerate(config.databases, 1):
        db_id = default_db_id(spec)
        try:
            found, bad = source_type(spec.type).read(spec, config.sample_values, config.sample_value_chars, progress)
            issues.extend(bad)
        except SourceError as exc:
            issues.append(Issue(exc.db_id, None, "error", f"{exc} (database left out of the knowledge base)"))
            continue
        except Exception as exc:  # noqa: BLE001 - one unreadable file must not stop the others
            issues.append(Issue(db_id, str(spec.path), "error",
                                f"cannot read {spec.path} ({type(exc).__name__}: {' '.join(str(exc).split())}); "
                                "database left out of the knowledge base"))
            continue
        for snap in found:
            if snap.db_id in seen:
                issues.append(Issue(snap.db_id, snap.source_path, "error",
                                    f"duplicate database id: {snap.source_path} and {seen[snap.db_id]} are both "
                                    f"{snap.db_id!r}; give one a distinct `id` (the second is left out)"))
                continue
            _exclude_tables(snap, spec.exclude_tables)
            collisions = key_collisions(snap)
            if collisions:
                issues.append(Issue(snap.db_id, None, "error", (
                    f"names collide in the knowledge base's keys: {'; '.join(collisions[:5])}"
                    f"{f' (and {len(collisions) - 5} more)' if len(collisions) > 5 else ''}. Rename them in the "
                    "source or leave a table out with `exclude_tables: [...]` on its sources entry; "
                    "database left out of the knowledge base")))
                continue
            clash, other, what = _clash_with_kept(snap, kept, dotted)
            if clash:
                issues.append(Issue(snap.db_id, None, "error", (
                    f"{clash[0][1]} gives the key {clash[0][0]!r}, which database {other!r} ({what}) already has"
                    f"{f' ({len(clash)} keys in all)' if len(clash) > 1 else ''}: database ids and names joined "
                    "with '.' must not meet; give this source a distinct `id` or rename the table; "
                    "database left out of the knowledge base")))
                continue
            seen[snap.db_id] = snap.source_path
            kept[snap.db_id] = snap
            if "." in snap.db_id:
                dotted.append(snap.db_id)
            check_foreign_keys(snap)
            if not snap.tables:
                snap.issues.append(Issue(snap.db_id, None, "warning",
                                         f"{snap.source_path} has no tables: the database is kept but has "
                                         "nothing to route on"))
            for table in snap.tables:
                if not table.columns:
                    snap.issues.append(Issue(snap.db_id, table.name, "warning",
                                             "table has no columns; kept without column documents"))
                elif table.row_count == 0 and not any(i.object_name == table.name for i in snap.issues):
                    snap.issues.append(Issue(snap.db_id, table.name, "warning",
                                             f"{table.kind} is empty: no sample values to route on"))
            snaps.append(snap)
        if i % 25 == 0 or i == total:
            (progress or _log.info)(f"  read {i}/{total} sources")
    return snaps, issues


def _jsonl_rows(paths: Iterable[Path], fields: tuple[str, ...], issues: list[Issue]) -> list[dict]:
    rows = []
    for path in paths:
        if not path.is_file():
            issues.append(Issue("*", str(path), "error", f"file {path} not found; nothing loaded from it"))
            continue
        try:
            lines = path.read_bytes().splitlines()
        except OSError as exc:
            issues.append(Issue("*", str(path), "error", f"cannot read {path}: {exc.strerror or exc}; nothing loaded from it"))
            continue
        for no, raw in enumerate(lines, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                issues.append(Issue("*", f"{path}:{no}", "warning",
                                    f"line skipped: not valid UTF-8 ({utf8_error(exc)}); save the file as UTF-8"))
                continue
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                row = {f: obj[f] for f in fields}
            except (json.JSONDecodeError, KeyError, TypeError, IndexError):
                issues.append(Issue("*", f"{path}:{no}", "warning", f"line skipped: needs {', '.join(fields)}"))
                continue
            wrong = [f for f in fields if not isinstance(row[f], str)]
            if wrong:
                issues.append(Issue("*", f"{path}:{no}", "warning",
                                    f"line skipped: {', '.join(wrong)} must be {'a string' if len(wrong) == 1 else 'strings'}"))
                continue
            row["origin"] = f"{path.name}:{no}"
            rows.append(row)
    return rows


def collect_raw_rows(config: SourcesConfig, progress: Callable[[str], None] | None = None
                     ) -> tuple[list[DatabaseSnapshot], list[Issue], list[Issue], dict[str, list[dict]]]:
    """Read every source and the example/statement files into rows of the raw tables.

    Args:
        config: the parsed sources file.
        progress: progress callback.

    Returns:
        (snapshots, issues of databases left out, issues of the example/statement files,
        rows per raw table with all those issues in ``issues``)
    """
    snaps, issues = read_source_databases(config, progress)
    rows = snapshot_rows(snaps)
    rows["issues"] = [vars(i) for i in issues] + rows["issues"]
    extra: list[Issue] = []
    rows["examples"] = _jsonl_rows(config.examples, ("db_id", "question", "sql"), extra)
    rows["statements"] = _jsonl_rows(config.statements, ("db_id", "statement"), extra)
    rows["issues"] += [vars(i) for i in extra]
    return snaps, issues, extra, rows


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
                                      description=t.description, row_count=t.row_count, table_kind=t.kind))
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


def write_raw(con: duckdb.DuckDBPyConnection, rows: dict[str, list[dict]], schema: str = RAW_SCHEMA) -> None:
    """Replace the raw snapshot tables in one transaction (and drop the last build's :data:`BUILD_INPUTS`).

    Args:
        con: DuckDB connection to the warehouse.
        rows: rows per raw table (missing tables are written empty).
        schema: target schema.
    """
    con.execute("BEGIN TRANSACTION")
    try:
        ensure_tables(con)
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        # the marts no longer match what the last build recorded as its inputs (dbrouter.kb.inputs)
        con.execute(f"DROP TABLE IF EXISTS {schema}.{BUILD_INPUTS}")
        for name, arrow_schema in RAW_TABLES.items():
            data = pa.Table.from_pylist(rows.get(name, []), schema=arrow_schema)
            con.register("_dbrouter_raw_rows", data)
            con.execute(f"CREATE OR REPLACE TABLE {schema}.{name} AS SELECT * FROM _dbrouter_raw_rows")
            con.unregister("_dbrouter_raw_rows")
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise


UNROUTED = {kind: f"{kind} for a database that is not ingested; not used" for kind in ("example", "statement")}


def unrouted_issues(databases: set[str], examples: list[dict], statements: list[dict]) -> list[Issue]:
    """Warnings for examples/statements whose database is not ingested.

    ``kb_ingest_issues`` lists these (one row per distinct example or statement) next to the
    ingest's own issues; they are counted here so the ingest summary says as many warnings.

    Args:
        databases: the ingested db_ids.
        examples: example rows (db_id, question, sql) from the files of the sources file.
        statements: statement rows (db_id, statement) from files and the CLI.

    Returns:
        One warning per distinct example or statement for an unknown database.
    """
    out: list[Issue] = []
    seen: set[tuple] = set()
    for kind, rows, text_field, key_fields in (("example", examples, "question", ("question", "sql")),
                                               ("statement", statements, "statement", ("statement",))):
        for row in rows:
            text = (row.get(text_field) or "").strip()
            key = (kind, row.get("db_id"), *(row.get(f) for f in key_fields))  # as the models group them
            if not text or row.get("db_id") in databases or key in seen:
                continue
            seen.add(key)
            out.append(Issue(str(row.get("db_id")), f"{kind}: {text[:60]}", "warning", UNROUTED[kind]))
    return out


@dataclass(frozen=True)
class Collected:
    """What :func:`read_sources` read, before anything is written.

    Attributes:
        snaps: the databases to load.
        issues: issues of the databases left out.
        extra: issues of the example/statement files.
        rows: rows per raw table (all the issues in ``issues``).
        seconds: how long reading took.
    """

    snaps: list[DatabaseSnapshot]
    issues: list[Issue]
    extra: list[Issue]
    rows: dict[str, list[dict]]
    seconds: float


def read_sources(config: SourcesConfig, progress: Callable[[str], None] | None = None) -> Collected:
    """:func:`collect_raw_rows`, timed.

    Args:
        config: the parsed sources file.
        progress: progress callback.

    Returns:
        A :class:`Collected`.
    """
    started = time.time()
    snaps, issues, extra, rows = collect_raw_rows(config, progress)
    return Collected(snaps, issues, extra, rows, time.time() - started)


def ingest_report(collected: Collected, user_statements: list[dict], seconds: float) -> IngestReport:
    """The report of an ingest of ``collected``.

    Args:
        collected: what :func:`read_sources` read.
        user_statements: the statements added with the CLI (``db_id``, ``statement``), for the
            warnings about databases that are not ingested.
        seconds: how long writing took (reading is in ``collected``).

    Returns:
        An :class:`IngestReport`; its issues include the examples and statements for databases
        that are not ingested (which ``kb_ingest_issues`` lists after the build).
    """
    rows = collected.rows
    unrouted = unrouted_issues({s.db_id for s in collected.snaps}, rows["examples"],
                               rows["statements"] + user_statements)
    return IngestReport(
        databases=len(rows["databases"]), tables=len(rows["tables"]), columns=len(rows["columns"]),
        foreign_keys=len(rows["foreign_keys"]), examples=len(rows["examples"]),
        statements=len(rows["statements"]),
        issues=collected.issues + [i for s in collected.snaps for i in s.issues] + collected.extra + unrouted,
        seconds=collected.seconds + seconds)


def user_statements(con: Connection) -> list[dict]:
    """The statements added with the CLI that a warehouse holds (``db_id``, ``statement``).

    Args:
        con: a connection to the warehouse (read-only is enough; a KB without the table has none).

    Returns:
        One dict per statement.
    """
    import duckdb

    try:
        return [dict(db_id=d, statement=st) for d, st in
                con.execute("select db_id, statement from dbrouter_user.statements").fetchall()]
    except duckdb.CatalogException:
        return []


def ingest(config: SourcesConfig, warehouse: str | Path,
           progress: Callable[[str], None] | None = None, query_log: Path | None = None,
           changes: Path | None = None, collected: Collected | None = None) -> IngestReport:
    """Snapshot all sources of ``config`` into ``warehouse``.

    Args:
        config: the parsed sources file.
        warehouse: path of the DuckDB warehouse file (created if missing).
        progress: progress callback (e.g. ``print`` to stderr).
        query_log: the query log journal whose new entries are added to ``dbrouter_user.query_log``
            (None: none).
        changes: the changes journal (:mod:`dbrouter.kb.changes`) whose changes not applied yet are
            applied to the user's examples and statements (None: none).
        collected: what :func:`read_sources` already read from ``config`` (None: read it now).

    Returns:
        An :class:`IngestReport` (:func:`ingest_report`).
    """
    import duckdb

    if collected is None:
        collected = read_sources(config, progress)
    started = time.time()
    rows = collected.rows
    Path(warehouse).parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(warehouse))
    try:
        write_raw(con, rows)
        logged = load_query_log(con, query_log)
        say = progress or _log.info
        if logged:
            say(f"query log: {logged} new entries from {query_log} added to dbrouter_user.query_log")
        applied = user_changes.load_into(con, changes)
        if applied.changes or applied.bad or applied.refused:
            say(f"changes: {applied.changes} from {changes} applied to the examples and statements "
                     f"({applied.rows} rows)" + (f"; {applied.bad} lines that are not changes skipped" if applied.bad else ""))
            for refused in applied.refused[:5]:
                say(f"  change refused: {refused}")
        added = user_statements(con)
    finally:
        con.close()
    return ingest_report(collected, added, time.time() - started)


def print_issues(report: IngestReport, stream=sys.stderr, limit: int = 30) -> None:
    """Print the report's issues, one line each, naming database and object.

    Examples and statements for databases that are not ingested are summed up in one line per
    kind (a shared examples file gives dozens); ``kb_ingest_issues`` lists each of them.
    """
    unrouted = {kind: [i for i in report.issues if i.message == msg] for kind, msg in UNROUTED.items()}
    shown = [i for i in report.issues if i.message not in UNROUTED.values()]
    for issue in shown[:limit]:
        where = f"{issue.db_id}" + (f" / {issue.object_name}" if issue.object_name else "")
        print(f"  {issue.severity.upper():7} {where}: {issue.message}", file=stream)
    if len(shown) > limit:
        print(f"  ... and {len(shown) - limit} more (see table kb_ingest_issues)", file=stream)
    for kind, found in unrouted.items():
        if found:
            dbs = sorted({i.db_id for i in found})
            print(f"  WARNING {len(found)} {kind}s for databases that are not ingested, not used: "
                  f"{', '.join(dbs[:8])}{f' and {len(dbs) - 8} more' if len(dbs) > 8 else ''} "
                  "(each is listed in kb_ingest_issues)", file=stream)
