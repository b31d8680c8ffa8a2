"""Server databases (PostgreSQL, MySQL/MariaDB, any installed SQLAlchemy dialect) as sources.

Metadata comes from SQLAlchemy's inspector (tables, views, columns, types, primary and foreign
keys, comments) instead of per-dialect catalog SQL; sample values from a bounded ``SELECT
DISTINCT … LIMIT`` that SQLAlchemy renders in the dialect's own syntax, inside a read-only
transaction with a statement timeout where the dialect has one, and rolled back.

Secrets: a URL names environment variables as ``${NAME}`` (``postgresql://reader:${PG_PASSWORD}@
db.internal/sales``); they are substituted only when connecting. What is stored in the knowledge
base and printed is the URL as written, with any literal password masked.
"""

from __future__ import annotations

import contextlib
import os
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, ClassVar

from dbrouter.errors import SourceError, SourcesConfigError
from dbrouter.query.results import QueryResult, collect, is_timeout, timed_out
from dbrouter.redaction import env_names, expand_url, literal_secrets, redact, scrub
from dbrouter.sources.base import (
    ColumnInfo,
    DatabaseSnapshot,
    ForeignKey,
    Issue,
    NoDataSource,
    ProgressFn,
    ServerSource,
    SourceSpec,
    TableInfo,
    Target,
    distinct_samples,
    label_of,
    names_setting,
    quote_ident,
    required_text,
    snapshot_digest,
    text_setting,
)

SCHEMA_MARK = " search_path "
"""Separates the URL and the home schema in a server database's ``source_path``."""
SAMPLE_SCAN_ROWS = 10000
COUNT_CAP = 100000  # tables are counted up to this many rows; a larger count is stored as NULL
STATEMENT_TIMEOUT_MS = 10000
CONNECT_TIMEOUT_S = 10
READ_TIMEOUT_S = 120  # a server that stops answering (the statement timeouts are shorter)


def session_guards(dialect: str, timeout_ms: int = STATEMENT_TIMEOUT_MS) -> tuple[str, ...]:
    """Statements that make a session read-only and bound each statement's time, per dialect.

    Args:
        dialect: SQLAlchemy dialect name (``postgresql``, ``mysql``, ``mariadb``).
        timeout_ms: the statement timeout.

    Returns:
        The statements (empty for a dialect without such settings: then only the SQL guard and
        the source's role protect it).
    """
    return {
        "postgresql": ("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", f"SET statement_timeout = {timeout_ms}"),
        "mysql": ("SET SESSION TRANSACTION READ ONLY", f"SET SESSION MAX_EXECUTION_TIME = {timeout_ms}"),
        "mariadb": ("SET SESSION TRANSACTION READ ONLY", f"SET SESSION max_statement_time = {timeout_ms / 1000:g}"),
    }.get(dialect, ())


SYSTEM_SCHEMAS = {"information_schema", "pg_catalog", "pg_toast", "mysql", "performance_schema", "sys"}
# SQLAlchemy dialect -> the sqlglot dialect generated SQL is written and checked in.
SQLGLOT_DIALECTS = {"postgresql": "postgres", "mysql": "mysql", "mariadb": "mysql", "mssql": "tsql",
                    "oracle": "oracle", "sqlite": "sqlite", "duckdb": "duckdb", "snowflake": "snowflake",
                    "redshift": "redshift", "bigquery": "bigquery", "trino": "trino", "clickhouse": "clickhouse"}


def is_system_schema(name: str) -> bool:
    """True for a catalog schema no user table lives in (``pg_catalog``, ``pg_temp_3``, ``sys``...)."""
    low = name.lower()
    return low in SYSTEM_SCHEMAS or low.startswith(("pg_temp_", "pg_toast"))


URL_SETTINGS = ("url", "id", "description", "databases", "schemas", "exclude_schemas", "include_tables",
                "exclude_tables", "per_schema")


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatchcase(name.lower(), p.lower()) for p in patterns)


def connect_url(url: str, env: Mapping[str, str] | None = None, name: str | None = None) -> tuple[Any, list[str]]:
    """The SQLAlchemy URL to connect with, and the secrets no message may show.

    Args:
        url: the URL as written (``${ENV}`` references).
        env: the environment (default ``os.environ``).
        name: the database id for errors (default: the URL, redacted).

    Returns:
        (the parsed ``sqlalchemy.engine.URL``, the secret values: referenced variables, a literal password).

    Raises:
        SourceError: a referenced variable is unset, or the text is not a database URL.
    """
    from sqlalchemy.engine import make_url

    shown = redact(url)
    values: Mapping[str, str] = os.environ if env is None else env
    secrets = [values.get(n, "") for n in env_names(url)]
    try:
        parsed = make_url(expand_url(url, env))
    except SourceError:
        raise
    except Exception as exc:  # noqa: BLE001 - sqlalchemy.exc.ArgumentError and friends
        raise SourceError(name or shown, f"`url` {shown} is not a database URL ({scrub(str(exc), secrets)}); "
                          "write it as dialect+driver://user@host:port/database") from exc
    if parsed.password and not secrets:
        secrets.append(str(parsed.password))
    return parsed, secrets


def read_server(spec: ServerSource, n_samples: int, chars: int,
                progress: Callable[[str], None] | None = None) -> tuple[list[DatabaseSnapshot], list[Issue]]:
    """Snapshot the databases a `url` source names.

    Args:
        spec: the source entry.
        n_samples: distinct sample values per column (0: none).
        chars: each sample value is cut to this length.
        progress: optional progress callback.

    Returns:
        (snapshots, issues about databases that could not be read).

    Raises:
        SourceError: the URL cannot be used at all (unknown dialect or driver, unset variable).
    """
    shown = redact(spec.url)
    base, secrets = connect_url(spec.url, spec.env, spec.id)
    snaps: list[DatabaseSnapshot] = []
    issues: list[Issue] = []
    for database in spec.databases or (base.database,):
        url = base.set(database=database) if database else base
        default_id = spec.id if not spec.databases else (f"{spec.id}_{database}" if spec.id else database)
        db_id = default_id or database or base.host or "server"
        try:
            snaps.extend(_read_database(url, spec, db_id, shown, n_samples, chars, progress))
        except SourceError as exc:
            issues.append(Issue(exc.db_id, None, "error",
                                f"{scrub(str(exc), secrets)} (database left out of the knowledge base)"))
        except Exception as exc:  # noqa: BLE001 - a server that is down must not stop the other sources
            issues.append(Issue(db_id, shown, "error",
                                f"cannot read {shown} ({type(exc).__name__}: {scrub(str(exc), secrets)}); "
                                "database left out of the knowledge base"))
    return snaps, issues


def _connect_args(url: Any) -> dict[str, Any]:
    """Driver arguments that bound connecting in time."""
    from sqlalchemy.engine import make_url

    backend = make_url(url).get_backend_name()
    if backend == "postgresql":
        # a server that stops answering mid-query: unacknowledged data or dead keepalives end the
        # connection (the statement timeout is the server's own and needs a live server)
        return {"connect_timeout": CONNECT_TIMEOUT_S, "keepalives": 1, "keepalives_idle": 30,
                "keepalives_interval": 10, "keepalives_count": 3, "tcp_user_timeout": int(READ_TIMEOUT_S * 1000)}
    if backend in ("mysql", "mariadb"):
        # the handshake is a read: a listener that never speaks fails after the connect timeout (the
        # read timeout is raised to READ_TIMEOUT_S once connected, see make_engine)
        return {"connect_timeout": CONNECT_TIMEOUT_S, "read_timeout": CONNECT_TIMEOUT_S,
                "write_timeout": READ_TIMEOUT_S}
    return {}


_WATCHDOGS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Each open engine's watchdog (closed by :func:`dispose`)."""


def make_engine(url: Any, timeout_ms: int = STATEMENT_TIMEOUT_MS, silence_s: float | None = None):
    """An engine whose every connection is read-only with a statement timeout (see :func:`session_guards`),
    watched by a :class:`~dbrouter.sources.watchdog.Watchdog`: ``silence_s`` without a statement
    finishing ends its connections (close both with :func:`dispose`)."""
    from sqlalchemy import create_engine, event
    from sqlalchemy.pool import NullPool

    from dbrouter.sources.watchdog import watch_engine

    # one connection per read, closed with the engine
    engine = create_engine(url, poolclass=NullPool, connect_args=_connect_args(url))
    guards = session_guards(engine.dialect.name, timeout_ms)
    _WATCHDOGS[engine] = watch_engine(engine, READ_TIMEOUT_S if silence_s is None else silence_s)

    @event.listens_for(engine, "connect")
    def _guard(dbapi_con, _record):  # read-only session and statement timeout, before any query
        if hasattr(dbapi_con, "_read_timeout"):  # pymysql: the handshake had the connect timeout
            dbapi_con._read_timeout = READ_TIMEOUT_S
        cur = dbapi_con.cursor()
        for sql in guards:
            cur.execute(sql)
        cur.close()
        if hasattr(dbapi_con, "commit"):
            dbapi_con.commit()

    return engine


def dispose(engine) -> bool:
    """Close ``engine`` and its watchdog; returns whether the watchdog ended a silent connection."""
    engine.dispose()
    dog = _WATCHDOGS.pop(engine, None)
    if dog is None:
        return False
    dog.close()
    return dog.fired


def _read_database(url: Any, spec: ServerSource, db_id: str, shown: str, n_samples: int, chars: int,
                   progress: Callable[[str], None] | None) -> list[DatabaseSnapshot]:
    from sqlalchemy import exc as sa_exc
    from sqlalchemy import inspect

    try:
        engine = make_engine(url)
    except (sa_exc.NoSuchModuleError, ModuleNotFoundError, ImportError) as exc:
        raise SourceError(db_id, f"no SQLAlchemy dialect/driver for {shown} ({exc}): install it, e.g. "
                          "`pip install psycopg` (PostgreSQL) or `pip install pymysql` (MySQL/MariaDB)") from exc
    try:
        with engine.connect() as con:
            insp = inspect(con)
            default, database = insp.default_schema_name, url.database
            known = [k for k in insp.get_schema_names() if not is_system_schema(k)]
            for s in spec.schemas:
                if s not in known:
                    raise SourceError(db_id, f"schema {s!r} not found in {shown} (it has: {', '.join(sorted(known))})")
            # every non-system schema unless `schemas` names some; filters narrow either
            schemas = [s for s in (list(spec.schemas) or sorted(known)) if not _matches(s, spec.exclude_schemas)]
            where = source_location(spec.url, database if spec.databases else None)
            if spec.per_schema:
                out = []
                for s in schemas:
                    sid = f"{db_id}_{s}" if spec.id or spec.databases else s
                    snap = _snapshot(con, insp, [s], s, sid, where, spec, n_samples, chars)
                    if snap.tables:  # a per-schema source keeps only the schemas that hold tables
                        out.append(snap)
                if not out:
                    raise SourceError(db_id, _no_tables(shown, database, schemas, known, spec))
                return out
            home = _home_schema(insp, schemas, default)
            snap = _snapshot(con, insp, schemas, home, db_id, where, spec, n_samples, chars)
            if not snap.tables:
                raise SourceError(db_id, _no_tables(shown, database, schemas, known, spec))
            return [snap]
    except Exception:
        if getattr(_WATCHDOGS.get(engine), "fired", False):
            raise SourceError(db_id, f"{shown} stopped answering: nothing came back for {READ_TIMEOUT_S:.0f} s, "
                              "so the connection was closed (check the server and the network)") from None
        raise
    finally:
        dispose(engine)


def _home_schema(insp, schemas: list[str], default: str | None) -> str | None:
    """The schema whose tables keep bare names (the search path of ``ask``): the only schema read,
    else the default schema when it holds tables, else the only schema that does."""
    if len(schemas) == 1:
        return schemas[0]
    if default in schemas and (insp.get_table_names(schema=default) or insp.get_view_names(schema=default)):
        return default
    holding = [s for s in schemas if insp.get_table_names(schema=s) or insp.get_view_names(schema=s)]
    return holding[0] if len(holding) == 1 else default


def _no_tables(shown: str, database: str | None, schemas: list[str], known: list[str], spec: ServerSource) -> str:
    filters = [f"{k}: {', '.join(v)}" for k, v in (("exclude_schemas", spec.exclude_schemas),
                                                   ("include_tables", spec.include_tables),
                                                   ("exclude_tables", spec.exclude_tables)) if v]
    return (f"no table or view readable in {shown}{f' (database {database})' if database else ''}: read schemas "
            f"{', '.join(schemas) or '(none)'}; the database has schemas {', '.join(sorted(known)) or '(none)'}"
            + (f"; filters {'; '.join(filters)}" if filters else "")
            + ": name the schemas with `schemas:`, loosen the filters, or grant the role USAGE/SELECT")


def source_location(url: str, database: str | None = None) -> str:
    """The ``source_path`` of a server database in ``kb_databases``: the URL as written (``${ENV}``
    references kept, a literal password masked) with ``database`` in place of the URL's own.

    Args:
        url: the ``url`` setting.
        database: a database of ``databases:`` (None: the URL's).

    Returns:
        A URL :func:`dbrouter.sources.url.UrlSource.target` connects to again.
    """
    return redact(url, database)


def _qualify(schema: str | None, table: str, home: str | None) -> str:
    return table if schema in (None, home) else f"{schema}.{table}"


def _snapshot(con, insp, schemas: list[str], home: str | None, db_id: str, where: str, spec: ServerSource,
              n_samples: int, chars: int) -> DatabaseSnapshot:
    location = f"{where}{SCHEMA_MARK}{home}" if home else where
    snap = DatabaseSnapshot(db_id, "url", location, spec.description)
    for schema in schemas:
        views = set(insp.get_view_names(schema=schema))
        for name in sorted(set(insp.get_table_names(schema=schema)) | views):
            qualified = _qualify(schema, name, home)
            if spec.include_tables and not (_matches(name, spec.include_tables) or
                                            _matches(f"{schema}.{name}", spec.include_tables)):
                continue
            if _matches(name, spec.exclude_tables) or _matches(f"{schema}.{name}", spec.exclude_tables):
                continue
            try:
                table = _table(con, insp, schema, name, qualified, name in views, n_samples, chars, snap)
            except Exception as exc:  # noqa: BLE001 - one unreadable table (permissions) must not stop the rest
                con.rollback()
                snap.issues.append(Issue(db_id, qualified, "warning",
                                         f"cannot read table ({type(exc).__name__}: {' '.join(str(exc).split())[:300]}); "
                                         "left out (grant the ingest role SELECT on it)"))
                continue
            snap.tables.append(table)
            for fk in _foreign_keys(insp, schema, name, qualified, home, snap):
                snap.foreign_keys.append(fk)
    con.rollback()  # read-only anyway: nothing is ever committed
    return snap


def _type_name(col: dict) -> str:
    try:
        return str(col["type"]).lower()
    except Exception:  # noqa: BLE001 - a type the dialect cannot render (NullType, custom types)
        return type(col["type"]).__name__.lower()


def _table(con, insp, schema: str, name: str, qualified: str, is_view: bool, n_samples: int, chars: int,
           snap: DatabaseSnapshot) -> TableInfo:
    from sqlalchemy import MetaData, Table, func, literal_column, select

    try:
        comment = insp.get_table_comment(name, schema=schema).get("text")
    except NotImplementedError:
        comment = None
    table = TableInfo(qualified, label_of(name), description=comment or None, kind="view" if is_view else "table")
    pk = set((insp.get_pk_constraint(name, schema=schema) or {}).get("constrained_columns") or [])
    rel = Table(name, MetaData(), schema=schema)
    capped = select(literal_column("1")).select_from(rel).limit(COUNT_CAP).subquery()
    count = con.execute(select(func.count()).select_from(capped)).scalar()
    table.row_count = count if count < COUNT_CAP else None
    for i, col in enumerate(insp.get_columns(name, schema=schema), 1):
        info = ColumnInfo(col["name"], label_of(col["name"]), i, _type_name(col), col["name"] in pk,
                          col.get("comment") or None)
        if n_samples > 0 and count:
            try:
                query = sample_query(name, schema, col["name"], n_samples, order_by=sorted(pk) if count else ())
                info.samples = distinct_samples(con.execute(query), n_samples, chars)
            except Exception as exc:  # noqa: BLE001 - e.g. a type without equality (json) in DISTINCT
                con.rollback()
                snap.issues.append(Issue(snap.db_id, f"{qualified}.{col['name']}", "warning",
                                         f"no samples: {' '.join(str(exc).split())[:200]}"))
        table.columns.append(info)
    return table


def sample_query(table: str, schema: str | None, column_name: str, n: int, order_by: Iterable[str] = ()):
    """The bounded, deterministic sample query: the ``n * 3`` smallest distinct non-NULL values of a
    column among its first ``SAMPLE_SCAN_ROWS`` rows, as a SQLAlchemy statement (each dialect renders
    its own quoting and LIMIT/TOP/FETCH).

    The values are ordered, so the same data gives the same samples whatever plan the server picks
    (a bare ``ANALYZE`` must not change the knowledge base). Which rows are scanned is fixed by the
    primary key when ``order_by`` names it; a table without one that has more than
    ``SAMPLE_SCAN_ROWS`` rows may still be scanned in plan order.

    Args:
        table: table name; schema: its schema (None: the default); column_name: the column.
        n: how many values are wanted.
        order_by: primary-key columns fixing which rows the scan reads.

    Returns:
        A ``Select``.
    """
    from sqlalchemy import MetaData, Table, column, select

    rel = Table(table, MetaData(), schema=schema)
    col = column(column_name)
    inner = select(col).select_from(rel).where(col.is_not(None))
    keys = [column(k) for k in order_by]
    if keys:
        inner = inner.order_by(*keys)
    inner_q = inner.limit(SAMPLE_SCAN_ROWS).subquery()
    value = inner_q.c[0]
    return select(value).distinct().order_by(value).limit(n * 3)


def _foreign_keys(insp, schema: str, name: str, qualified: str, home: str | None,
                  snap: DatabaseSnapshot) -> list[ForeignKey]:
    out = []
    for fk in insp.get_foreign_keys(name, schema=schema):
        ref = _qualify(fk.get("referred_schema") or schema, fk["referred_table"], home)
        for c, rc in zip(fk["constrained_columns"], fk["referred_columns"]):
            out.append(ForeignKey(qualified, c, ref, rc))
    return out


def _url_spec(entry: dict[str, Any], where: str) -> SourceSpec:
    """A ``type: url`` entry (a server database through SQLAlchemy); a literal password is refused."""
    unknown = sorted(set(entry) - set(URL_SETTINGS) - {"type"})
    if unknown:
        raise SourcesConfigError(f"{where}: unknown setting(s) {', '.join(unknown)} for type url; "
                                 f"known: {', '.join(URL_SETTINGS)}")
    url = required_text(entry, "url", where)
    secrets = literal_secrets(url)
    if secrets:
        raise SourcesConfigError(f"{where}: the `url` holds a secret ({', '.join(secrets)}): never write secrets in "
                                 "the sources file; put each in an environment variable and write "
                                 "`user:${PG_PASSWORD}@host` (or `?password=${PG_PASSWORD}`)")
    per_schema = entry.get("per_schema", False)
    if not isinstance(per_schema, bool):
        raise SourcesConfigError(f"{where}: `per_schema` must be true or false, got {per_schema!r}")
    server = ServerSource(url=url, id=text_setting(entry, "id", where), databases=names_setting(entry, "databases", where),
                          schemas=names_setting(entry, "schemas", where),
                          exclude_schemas=names_setting(entry, "exclude_schemas", where),
                          include_tables=names_setting(entry, "include_tables", where),
                          exclude_tables=names_setting(entry, "exclude_tables", where), per_schema=per_schema,
                          description=text_setting(entry, "description", where))
    scheme = url.split("://", 1)[0]
    return SourceSpec("url", Path(f"url:{scheme}"), server.id, server.description, (), server=server)



def fingerprint_server(spec: SourceSpec) -> tuple[dict[str, str], dict[str, str]]:
    """Hashes of the databases a `url` source names: tables/views, comments, columns, types, keys
    (no rows read: sampling off).

    Args:
        spec: the declared source.

    Returns:
        ``({db_id: hash}, {db_id: problem})``.
    """
    assert spec.server is not None, "a url SourceSpec carries its ServerSource"
    snaps, issues = read_server(spec.server, 0, 0)
    found = {snap.db_id: snapshot_digest("url", snap) for snap in snaps}
    return found, {i.db_id: i.message for i in issues if i.severity == "error"}



class UrlSource:
    """``type: url``: databases of a server through any SQLAlchemy dialect (see
    :class:`dbrouter.sources.base.SourceType`)."""

    name: ClassVar[str] = "url"

    def parse(self, entry: dict[str, Any], base: Path, where: str) -> list[SourceSpec]:
        """The :data:`URL_SETTINGS`; a literal password in the URL is refused."""
        return [_url_spec(entry, where)]

    def read(self, spec: SourceSpec, n_samples: int, chars: int,
             progress: ProgressFn | None = None) -> tuple[list[DatabaseSnapshot], list[Issue]]:
        """Every database the entry names (see :func:`read_server`)."""
        assert spec.server is not None, "a url SourceSpec carries its ServerSource"
        return read_server(spec.server, n_samples, chars, progress)

    def fingerprint(self, spec: SourceSpec) -> tuple[dict[str, str], dict[str, str]]:
        """Catalog hashes through the inspector (see :func:`fingerprint_server`)."""
        return fingerprint_server(spec)

    def target(self, db_id: str, source_path: str) -> Target:
        """The server database itself: SQL runs through :meth:`run`.

        Raises:
            NoDataSource: ``source_path`` is not a URL (a KB built before server targets: build again).
        """
        url, _, schema = source_path.partition(SCHEMA_MARK)
        if "://" not in url:
            raise NoDataSource(f"database {db_id!r}: its source {source_path!r} is not a URL (a knowledge base built "
                               "by an older dbrouter): run `dbrouter build` again")
        backend = url.split("://", 1)[0].split("+", 1)[0].lower()
        return Target(db_id, self.name, url=url, schema=schema or None,
                      sql_dialect=SQLGLOT_DIALECTS.get(backend, backend))

    def run(self, target: Target, sql: str, timeout: float, row_cap: int) -> QueryResult:
        """See :func:`run_url`."""
        return run_url(target, sql, timeout, row_cap)


# ---------------------------------------------------------------------------------------------
# running SQL (dbrouter.execute.runners.execute checks it first)

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
        engine = make_engine(url, timeout_ms=max(1, int(timeout * 1000)), silence_s=timeout + CONNECT_TIMEOUT_S)
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
        collect(cursor, result, row_cap)
    except Exception as exc:  # noqa: BLE001 - the driver's own error types (psycopg, pymysql, ...)
        text = scrub(str(exc), secrets)
        if is_timeout(text):
            timed_out(result, timeout)
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
there: three took this process past 2.7 GB); the cell is then cut to
:data:`~dbrouter.query.results.CELL_CHARS_KEPT`."""
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
