"""Read a Snowflake database as a routing source (sources.yml ``type: snowflake``).

Only metadata queries and bounded SELECTs are issued: ``INFORMATION_SCHEMA.TABLES`` / ``COLUMNS``
(names, types, comments, row counts), ``SHOW PRIMARY KEYS`` / ``SHOW IMPORTED KEYS`` per schema,
and for each column at most ``sample_values`` distinct values from a ``LIMIT``-ed scan. Give the
source a role that can only read (``USAGE`` on the database and schemas, ``SELECT`` on the
tables): dbrouter never writes to a source, and a read-only role makes that a guarantee.

Connection settings: the entry's ``account``, ``user``, ``role``, ``warehouse`` (and ``host``,
``port``, ``protocol`` for another endpoint) or else the ``SNOWFLAKE_*`` environment variables;
the secret only ever from an environment variable, named by ``password_env`` or
``private_key_path_env`` (+ ``private_key_passphrase_env``), default ``SNOWFLAKE_PASSWORD`` /
``SNOWFLAKE_PRIVATE_KEY_PATH``. Secrets are not stored in the snapshot, the KB or any message.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

from dbrouter.errors import SnowflakeConfigError, SourceError, SourcesConfigError
from dbrouter.query.results import QueryResult
from dbrouter.sources.base import (
    ColumnInfo,
    DatabaseSnapshot,
    ForeignKey,
    Issue,
    NoDataSource,
    ProgressFn,
    SourceSpec,
    TableInfo,
    Target,
    label_of,
    quote_ident,
    sample_values,
    snapshot_digest,
    text_setting,
)

PLAIN_SETTINGS = ("account", "user", "role", "warehouse", "host", "port", "protocol")
# Settings of a `type: snowflake` entry (no secrets: those come from the environment variables
# named by the *_env settings; see dbrouter.sources.snowflake).
SNOWFLAKE_SETTINGS = ("database", "schemas", "account", "user", "role", "warehouse", "host", "port", "protocol",
                      "password_env", "private_key_path_env", "private_key_passphrase_env")


SNOWFLAKE_SECRETS = ("password", "private_key", "private_key_path", "private_key_passphrase", "token")


def connector():
    """The ``snowflake.connector`` module.

    Raises:
        SnowflakeConfigError: snowflake-connector-python is not installed.
    """
    try:
        import snowflake.connector
    except ImportError as exc:
        raise SnowflakeConfigError("snowflake-connector-python is not installed: run `make setup` "
                                   "(or pip install -e '.[snowflake]')") from exc
    return snowflake.connector


def connect_kwargs(spec: SourceSpec, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Arguments of ``snowflake.connector.connect`` for a Snowflake source.

    Args:
        spec: the source (its ``snowflake`` settings).
        env: the environment (default ``os.environ``).

    Returns:
        The keyword arguments (the secret read from the named environment variable).

    Raises:
        SourceError: account, user or the secret is missing; names the setting or variable only.
    """
    env = dict(os.environ if env is None else env)
    opts = dict(spec.snowflake)
    db_id = spec.id or opts.get("database", "?")
    kwargs: dict[str, Any] = {}
    for key in PLAIN_SETTINGS:
        value = opts.get(key) or env.get(f"SNOWFLAKE_{key.upper()}")
        if value:
            kwargs[key] = int(value) if key == "port" else value
    for key in ("account", "user"):
        if key not in kwargs:
            raise SourceError(db_id, f"no Snowflake {key}: set `{key}` on the source or $SNOWFLAKE_{key.upper()}")
    password_env = opts.get("password_env") or "SNOWFLAKE_PASSWORD"
    key_env = opts.get("private_key_path_env") or "SNOWFLAKE_PRIVATE_KEY_PATH"
    if opts.get("private_key_path_env") or (not env.get(password_env) and env.get(key_env)):
        if not env.get(key_env):
            raise SourceError(db_id, f"environment variable {key_env} (the private key file) is not set")
        kwargs["private_key_file"] = env[key_env]
        passphrase_env = opts.get("private_key_passphrase_env") or "SNOWFLAKE_PRIVATE_KEY_PASSPHRASE"
        if env.get(passphrase_env):
            kwargs["private_key_file_pwd"] = env[passphrase_env]
    elif env.get(password_env):
        kwargs["password"] = env[password_env]
    else:
        raise SourceError(db_id, f"environment variable {password_env} (or {key_env} for key-pair auth) is not set")
    kwargs["database"] = opts["database"]
    return kwargs


def _rows(cur, sql: str) -> list[dict[str, Any]]:
    """Rows of ``sql`` as dicts keyed by lower-cased column name."""
    cur.execute(sql)
    names = [d[0].lower() for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def read_snowflake(spec: SourceSpec, db_id: str, n_samples: int, chars: int) -> DatabaseSnapshot:
    """Introspect a Snowflake database through snowflake-connector-python (read-only queries).

    Tables are named ``TABLE`` when the source reads one schema and ``SCHEMA.TABLE`` otherwise.

    Args:
        spec: the source (``snowflake`` settings: database, schemas, connection).
        db_id: the database id in the KB.
        n_samples: distinct sample values per column (0: none).
        chars: each sample value is cut to this many characters.

    Returns:
        The snapshot; keys Snowflake did not report sensibly are issues, not errors.

    Raises:
        SourceError: no connection, or the database cannot be listed.
    """
    opts = dict(spec.snowflake)
    database = opts["database"]
    try:
        conn = connector().connect(**connect_kwargs(spec))
    except SnowflakeConfigError as exc:
        raise SourceError(db_id, str(exc)) from exc
    except Exception as exc:  # noqa: BLE001 - the connector raises many classes; never echo the settings
        raise SourceError(db_id, f"cannot connect to Snowflake database {database}: {type(exc).__name__}: "
                                 f"{' '.join(str(exc).split())[:300]}") from exc
    snap = DatabaseSnapshot(db_id, "snowflake", f"snowflake://{opts.get('account') or '$SNOWFLAKE_ACCOUNT'}/{database}",
                            spec.description)
    db = quote_ident(database)
    try:
        cur = conn.cursor()
        wanted = [s.upper() for s in opts.get("schemas") or []]
        where = "table_schema <> 'INFORMATION_SCHEMA'"
        if wanted:
            where += " and table_schema in (" + ", ".join(_literal(s) for s in wanted) + ")"
        tables = _rows(cur, "select table_schema, table_name, comment, row_count, table_type "
                            f"from {db}.information_schema.tables "
                            f"where table_type in ('BASE TABLE', 'VIEW') and {where} order by 1, 2")
        columns = _rows(cur, "select table_schema, table_name, column_name, ordinal_position, data_type, comment "
                             f"from {db}.information_schema.columns where {where} order by 1, 2, 4")
        schemas = sorted({t["table_schema"] for t in tables})
        qual = (lambda s, t: t) if len(schemas) <= 1 else (lambda s, t: f"{s}.{t}")  # noqa: E731
        pk_cols: set[tuple[str, str]] = set()
        for schema in schemas:
            where_keys = f"{db}.{quote_ident(schema)}"
            try:
                for row in _rows(cur, f"show primary keys in schema {where_keys}"):
                    pk_cols.add((qual(row["schema_name"], row["table_name"]), row["column_name"]))
                for row in _rows(cur, f"show imported keys in schema {where_keys}"):
                    if not row.get("pk_table_name"):
                        snap.issues.append(Issue(db_id, qual(schema, row.get("fk_table_name") or "?"), "warning",
                                                 "SHOW IMPORTED KEYS gave a key without its referenced table; skipped"))
                        continue
                    snap.foreign_keys.append(ForeignKey(
                        qual(row["fk_schema_name"], row["fk_table_name"]), row["fk_column_name"],
                        qual(row["pk_schema_name"], row["pk_table_name"]), row["pk_column_name"]))
            except Exception as exc:  # noqa: BLE001 - keys are optional metadata: report, keep the tables
                snap.issues.append(Issue(db_id, schema, "warning", f"keys not read ({type(exc).__name__}: "
                                         f"{' '.join(str(exc).split())[:200]}); routing uses implied joins only"))
        by_table: dict[tuple[str, str], list[dict]] = {}
        for col in columns:
            by_table.setdefault((col["table_schema"], col["table_name"]), []).append(col)
        fetch = lambda sql: cur.execute(sql).fetchall()  # noqa: E731
        for t in tables:
            name = qual(t["table_schema"], t["table_name"])
            table = TableInfo(name, label_of(t["table_name"]), description=t.get("comment") or None,
                              row_count=t.get("row_count"),
                              kind="view" if str(t.get("table_type")).upper() == "VIEW" else "table")
            rel = f"{db}.{quote_ident(t['table_schema'])}.{quote_ident(t['table_name'])}"
            for col in by_table.get((t["table_schema"], t["table_name"]), []):
                info = ColumnInfo(col["column_name"], label_of(col["column_name"]), int(col["ordinal_position"]),
                                  str(col["data_type"]).lower(), (name, col["column_name"]) in pk_cols,
                                  col.get("comment") or None)
                try:
                    info.samples = sample_values(fetch, rel, col["column_name"], n_samples, chars)
                except Exception as exc:  # noqa: BLE001 - one unreadable column keeps the table
                    snap.issues.append(Issue(db_id, f"{name}.{col['column_name']}", "warning",
                                             f"no samples: {' '.join(str(exc).split())[:200]}"))
                table.columns.append(info)
            snap.tables.append(table)
    except Exception as exc:  # noqa: BLE001
        raise SourceError(db_id, f"cannot read Snowflake database {database}: {type(exc).__name__}: "
                                 f"{' '.join(str(exc).split())[:300]}") from exc
    finally:
        conn.close()
    return snap


def _snowflake_spec(entry: dict[str, Any], where: str) -> SourceSpec:
    """A ``type: snowflake`` entry: ``id`` and ``database`` required, secrets refused."""
    secrets = [k for k in SNOWFLAKE_SECRETS if k in entry]
    if secrets:
        raise SourcesConfigError(f"{where}: `{secrets[0]}` must not be written in the sources file: put the secret in "
                                 "an environment variable and name it with `password_env` / `private_key_path_env`")
    unknown = sorted(set(entry) - set(SNOWFLAKE_SETTINGS) - {"type", "id", "description", "exclude_tables"})
    if unknown:
        raise SourcesConfigError(f"{where}: unknown Snowflake setting(s) {', '.join(unknown)}; "
                                 f"known: {', '.join(SNOWFLAKE_SETTINGS)}")
    db_id = text_setting(entry, "id", where, required=True)
    text_setting(entry, "database", where, required=True)
    for key in set(SNOWFLAKE_SETTINGS) - {"schemas", "port"}:
        text_setting(entry, key, where)
    schemas = entry.get("schemas") or []
    if not isinstance(schemas, list) or not all(isinstance(x, str) and x for x in schemas):
        raise SourcesConfigError(f"{where}: `schemas` must be a list of schema names, got {schemas!r}")
    port = entry.get("port")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int)):
        raise SourcesConfigError(f"{where}: `port` must be a whole number, got {port!r}")
    exclude = entry.get("exclude_tables") or []
    if not isinstance(exclude, list) or not all(isinstance(t, str) and t for t in exclude):
        raise SourcesConfigError(f"{where}: `exclude_tables` must be a list of table names, got {exclude!r}")
    settings = tuple((k, tuple(entry[k]) if k == "schemas" else entry[k])
                     for k in SNOWFLAKE_SETTINGS if entry.get(k) is not None)
    return SourceSpec("snowflake", Path(f"snowflake:{entry['database']}"), db_id, text_setting(entry, "description", where),
                      tuple(exclude), settings)


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
    return snapshot_digest("snowflake", read_snowflake(spec, db_id, 0, 0))


class SnowflakeSource:
    """``type: snowflake``: one Snowflake database (see :class:`dbrouter.sources.base.SourceType`)."""

    name: ClassVar[str] = "snowflake"

    def parse(self, entry: dict[str, Any], base: Path, where: str) -> list[SourceSpec]:
        """The :data:`SNOWFLAKE_SETTINGS`; secrets are refused (they come from the environment)."""
        return [_snowflake_spec(entry, where)]

    def read(self, spec: SourceSpec, n_samples: int, chars: int,
             progress: ProgressFn | None = None) -> tuple[list[DatabaseSnapshot], list[Issue]]:
        """The database's schemas (see :func:`read_snowflake`)."""
        return [read_snowflake(spec, spec.id or "?", n_samples, chars)], []

    def fingerprint(self, spec: SourceSpec) -> tuple[dict[str, str], dict[str, str]]:
        """Catalog hash (see :func:`fingerprint_snowflake`)."""
        db_id = spec.id or "?"
        return {db_id: fingerprint_snowflake(spec, db_id)}, {}

    def target(self, db_id: str, source_path: str) -> Target:
        """Not yet: ``ask`` writes Snowflake SQL for it but does not run it (the KB does not keep the
        connection's user, role and warehouse).

        Raises:
            NoDataSource: always, saying where SQL does run.
        """
        raise NoDataSource(f"database {db_id!r} comes from a Snowflake source ({source_path}); dbrouter runs SQL on "
                           "SQLite and DuckDB files and on `type: url` servers, not yet on Snowflake: run the SQL "
                           "shown in Snowflake yourself", dialect="snowflake")

    def run(self, target: Target, sql: str, timeout: float, row_cap: int) -> QueryResult:
        """Not yet (see :meth:`target`).

        Raises:
            NoDataSource: always.
        """
        raise NoDataSource(f"cannot run SQL on database {target.db_id!r}: dbrouter does not run SQL on Snowflake "
                           "yet", dialect="snowflake")
