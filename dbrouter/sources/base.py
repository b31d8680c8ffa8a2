"""What every source type shares: the protocol, the declared-source types, the snapshot, sampling.

A *source type* (``sqlite``, ``duckdb``, ``schema_json``, ``url``, ``snowflake``: one module each in
this package, listed once in :mod:`dbrouter.sources.registry`) knows four things about its
databases, behind :class:`SourceType`:

* ``parse``: turn one ``databases:`` entry of the sources file into :class:`SourceSpec` values;
* ``read``: introspect them into :class:`DatabaseSnapshot` values (tables, columns, keys,
  descriptions, bounded samples), every connection read-only;
* ``fingerprint``: hash each database's schema (catalog only, no rows) for ``dbrouter refresh``;
* ``target``: how SQL runs on one of its databases (:class:`Target`), or why it cannot
  (:class:`NoDataSource`).

Problems that concern one object (a table without columns, a foreign key to a missing table)
are recorded as :class:`Issue` rows instead of failing the whole database. Adding a source type
(BigQuery, Parquet, ...) is one module with one class and one line in the registry.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from dbrouter import settings
from dbrouter.errors import NoDataSource, SourcesConfigError
from dbrouter.query.results import QueryResult

SAMPLE_SCAN_ROWS = 10000
INGEST_STATEMENT_SECONDS = 30.0
"""One count or sample query of a file source (``$DBROUTER_INGEST_STATEMENT_TIMEOUT``): a view that
never ends (an unbounded recursive CTE) is stopped and keeps its columns, without count or samples."""
INGEST_DATABASE_SECONDS = 300.0
"""All count and sample queries of one file database (``$DBROUTER_INGEST_DATABASE_TIMEOUT``); the
tables after it keep their columns only."""


class QueryClock:
    """The time bounds of one database's ingest queries (a statement's and the database's).

    Run bounded queries through :meth:`fetcher`; the engine stops one when :meth:`over` turns true
    (SQLite: a progress handler; DuckDB: :meth:`watch` interrupts it).
    """

    def __init__(self) -> None:
        self.statement_seconds = settings.seconds("DBROUTER_INGEST_STATEMENT_TIMEOUT", SourcesConfigError)
        self.database_seconds = settings.seconds("DBROUTER_INGEST_DATABASE_TIMEOUT", SourcesConfigError)
        self.database_deadline = time.monotonic() + self.database_seconds
        self.deadline = float("inf")
        self.fired = False
        """The last bounded query was stopped for time (its error is the engine's interruption)."""

    def start(self) -> None:
        """A bounded query starts now."""
        self.fired = False
        self.deadline = min(time.monotonic() + self.statement_seconds, self.database_deadline)

    def stop(self) -> None:
        """The bounded query ended."""
        self.deadline = float("inf")

    def over(self) -> bool:
        """Whether the running query is over its time (then :attr:`fired` is set and the clock stops)."""
        if time.monotonic() > self.deadline:
            self.fired, self.deadline = True, float("inf")
            return True
        return False

    def exhausted(self) -> bool:
        """The database's time is spent."""
        return time.monotonic() > self.database_deadline

    def why(self) -> str:
        """Why a query was stopped, for an issue."""
        if self.exhausted():
            return (f"stopped: reading this database's counts and samples took over {self.database_seconds:g} s "
                    "(DBROUTER_INGEST_DATABASE_TIMEOUT)")
        return (f"stopped after {self.statement_seconds:g} s (DBROUTER_INGEST_STATEMENT_TIMEOUT): a view that "
                "never ends, or a table too large to scan")

    def fetcher(self, con) -> Callable[[str], list[tuple]]:
        """``fetch(sql)``: run one bounded query on ``con`` and return its rows."""

        def fetch(sql: str) -> list[tuple]:
            self.start()
            try:
                return con.execute(sql).fetchall()
            finally:
                self.stop()

        return fetch

    def watch(self, interrupt: Callable[[], None], every: float = 0.1):
        """A daemon thread calling ``interrupt`` when a query is over its time; ``.set()`` the returned
        event to end it."""
        done = threading.Event()

        def _loop() -> None:
            while not done.wait(every):
                if self.over():
                    interrupt()

        threading.Thread(target=_loop, daemon=True, name="dbrouter-ingest-clock").start()
        return done


@dataclass(frozen=True)
class ServerSource:
    """One `type: url` entry of the sources file.

    Attributes:
        url: SQLAlchemy URL as written, possibly with ``${ENV}`` references.
        id: database id (default: the URL's database name); with several ``databases`` or
            ``per_schema``, the ids are ``<id>_<name>`` (or the names when ``id`` is unset).
        databases: read these databases of the server instead of the URL's one.
        schemas: schemas to read (default: the connection's default schema).
        exclude_schemas: schemas left out (glob patterns).
        include_tables / exclude_tables: glob patterns over ``table`` or ``schema.table``.
        per_schema: one knowledge-base database per schema instead of one per database.
        description: description of the database(s).
    """

    url: str
    id: str | None = None
    databases: tuple[str, ...] = ()
    schemas: tuple[str, ...] = ()
    exclude_schemas: tuple[str, ...] = ()
    include_tables: tuple[str, ...] = ()
    exclude_tables: tuple[str, ...] = ()
    per_schema: bool = False
    description: str | None = None
    env: dict[str, str] | None = field(default=None, compare=False, repr=False)  # tests: instead of os.environ


@dataclass(frozen=True)
class SourceSpec:
    """One declared source file (a database, or for schema_json possibly several)."""

    type: str
    path: Path
    id: str | None = None
    description: str | None = None
    exclude_tables: tuple[str, ...] = ()
    snowflake: tuple[tuple[str, Any], ...] = ()  # type snowflake: its settings (no secrets)
    server: ServerSource | None = None  # type url: the server source


@dataclass
class SourcesConfig:
    """The parsed sources file."""

    databases: list[SourceSpec]
    examples: list[Path] = field(default_factory=list)
    statements: list[Path] = field(default_factory=list)
    sample_values: int = 5
    sample_value_chars: int = 60
    origin: Path | None = None


@dataclass(frozen=True)
class Target:
    """A database SQL can run on.

    Attributes:
        db_id: the database.
        kind: its source type (``sqlite``, ``duckdb``, ``url``, ``snowflake``).
        path: the file of a ``sqlite``/``duckdb`` source.
        url: a ``url`` source: the SQLAlchemy URL as written (``${ENV}`` references unexpanded, so
            nothing secret is held); a ``snowflake`` source: ``snowflake://account/database?...``.
        schema: the schema unqualified table names resolve in (the search path), or None.
        sql_dialect: the sqlglot dialect of SQL written for it (default: ``kind``).
        tables: the database's tables as the knowledge base names them (lower case, ``schema.table``
            outside the home schema; shard groups as ``events_*``): SQL on a server database may
            read these only, not the rest of the server its role can see. None: not checked.
    """

    db_id: str
    kind: str
    path: Path | None = None
    url: str | None = None
    schema: str | None = None
    sql_dialect: str | None = None
    tables: frozenset[str] | None = None

    @property
    def dialect(self) -> str:
        """The sqlglot dialect of SQL written for this target."""
        return self.sql_dialect or self.kind


def file_target(db_id: str, kind: str, source_path: str) -> Target:
    """The target of a file source: the file itself, while it exists.

    Raises:
        NoDataSource: the file is gone.
    """
    file = Path(source_path)
    if not file.is_file():
        raise NoDataSource(f"database {db_id!r}: its {kind} file {file} no longer exists: restore it, or fix its "
                           "path in the sources file and build again", dialect=kind)
    return Target(db_id, kind, file)


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


ProgressFn = Callable[[str], None]


class SourceType(Protocol):
    """One kind of source, e.g. SQLite files; implementations live one per module in this package.

    Attributes:
        name: the ``type:`` of its sources-file entries.
    """

    name: ClassVar[str]

    def parse(self, entry: dict[str, Any], base: Path, where: str) -> list[SourceSpec]:
        """Validate one ``databases:`` entry of this type.

        Args:
            entry: the YAML mapping; base: the sources file's folder (relative paths);
            where: the entry's place, for messages.

        Returns:
            The declared sources (a ``glob`` gives several).

        Raises:
            SourcesConfigError: the entry is malformed or holds a secret; the message names it.
        """
        ...

    def read(self, spec: SourceSpec, n_samples: int, chars: int,
             progress: ProgressFn | None = None) -> tuple[list[DatabaseSnapshot], list[Issue]]:
        """Introspect the databases of ``spec`` through read-only connections.

        Args:
            spec: the declared source; n_samples: distinct sample values per column (0: none);
            chars: each value cut to this length; progress: optional progress callback.

        Returns:
            (snapshots, issues about databases of this source that were left out).

        Raises:
            SourceError: the source cannot be read at all.
        """
        ...

    def fingerprint(self, spec: SourceSpec) -> tuple[dict[str, str], dict[str, str]]:
        """Hash each database's schema (catalog only: row changes do not count).

        Args:
            spec: the declared source.

        Returns:
            ``({db_id: sha256}, {db_id or file:line: why it could not be read})``.

        Raises:
            SourceError: the source cannot be read at all.
        """
        ...

    def target(self, db_id: str, source_path: str) -> Target:
        """Where SQL for one of its databases runs.

        Args:
            db_id: the database; source_path: ``kb_databases.source_path``.

        Returns:
            The :class:`Target`.

        Raises:
            NoDataSource: SQL cannot run on this source (the message says what to do).
        """
        ...

    def run(self, target: Target, sql: str, timeout: float, row_cap: int) -> QueryResult:
        """Run one statement, already checked read-only (:func:`dbrouter.execute.runners.execute`),
        on a target of this type, on a read-only connection.

        Args:
            target: from :meth:`target`; sql: the statement; timeout: seconds before it is stopped;
            row_cap: rows kept (more are counted).

        Returns:
            The :class:`~dbrouter.query.results.QueryResult`; a database error, a timeout, a
            missing file or an unreachable server is in its ``error``.

        Raises:
            NoDataSource: SQL does not run on this type (its :meth:`target` raises it first).
        """
        ...


class FileSource:
    """A source type whose databases are single files (``path`` or ``glob``, one database a file),
    on which SQL runs directly. A subclass names its type and gives the two readers and the runner.

    Attributes:
        name: the ``type:`` of its sources-file entries.
    """

    name: ClassVar[str]

    def read_file(self, spec: SourceSpec, db_id: str, n_samples: int, chars: int) -> DatabaseSnapshot:
        """Introspect one file (read-only)."""
        raise NotImplementedError

    def fingerprint_file(self, path: Path) -> str:
        """Hash one file's schema (catalog only)."""
        raise NotImplementedError

    def run_file(self, path: Path, sql: str, timeout: float, row_cap: int) -> QueryResult:
        """Run one checked statement on the file, opened read-only."""
        raise NotImplementedError

    def parse(self, entry: dict[str, Any], base: Path, where: str) -> list[SourceSpec]:
        """``path`` or ``glob``, ``id``, ``description``, ``exclude_tables``."""
        return parse_file_entry(self.name, entry, base, where)

    def read(self, spec: SourceSpec, n_samples: int, chars: int,
             progress: ProgressFn | None = None) -> tuple[list[DatabaseSnapshot], list[Issue]]:
        """The file's tables and views."""
        return [self.read_file(spec, default_db_id(spec), n_samples, chars)], []

    def fingerprint(self, spec: SourceSpec) -> tuple[dict[str, str], dict[str, str]]:
        """The catalog's hash."""
        return {default_db_id(spec): self.fingerprint_file(Path(spec.path))}, {}

    def target(self, db_id: str, source_path: str) -> Target:
        """SQL runs on the file itself, opened read-only.

        Raises:
            NoDataSource: the file no longer exists.
        """
        return file_target(db_id, self.name, source_path)

    def run(self, target: Target, sql: str, timeout: float, row_cap: int) -> QueryResult:
        """On the target's file (:meth:`run_file`)."""
        assert target.path is not None, f"a {self.name} target carries its file"
        return self.run_file(target.path, sql, timeout, row_cap)


def default_db_id(spec: SourceSpec) -> str:
    """A file source's database id: its ``id``, else the file's stem."""
    return spec.id or Path(spec.path).stem


def text_setting(entry: dict[str, Any], key: str, where: str, required: bool = False) -> str | None:
    """``entry[key]`` as a non-empty string, None when absent (and not required).

    Raises:
        SourcesConfigError: present but not a non-empty string, or required and absent.
    """
    value = entry.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise SourcesConfigError(f"{where}: `{key}` must be a non-empty string, got {value!r}")
    return value


def required_text(entry: dict[str, Any], key: str, where: str) -> str:
    """``entry[key]``, which must be a non-empty string.

    Raises:
        SourcesConfigError: absent or not a non-empty string.
    """
    value = text_setting(entry, key, where, required=True)
    assert value is not None, "text_setting raises for a missing required value"
    return value


def names_setting(entry: dict[str, Any], key: str, where: str, what: str = "names") -> tuple[str, ...]:
    """``entry[key]`` as a tuple of non-empty strings (absent: empty).

    Raises:
        SourcesConfigError: not a list of non-empty strings.
    """
    value = entry.get(key) or []
    if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
        raise SourcesConfigError(f"{where}: `{key}` must be a list of {what}, got {value!r}")
    return tuple(value)


def parse_file_entry(kind: str, entry: dict[str, Any], base: Path, where: str) -> list[SourceSpec]:
    """A file source entry (sqlite, duckdb, schema_json): ``path`` or ``glob``, ``id``,
    ``description``, ``exclude_tables``.

    Args:
        kind: the source type; entry: the YAML mapping; base: the sources file's folder;
        where: the entry's place, for messages.

    Returns:
        One :class:`SourceSpec` per file.

    Raises:
        SourcesConfigError: both or neither of path/glob, a glob matching nothing, a bad setting.
    """
    import glob as globlib

    unknown = sorted(set(entry) - {"type", "path", "glob", "id", "description", "exclude_tables"})
    if unknown:
        raise SourcesConfigError(f"{where}: unknown setting(s) {', '.join(unknown)} for type {kind}; "
                                 "known: path, glob, id, description, exclude_tables")
    if ("path" in entry) == ("glob" in entry):
        raise SourcesConfigError(f"{where}: give exactly one of `path` or `glob`")
    description = text_setting(entry, "description", where)
    db_id = text_setting(entry, "id", where)
    exclude = names_setting(entry, "exclude_tables", where, "table names")
    if "glob" in entry:
        pattern = required_text(entry, "glob", where)
        if db_id:
            raise SourcesConfigError(f"{where}: `id` cannot be used with `glob` (ids come from file names)")
        paths = sorted(Path(p) for p in globlib.glob(str(base / pattern)))
        if not paths:
            raise SourcesConfigError(f"{where}: glob {pattern!r} matched no file under {base}")
        return [SourceSpec(kind, p, None, description, exclude) for p in paths]
    return [SourceSpec(kind, base / required_text(entry, "path", where), db_id, description, exclude)]


def digest(value: Any) -> str:
    """sha256 of ``value`` as canonical JSON (sorted keys, no whitespace)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def snapshot_digest(source_type: str, snap) -> str:
    """Hash of a snapshot's schema as a catalog reader sees it (no rows, no samples).

    Args:
        source_type: the source's type, part of the hash.
        snap: a :class:`dbrouter.sources.base.DatabaseSnapshot` read without samples.

    Returns:
        A hex sha256 of the tables and views (kind, description), their columns (type, key flag,
        description) and the foreign keys.
    """
    tables = [[t.name, t.kind, t.description,
               [[c.name, c.data_type, c.is_primary_key, c.description] for c in t.columns]] for t in snap.tables]
    keys = sorted([fk.table, fk.column, fk.ref_table, fk.ref_column or ""] for fk in snap.foreign_keys)
    return digest([source_type, tables, keys])


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
        if (fk.table.lower(), fk.column.lower()) not in cols or (fk.ref_table.lower(), (fk.ref_column or "").lower()) not in cols:
            snap.issues.append(Issue(snap.db_id, name, "warning",
                                     "foreign key refers to a missing column; edge skipped"))
        else:
            good.append(fk)
    snap.foreign_keys = good


def utf8_error(exc: UnicodeDecodeError) -> str:
    """``byte 0xe9 at offset 12``: where a text is not UTF-8."""
    return f"byte {exc.object[exc.start]:#04x} at offset {exc.start}"


