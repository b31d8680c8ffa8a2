"""`dbrouter refresh`: rebuild the knowledge base only when a source's schema has changed.

The check is cheap: it reads each source's catalog, never its rows (SQLite: ``sqlite_master``
and ``PRAGMA table_info`` / ``foreign_key_list``; DuckDB: ``duckdb_tables()``,
``duckdb_columns()``, ``duckdb_constraints()``, ``duckdb_views()``; a schema JSON: each
database's object, normalised), hashes it per database, and compares the hashes with those
recorded by the last refresh that built. The sources file (normalised YAML) and the examples and
statements files it names are hashed too. Sample values and row counts are data, not schema: a
data change alone does not trigger a rebuild (``--force`` does).

The record is a JSON file next to the warehouse, ``.dbrouter-dbt/refresh/<warehouse name>.json``,
written atomically (temporary file + :func:`os.replace`) only after a successful atomic build.
It also holds the embedder and the warehouse file's size and mtime right after that build:
anything else that writes the warehouse (``dbrouter build``, ``ingest``, ``statements add``) or
a change of embedder makes the next refresh rebuild once. A crash between the build's swap and
the record's write leaves the old record, so the next refresh rebuilds again: the record can
only be older than the knowledge base, never newer (fingerprints are taken before the build
reads the sources), so a change is never missed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import yaml

from dbrouter.dbt_runner import dbt_workdir
from dbrouter.errors import DbrouterError, SourceError
from dbrouter.introspect import open_duckdb_source, quote_ident, schema_file_objects, sqlite_readonly_uri
from dbrouter.sources import SourcesConfig, SourceSpec

if TYPE_CHECKING:
    from dbrouter.build import BuildResult
    from dbrouter.ingest import IngestReport

RECORD_VERSION = 1
PROGRESS_EVERY = 200
"""Print a progress line every this many sources while fingerprinting."""


class RefreshError(DbrouterError):
    """The refresh record cannot be written; the knowledge base itself was rebuilt."""


def _digest(value: Any) -> str:
    """sha256 of ``value`` as canonical JSON (sorted keys, no whitespace)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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
    return _digest(["sqlite", parts])


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
    return _digest(["duckdb", parts])


def fingerprint_schema_json(spec: SourceSpec) -> tuple[dict[str, str], dict[str, str]]:
    """Hashes of the databases of a schema JSON file, each of its normalised object.

    Key order and whitespace do not count; any value does (a schema file has no rows, so its
    sample values are part of what it declares).

    Args:
        spec: the declared source.

    Returns:
        ``({db_id: hash}, {name: problem})``: a bad line or object is named ``file:line``.

    Raises:
        SourceError: the file is missing or cannot be read.
    """
    path = Path(spec.path)
    objects = schema_file_objects(spec)
    found: dict[str, str] = {}
    bad: dict[str, str] = {}
    for no, obj, error in objects:
        db_id = spec.id or (obj.get("db_id") if isinstance(obj, dict) else None)
        if error or not isinstance(db_id, str) or not db_id.strip():
            bad[f"{path.name}:{no}"] = error or "schema object needs `db_id` (a string)"
            continue
        found[db_id] = _digest(["schema_json", obj])
    return found, bad


def fingerprint_snowflake(spec: SourceSpec, db_id: str) -> str:
    """Hash of a Snowflake source's schema: tables, comments, columns, types, keys (no rows read).

    Args:
        spec: the declared source.
        db_id: its database id.

    Returns:
        A hex sha256.

    Raises:
        SourceError: the database cannot be reached or listed.
    """
    from dbrouter.snowflake_source import read_snowflake

    return snapshot_digest("snowflake", read_snowflake(spec, db_id, 0, 0))


def snapshot_digest(source_type: str, snap) -> str:
    """Hash of a snapshot's schema as a catalog reader sees it (no rows, no samples).

    Args:
        source_type: the source's type, part of the hash.
        snap: a :class:`dbrouter.introspect.DatabaseSnapshot` read without samples.

    Returns:
        A hex sha256 of the tables and views (kind, description), their columns (type, key flag,
        description) and the foreign keys.
    """
    tables = [[t.name, t.kind, t.description,
               [[c.name, c.data_type, c.is_primary_key, c.description] for c in t.columns]] for t in snap.tables]
    keys = sorted([fk.table, fk.column, fk.ref_table, fk.ref_column or ""] for fk in snap.foreign_keys)
    return _digest([source_type, tables, keys])


def fingerprint_server(spec: SourceSpec) -> tuple[dict[str, str], dict[str, str]]:
    """Hashes of the databases a `url` source names: tables/views, comments, columns, types, keys
    (no rows read: sampling off).

    Args:
        spec: the declared source.

    Returns:
        ``({db_id: hash}, {db_id: problem})``.
    """
    from dbrouter.servers import read_server

    snaps, issues = read_server(spec.server, 0, 0)
    found = {snap.db_id: snapshot_digest("url", snap) for snap in snaps}
    return found, {i.db_id: i.message for i in issues if i.severity == "error"}


def _file_digest(path: Path) -> str:
    """Hash of a file's bytes, or a marker when it is missing or unreadable."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"


def _sources_digest(path: Path) -> str:
    """Hash of the sources file's parsed YAML (comments and layout do not count)."""
    try:
        return _digest(["sources", yaml.safe_load(path.read_bytes().decode("utf-8"))])
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return _file_digest(path)


@dataclass(frozen=True)
class Fingerprints:
    """The schema state of every declared source, as of one check.

    Attributes:
        databases: hash of each readable database's schema, by database id.
        unreadable: why each unreadable source (by database id, or ``file:line``) could not be read.
        files: hash of the sources file and of each examples/statements file, by role and name.
        seconds: time the check took.
    """

    databases: dict[str, str]
    unreadable: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0


def _fingerprint_spec(spec: SourceSpec) -> tuple[dict[str, str], dict[str, str]]:
    """``({db_id: hash}, {db_id: problem})`` of one declared source."""
    db_id = spec.id or Path(spec.path).stem
    try:
        if spec.type == "schema_json":
            return fingerprint_schema_json(spec)
        if spec.type == "snowflake":
            return {db_id: fingerprint_snowflake(spec, db_id)}, {}
        if spec.type == "url":
            return fingerprint_server(spec)
        reader = fingerprint_sqlite if spec.type == "sqlite" else fingerprint_duckdb
        return {db_id: reader(spec.path)}, {}
    except SourceError as exc:
        return {}, {db_id: str(exc).split(": ", 1)[-1]}
    except Exception as exc:  # noqa: BLE001 - one unreadable file must not stop the others
        return {}, {db_id: f"cannot read {spec.path} ({type(exc).__name__}: {' '.join(str(exc).split())})"}


def fingerprint_sources(config: SourcesConfig, progress: Callable[[str], None] | None = None) -> Fingerprints:
    """Fingerprint every source of ``config`` (schema only) and the files it names.

    A source that cannot be read is recorded in ``unreadable`` and the others are still checked.
    Two sources with the same database id share one combined hash (the build keeps the first).

    Args:
        config: the parsed sources file.
        progress: called with a progress line every :data:`PROGRESS_EVERY` sources.

    Returns:
        The :class:`Fingerprints`.
    """
    started = time.monotonic()
    databases: dict[str, str] = {}
    unreadable: dict[str, str] = {}
    total = len(config.databases)
    for i, spec in enumerate(config.databases, 1):
        found, bad = _fingerprint_spec(spec)
        for db_id, digest in found.items():
            databases[db_id] = _digest([databases[db_id], digest]) if db_id in databases else digest
        unreadable.update(bad)
        if progress and total >= PROGRESS_EVERY and (i % PROGRESS_EVERY == 0 or i == total):
            progress(f"  fingerprinted {i}/{total} sources")
    base = config.origin.resolve().parent if config.origin else Path.cwd()
    files: dict[str, str] = {}
    if config.origin:
        files["sources file"] = _sources_digest(config.origin)
    for role, paths in (("examples", config.examples), ("statements", config.statements)):
        for path in paths:
            try:
                name = str(Path(path).resolve().relative_to(base))
            except ValueError:
                name = str(Path(path).resolve())
            files[f"{role} file {name}"] = _file_digest(Path(path))
    return Fingerprints(databases, unreadable, files, time.monotonic() - started)


def record_path(warehouse: str | Path) -> Path:
    """Where the refresh record of ``warehouse`` lives.

    Args:
        warehouse: the warehouse file.

    Returns:
        ``<warehouse folder>/.dbrouter-dbt/refresh/<warehouse file name>.json``.
    """
    warehouse = Path(warehouse).resolve()
    return dbt_workdir(warehouse) / "refresh" / f"{warehouse.name}.json"


def _identity(warehouse: Path) -> dict[str, int] | None:
    """The warehouse file's size and mtime (ns); None when it does not exist."""
    try:
        st = warehouse.stat()
    except FileNotFoundError:
        return None
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def load_record(warehouse: str | Path) -> dict | None:
    """The last refresh record of ``warehouse``, or None (none yet, unreadable or of another version).

    Args:
        warehouse: the warehouse file.

    Returns:
        The record as written by :func:`write_record`, or None.
    """
    try:
        record = json.loads(record_path(warehouse).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("version") != RECORD_VERSION:
        return None
    return record


def write_record(warehouse: str | Path, fingerprints: Fingerprints, embedder: str) -> Path:
    """Record ``fingerprints`` as the state the knowledge base in ``warehouse`` was built from.

    Call only right after a successful build. The file is replaced atomically (a crash leaves
    the old record, which makes the next refresh rebuild).

    Args:
        warehouse: the warehouse file (its size and mtime are recorded).
        fingerprints: taken before the build read the sources.
        embedder: the embedder the build used.

    Returns:
        The record file.

    Raises:
        RefreshError: the record cannot be written (the next refresh will rebuild again).
    """
    warehouse = Path(warehouse).resolve()
    path = record_path(warehouse)
    record = {"version": RECORD_VERSION, "built_at": time.time(), "embedder": embedder,
              "warehouse": _identity(warehouse), "databases": fingerprints.databases,
              "unreadable": fingerprints.unreadable, "files": fingerprints.files}
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(temp, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise RefreshError(f"the knowledge base in {warehouse} was rebuilt, but the refresh record {path} cannot "
                           f"be written ({exc.strerror or exc}): the next refresh will rebuild again; make "
                           f"{path.parent} writable") from exc
    return path


@dataclass(frozen=True)
class Changes:
    """What differs between the sources now and the last refresh record.

    Attributes:
        added: databases declared and readable now, absent from the record.
        removed: databases in the record that are no longer declared (or readable: see below).
        changed: databases whose schema hash differs (or that were unreadable and are readable again).
        files: the sources / examples / statements files that changed, were added or removed.
        reason: why the whole knowledge base must be rebuilt regardless (no warehouse, no record,
            another embedder, the warehouse written by something else, ``--force``), or None.
        unreadable: sources that cannot be read now (reported; alone they trigger no rebuild).
    """

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    reason: str | None = None
    unreadable: dict[str, str] = field(default_factory=dict)

    @property
    def needs_build(self) -> bool:
        """True when the knowledge base must be rebuilt."""
        return bool(self.reason or self.added or self.removed or self.changed or self.files)

    def lines(self, limit: int = 20) -> list[str]:
        """One line per change (up to ``limit`` per kind), for printing."""
        out = [f"  {self.reason}"] if self.reason else []
        for kind, names in (("changed", self.changed), ("added", self.added), ("removed", self.removed)):
            out += [f"  {kind:8} {name}" for name in names[:limit]]
            if len(names) > limit:
                out.append(f"  ... and {len(names) - limit} more {kind}")
        out += [f"  changed  {name}" for name in self.files]
        return out


def compare(record: dict | None, fingerprints: Fingerprints, warehouse: str | Path, embedder: str,
            force: bool = False) -> Changes:
    """The :class:`Changes` between ``record`` (:func:`load_record`) and ``fingerprints``.

    A source unreadable now counts as no change (a DuckDB file being written elsewhere must not
    drop out of the knowledge base for a refresh period); one recorded as unreadable by the last
    build and readable now counts as changed, since that build left it out.

    Args:
        record: the last record, or None.
        fingerprints: the sources now.
        warehouse: the warehouse file.
        embedder: the embedder this refresh would build with.
        force: rebuild regardless.

    Returns:
        The changes (``needs_build`` says whether to rebuild).
    """
    warehouse = Path(warehouse).resolve()
    now = fingerprints.databases
    reason = None
    if force:
        reason = "--force: rebuilding regardless of changes"
    elif not warehouse.exists():
        reason = f"{warehouse} does not exist yet: first build"
    elif record is None:
        reason = f"no refresh record for {warehouse} ({record_path(warehouse)}): rebuilding once to record the schemas"
    elif record.get("embedder") != embedder:
        reason = f"embedder changed from {record.get('embedder')} to {embedder}"
    elif record.get("warehouse") != _identity(warehouse):
        reason = (f"{warehouse} was written since the last refresh (by `dbrouter build`, `ingest` or "
                  "`statements add`): rebuilding to be sure it matches the sources")
    if record is None:
        return Changes(reason=reason, unreadable=dict(fingerprints.unreadable))
    before: dict[str, str] = record.get("databases") or {}
    was_unreadable: dict[str, str] = record.get("unreadable") or {}
    files_before: dict[str, str] = record.get("files") or {}
    unreadable = fingerprints.unreadable
    return Changes(
        added=sorted(d for d in now if d not in before and d not in was_unreadable),
        removed=sorted(d for d in set(before) | set(was_unreadable) if d not in now and d not in unreadable),
        changed=sorted(d for d in now if (d in before and before[d] != now[d]) or d in was_unreadable),
        files=sorted(name for name in set(files_before) | set(fingerprints.files)
                     if files_before.get(name) != fingerprints.files.get(name)),
        reason=reason, unreadable=dict(unreadable))


def _since(record: dict | None) -> str | None:
    """The local time of the record's build, ``YYYY-MM-DD HH:MM``."""
    if not record or not isinstance(record.get("built_at"), (int, float)):
        return None
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(record["built_at"]))


@dataclass(frozen=True)
class RefreshResult:
    """What one refresh did.

    Attributes:
        changes: what differed from the last record.
        fingerprints: the sources' state as checked.
        since: when the last recorded build happened (local ``YYYY-MM-DD HH:MM``), or None.
        build: the build's result, or None when nothing had to be done.
        seconds: time of the whole refresh.
    """

    changes: Changes
    fingerprints: Fingerprints
    since: str | None
    build: BuildResult | None
    seconds: float

    @property
    def rebuilt(self) -> bool:
        """True when the knowledge base was rebuilt."""
        return self.build is not None


def check(config: SourcesConfig, warehouse: str | Path, embedder: str | None = None, force: bool = False,
          progress: Callable[[str], None] | None = None) -> tuple[Changes, Fingerprints, str | None]:
    """Compare the sources with the last refresh record of ``warehouse`` (reads no rows, runs no dbt).

    Args:
        config: the parsed sources file.
        warehouse: the warehouse file.
        embedder: the embedder to build with (default ``$DBROUTER_EMBEDDER`` or minilm).
        force: report a rebuild regardless.
        progress: progress callback.

    Returns:
        ``(changes, fingerprints, since)``: ``since`` is the last recorded build's time or None.
    """
    from python_udfs.embeddings import resolve_embedder_name

    record = load_record(warehouse)
    fingerprints = fingerprint_sources(config, progress)
    changes = compare(record, fingerprints, warehouse, resolve_embedder_name(embedder), force)
    return changes, fingerprints, _since(record)


def refresh(config: SourcesConfig, warehouse: str | Path, embedder: str | None = None, force: bool = False,
            progress: Callable[[str], None] | None = None,
            on_ingested: Callable[[IngestReport], None] | None = None, quiet: bool = False) -> RefreshResult:
    """Rebuild the knowledge base of ``warehouse`` atomically when a source's schema changed.

    Args:
        config: the parsed sources file.
        warehouse: the warehouse file (created when missing).
        embedder: the embedder (default ``$DBROUTER_EMBEDDER`` or minilm).
        force: rebuild regardless of changes.
        progress: called with progress lines: the check's summary, the changes, the build's steps.
        on_ingested: passed to :func:`dbrouter.build.build_atomically`.
        quiet: capture dbt's output.

    Returns:
        A :class:`RefreshResult`.

    Raises:
        BuildError: the build failed; the previous knowledge base (and record) are unchanged.
        RefreshError: the build succeeded but its record could not be written.
    """
    from dbrouter.build import build_atomically
    from python_udfs.embeddings import resolve_embedder_name

    started = time.monotonic()
    say = progress or (lambda _msg: None)
    name = resolve_embedder_name(embedder)
    changes, fingerprints, since = check(config, warehouse, name, force, say)
    n = len(fingerprints.databases)
    for db_id, problem in sorted(changes.unreadable.items()):
        say(f"  WARNING  {db_id}: cannot be read, not checked: {problem}")
    checked = f"(checked in {fingerprints.seconds:.2f} s)"
    if not changes.needs_build:
        skipped = f" ({len(changes.unreadable)} unreadable, above)" if changes.unreadable else ""
        say(f"no schema change in {n} databases{skipped} since {since} {checked}; nothing to do")
        return RefreshResult(changes, fingerprints, since, None, time.monotonic() - started)
    counted = len(changes.added) + len(changes.removed) + len(changes.changed)
    what = f"{counted} of {n} databases changed" if counted else "the sources file or a file it names changed"
    say(f"{what} since {since} {checked}:" if since and not changes.reason
        else f"rebuilding the knowledge base {checked}:")
    for line in changes.lines():
        say(line)
    say(f"building the knowledge base for {warehouse} on a copy (embedder {name})")
    build = build_atomically(config, warehouse, name, progress=say, on_ingested=on_ingested, quiet=quiet)
    write_record(warehouse, fingerprints, name)
    return RefreshResult(changes, fingerprints, since, build, time.monotonic() - started)
