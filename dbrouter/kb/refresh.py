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
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from dbrouter.errors import RefreshError, SourceError
from dbrouter.kb.build import build_atomically
from dbrouter.kb.dbt_runner import dbt_workdir
from dbrouter.sources.base import SourcesConfig, SourceSpec, default_db_id, digest
from dbrouter.sources.registry import source_type
from python_udfs.embeddings import resolve_embedder_name

_log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from dbrouter.kb.build import BuildResult
    from dbrouter.kb.ingest import IngestReport

RECORD_VERSION = 1
PROGRESS_EVERY = 200
"""Print a progress line every this many sources while fingerprinting."""


def _filedigest(path: Path) -> str:
    """Hash of a file's bytes, or a marker when it is missing or unreadable."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"


def _sourcesdigest(path: Path) -> str:
    """Hash of the sources file's parsed YAML (comments and layout do not count)."""
    try:
        return digest(["sources", yaml.safe_load(path.read_bytes().decode("utf-8"))])
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return _filedigest(path)


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
    db_id = default_db_id(spec)
    try:
        return source_type(spec.type).fingerprint(spec)
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
        for db_id, hashed in found.items():
            databases[db_id] = digest([databases[db_id], hashed]) if db_id in databases else hashed
        unreadable.update(bad)
        if total >= PROGRESS_EVERY and (i % PROGRESS_EVERY == 0 or i == total):
            (progress or _log.info)(f"  fingerprinted {i}/{total} sources")
    base = config.origin.resolve().parent if config.origin else Path.cwd()
    files: dict[str, str] = {}
    if config.origin:
        files["sources file"] = _sourcesdigest(config.origin)
    for role, paths in (("examples", config.examples), ("statements", config.statements)):
        for path in paths:
            try:
                name = str(Path(path).resolve().relative_to(base))
            except ValueError:
                name = str(Path(path).resolve())
            files[f"{role} file {name}"] = _filedigest(Path(path))
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
        on_ingested: passed to :func:`dbrouter.kb.build.build_atomically`.
        quiet: capture dbt's output.

    Returns:
        A :class:`RefreshResult`.

    Raises:
        BuildError: the build failed; the previous knowledge base (and record) are unchanged.
        RefreshError: the build succeeded but its record could not be written.
    """

    started = time.monotonic()
    say = progress or _log.info
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
    say(f"building the knowledge base for {warehouse} (embedder {name})")
    build = build_atomically(config, warehouse, name, progress=say, on_ingested=on_ingested, quiet=quiet,
                             force=force)
    write_record(warehouse, fingerprints, name)
    return RefreshResult(changes, fingerprints, since, build, time.monotonic() - started)
