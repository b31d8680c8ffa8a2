"""What the clients BI tools are built on see of `dbrouter serve`, asked by those clients:
pgjdbc (DBeaver, Metabase, Tableau, DataGrip) through a small Java program, psycopg in text and
binary mode, asyncpg (binary by default), SQLAlchemy reflection and pandas (Superset), pgcli's
``\\dt`` through pgspecial. Each asserts what a tool would show (columns with their types, keys
where the KB has them, values equal in every format), not only that no error came back."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

PROBE = Path(__file__).resolve().parents[1] / "clients" / "JdbcProbe.java"
JDBC_JAR = Path("/usr/share/java/postgresql.jar")

# one value of each type the KB and routing return, with what psycopg reads it as
TYPED_SQL = ("select 7::smallint as i2, 42 as i4, 9000000000 as i8, 1.5::double as f8, 0.25::float as f4, "
             "1.50::decimal(5,2) as num, 123456789012345678901234567890::hugeint as huge, true as b, 'ünï \"q\"' as t, "
             "DATE '2026-01-02' as d, TIMESTAMP '2026-01-01 10:00:00.25' as ts, "
             "TIMESTAMPTZ '2026-01-01 10:00:00+00' as tstz, '{\"a\": 1}'::json as j, ['a', 'b c', NULL] as arr_t, "
             "[1, 2] as arr_i, [0.5, 1.5]::float[2] as vec, interval 90 minute as iv, NULL::varchar as nothing")
EXPECTED = {"i2": 7, "i4": 42, "i8": 9000000000, "f8": 1.5, "f4": 0.25, "num": Decimal("1.50"),
            "huge": Decimal("123456789012345678901234567890"), "b": True, "t": 'ünï "q"', "d": dt.date(2026, 1, 2),
            "ts": dt.datetime(2026, 1, 1, 10, 0, 0, 250000),
            "tstz": dt.datetime(2026, 1, 1, 10, 0, tzinfo=dt.UTC), "j": {"a": 1},
            "arr_t": ["a", "b c", None], "arr_i": [1, 2], "vec": [0.5, 1.5], "iv": dt.timedelta(minutes=90),
            "nothing": None}
OIDS = {"i2": 21, "i4": 23, "i8": 20, "f8": 701, "f4": 700, "num": 1700, "huge": 1700, "b": 16, "t": 25, "d": 1082,
        "ts": 1114, "tstz": 1184, "j": 114, "arr_t": 1009, "arr_i": 1007, "vec": 1021, "iv": 1186, "nothing": 25}


@pytest.fixture(scope="module")
def served(built_kb, tmp_path_factory):
    from dbrouter.serve.server import ServeConfig, start_in_thread, stop

    warehouse = tmp_path_factory.mktemp("bi-clients") / "kb.duckdb"
    shutil.copyfile(built_kb["warehouse"], warehouse)
    server, _ = start_in_thread(ServeConfig(warehouse, "127.0.0.1", 0, timeout=30))
    yield {"port": server.server_address[1], "server": server}
    stop(server)


@pytest.fixture(scope="module")
def keys(served) -> list[tuple[str, str, str]]:
    """The KB's primary keys as DuckDB holds them: (schema, table, column)."""
    with served["server"].kb.cursor() as con:
        rows = con.execute("select schema_name, table_name, constraint_column_names[1] from duckdb_constraints() "
                           "where constraint_type = 'PRIMARY KEY' order by 1, 2").fetchall()
    assert rows, "the KB has no primary key to look for: the test would prove nothing"
    return rows


def _jdbc(port: int, schema: str, table: str, select: str) -> dict[str, dict]:
    java = shutil.which("java")
    if java is None or not JDBC_JAR.exists():
        pytest.fail("pgjdbc or a JDK is not installed: `make test` installs default-jdk-headless and "
                    "libpostgresql-jdbc-java")
    url = f"jdbc:postgresql://127.0.0.1:{port}/kb?user=analyst&connectTimeout=10"
    proc = subprocess.run([java, "-cp", str(JDBC_JAR), str(PROBE), url, schema, table, select],
                          capture_output=True, text=True, timeout=240, env={**os.environ, "TZ": "UTC"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    calls = {}
    for line in proc.stdout.splitlines():
        entry = json.loads(line)
        calls[entry["call"]] = entry
    return calls


def test_pgjdbc_metadata_a_bi_tool_reads(served, keys):
    """Before: getColumns returned no rows (DuckDB's type ids in pg_attribute), getPrimaryKeys,
    getIndexInfo, getImportedKeys and getTypeInfo failed."""
    schema, table, column = keys[0]
    calls = _jdbc(served["port"], schema, table, "select 1")
    failed = {name: c["error"] for name, c in calls.items() if "error" in c}
    assert not failed, failed
    tables = {row[2] for row in _jdbc(served["port"], "main", "kb_databases", "select 1")["getTables"]["rows"]}
    assert {"kb_databases", "kb_columns"} <= tables
    pk = calls["getPrimaryKeys"]["rows"]
    assert [(r[1], r[2], r[3], r[4]) for r in pk] == [(schema, table, column, 1)]
    index = calls["getIndexInfo"]["rows"]
    assert [(r[3], r[5], r[8]) for r in index] == [(False, pk[0][5], column)]  # unique, named as the key
    assert calls["getImportedKeys"]["rows"] == [] and calls["getExportedKeys"]["rows"] == []
    type_names = {row[0] for row in calls["getTypeInfo"]["rows"]}
    assert {"int4", "int8", "text", "numeric", "timestamptz", "bool", "float8"} <= type_names
    assert calls["getBestRowIdentifier"]["rows"][0][1] == column


def test_pgjdbc_columns_carry_their_types(served):
    calls = _jdbc(served["port"], "main", "kb_databases", "select 1")
    columns = {row[3]: (row[4], row[5], row[10]) for row in calls["getColumns"]["rows"]}  # DATA_TYPE, TYPE_NAME, NULLABLE
    assert columns["db_id"][:2] == (12, "text")  # java.sql.Types.VARCHAR
    assert columns["ingested_at"][:2] == (93, "timestamp")
    assert columns["n_tables"][:2] == (-5, "int8")
    emb = {row[3]: (row[4], row[5]) for row in
           _jdbc(served["port"], "main", "kb_document_embeddings", "select 1")["getColumns"]["rows"]}
    assert emb["embedding"] == (2003, "_float4")  # an ARRAY of real


def test_pgjdbc_prepared_statement_ten_runs_text_then_binary(served):
    """pgjdbc turns a statement server-side and its results binary at the 5th run: before, the 6th
    failed on a timestamp and the server closed the connection."""
    calls = _jdbc(served["port"], "main", "kb_databases", TYPED_SQL)
    runs = [calls[f"prepared#{n}"] for n in range(1, 11)]
    assert all("error" not in r for r in runs), [r.get("error") for r in runs]
    first = runs[0]
    assert all(r["rows"] == first["rows"] for r in runs), "binary results differ from text ones"
    types = {name: type_name for name, type_name, _ in first["columns"]}
    assert types["num"] == "numeric" and types["tstz"] == "timestamptz" and types["arr_t"] == "_text"
    row = dict(zip([c[0] for c in first["columns"]], first["rows"][0]))
    assert row["i8"] == 9000000000 and row["num"] == "1.50" and row["huge"] == "123456789012345678901234567890"
    assert row["t"] == 'ünï "q"' and row["arr_i"] == "[1, 2]" and row["b"] is True and row["nothing"] is None
    assert row["tstz"] == "Timestamp:2026-01-01 10:00:00.0" and row["ts"] == "Timestamp:2026-01-01 10:00:00.25"
    assert calls["routed"]["rows"] == [["singer"]]


@pytest.mark.parametrize("binary", [False, True])
def test_psycopg_text_and_binary_results_keep_their_types(served, binary):
    """Before: binary mode failed on a numeric (`tuple index out of range`, connection dropped), and
    in text mode now() came back as text."""
    import psycopg

    with psycopg.connect(host="127.0.0.1", port=served["port"], user="analyst", dbname="kb",
                         connect_timeout=10) as con:
        cur = con.cursor(binary=binary)
        cur.execute(TYPED_SQL)
        names = [d.name for d in cur.description]
        assert dict(zip(names, cur.fetchone())) == EXPECTED
        assert {d.name: d.type_code for d in cur.description} == OIDS
        cur.execute("select count(*), now(), route_query(%s) from kb_databases", ["How many singers do we have?"])
        assert [d.name for d in cur.description] == ["count", "now", "route_query"]  # Postgres's names
        count, now, routed = cur.fetchone()
        assert count > 0 and now.tzinfo is not None and routed == "singer"
        cur.execute("select db_id from kb_databases where n_tables > %s and db_id = any(%s) order by 1",
                    [0, ["singer", "concert_singer"]])
        assert [r[0] for r in cur.fetchall()] == ["concert_singer", "singer"]
        cur.execute("select current_user, session_user, current_schema()")
        assert cur.fetchone() == ("analyst", "analyst", "main")  # the login name, as Postgres says it


def test_asyncpg_binary_by_default(served):
    import asyncpg

    async def run():
        con = await asyncpg.connect(host="127.0.0.1", port=served["port"], user="analyst", database="kb", timeout=10)
        try:
            row = await asyncio.wait_for(con.fetchrow(TYPED_SQL), 60)
            routed = await con.fetchval("select route_query($1)", "How many singers do we have?")
            counted = await con.fetchval("select count(*) from kb_databases where n_tables > $1::int", 0)
            listed = await con.fetch("select db_id from kb_databases where db_id = any($1) order by 1",
                                     ["singer", "concert_singer"])  # a text[] parameter, in binary
            assert [r["db_id"] for r in listed] == ["concert_singer", "singer"]
            return dict(row), routed, counted
        finally:
            await con.close()

    row, routed, counted = asyncio.run(run())
    expected = {**EXPECTED, "j": '{"a": 1}'}  # asyncpg leaves json as its text
    assert row == expected
    assert routed == "singer" and counted > 0


def test_sqlalchemy_reflection_and_pandas_read_table(served, keys):
    """Before: Table(autoload_with=...) and MetaData.reflect() failed on current_setting()."""
    import pandas as pd
    from sqlalchemy import TEXT, TIMESTAMP, BigInteger, MetaData, Table, create_engine

    engine = create_engine(f"postgresql+psycopg://analyst@127.0.0.1:{served['port']}/kb")
    try:
        table = Table("kb_databases", MetaData(), autoload_with=engine)
        assert isinstance(table.c.db_id.type, TEXT) and isinstance(table.c.ingested_at.type, TIMESTAMP)
        assert isinstance(table.c.n_tables.type, BigInteger)
        schema, name, column = keys[0]
        meta = MetaData()
        meta.reflect(engine, schema=schema)
        assert meta.tables[f"{schema}.{name}"].primary_key.columns.keys() == [column]
        frame = pd.read_sql_table("kb_databases", engine)
        assert len(frame) > 0 and str(frame["ingested_at"].dtype).startswith("datetime64")
        assert str(frame["n_tables"].dtype) == "int64"
    finally:
        engine.dispose()


def test_pgcli_backslash_commands_through_pgspecial(served, keys):
    """Before: \\dt and \\dv failed (`relkind = ANY('{r,p,""}')`: DuckDB does not cast that string)."""
    from pgcli.pgexecute import PGExecute
    from pgspecial.main import PGSpecial

    pg = PGExecute("kb", "analyst", None, "127.0.0.1", str(served["port"]), None)
    special = PGSpecial()
    try:
        def run(command):
            (title, rows, headers, status, *_rest), = list(pg.run(command, pgspecial=special))
            return list(rows or []), headers, status

        tables, headers, _ = run("\\dt")
        assert headers[:2] == ["Schema", "Name"] and ("main", "kb_databases") in {tuple(r[:2]) for r in tables}
        views, _, _ = run("\\dv")
        assert ("main", "stg_catalog__tables") in {tuple(r[:2]) for r in views}
        columns, _, _ = run("\\d kb_databases")
        assert dict((r[0], r[1]) for r in columns)["ingested_at"] == "timestamp without time zone"
        schema, table, column = keys[0]
        _, _, status = run(f"\\d {schema}.{table}")
        assert "PRIMARY KEY" in str(status) and column in str(status)
    finally:
        pg.conn.close()


# the catalog queries DBeaver's PostgreSQL plugin sends when a user opens a schema and a table
# (written in its form: a join of pg_catalog tables with ::regclass casts and its own functions)
DBEAVER = {
    "schemas": ("SELECT n.oid,n.*,d.description FROM pg_catalog.pg_namespace n LEFT OUTER JOIN pg_catalog.pg_description d "
                "ON d.objoid=n.oid AND d.objsubid=0 AND d.classoid='pg_namespace'::regclass ORDER BY nspname", ()),
    "types": ("SELECT t.oid,t.*,c.relkind,format_type(nullif(t.typbasetype, 0), t.typtypmod) as base_type_name, "
              "d.description FROM pg_catalog.pg_type t LEFT OUTER JOIN pg_catalog.pg_type et ON et.oid=t.typelem "
              "LEFT OUTER JOIN pg_catalog.pg_class c ON c.oid=t.typrelid LEFT OUTER JOIN pg_catalog.pg_description d "
              "ON t.oid=d.objoid WHERE t.typname IS NOT NULL AND (c.relkind IS NULL OR c.relkind = 'c') "
              "AND (et.typcategory IS NULL OR et.typcategory <> 'C')", ()),
    "tables": ("SELECT c.oid,c.*,t.relname as tabrelname,rt.relnamespace as refnamespace,d.description "
               "FROM pg_catalog.pg_class c LEFT OUTER JOIN pg_catalog.pg_class t ON t.oid=c.reltoastrelid "
               "LEFT OUTER JOIN pg_catalog.pg_class rt ON rt.oid=c.reloftype LEFT OUTER JOIN pg_catalog.pg_description d "
               "ON d.objoid=c.oid AND d.objsubid=0 AND d.classoid='pg_class'::regclass "
               "WHERE c.relnamespace=%(ns)s AND c.relkind not in ('i','I','c')", ("ns",)),
    "columns": ("SELECT c.relname,a.attname,t.typname,a.attnotnull,pg_catalog.pg_get_expr(ad.adbin, ad.adrelid, true) "
                "as def_value,dsc.description FROM pg_catalog.pg_attribute a INNER JOIN pg_class c ON (a.attrelid=c.oid) "
                "INNER JOIN pg_catalog.pg_type t ON t.oid=a.atttypid LEFT OUTER JOIN pg_catalog.pg_attrdef ad "
                "ON (a.attrelid=ad.adrelid AND a.attnum = ad.adnum) LEFT OUTER JOIN pg_catalog.pg_description dsc "
                "ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid) WHERE NOT a.attisdropped "
                "AND c.relkind not in ('i','I','c') AND c.oid=%(table)s ORDER BY a.attnum", ("table",)),
    "constraints": ("SELECT c.oid,c.*,t.relname as tabrelname FROM pg_catalog.pg_constraint c INNER JOIN pg_catalog.pg_class t "
                    "ON t.oid=c.conrelid WHERE t.relkind not in ('i','I','c') AND t.relnamespace=%(ns)s "
                    "AND c.conrelid=%(table)s ORDER BY c.oid", ("ns", "table")),
    "indexes": ("SELECT i.*,i.indkey as keys,c.relname,c.relnamespace,c.relam,tc.relname as tabrelname,dsc.description,"
                "pg_catalog.pg_get_expr(i.indpred, i.indrelid) as pred_expr,pg_catalog.pg_relation_size(i.indexrelid) "
                "as index_rel_size,pg_catalog.pg_stat_get_numscans(i.indexrelid) as index_num_scans "
                "FROM pg_catalog.pg_index i INNER JOIN pg_catalog.pg_class c ON c.oid=i.indexrelid INNER JOIN "
                "pg_catalog.pg_class tc ON tc.oid=i.indrelid LEFT OUTER JOIN pg_catalog.pg_description dsc "
                "ON i.indexrelid=dsc.objoid WHERE i.indrelid=%(table)s ORDER BY c.relname", ("table",)),
}


def test_dbeaver_catalog_queries_when_opening_a_table(served, keys):
    import psycopg

    schema, table, column = keys[0]
    with psycopg.connect(host="127.0.0.1", port=served["port"], user="analyst", dbname="kb",
                         connect_timeout=10, autocommit=True) as con:
        ns = con.execute("select oid from pg_catalog.pg_namespace where nspname = %s", [schema]).fetchone()[0]
        oid = con.execute("select c.oid from pg_catalog.pg_class c where c.relname = %s and c.relnamespace = %s",
                          [table, ns]).fetchone()[0]
        found = {}
        for name, (sql, params) in DBEAVER.items():
            cur = con.execute(sql, {"ns": ns, "table": oid} if params else None)
            found[name] = (cur.fetchall(), [d.name for d in cur.description])
    assert schema in {r[2] for r in found["schemas"][0]}
    assert {"int4", "text", "timestamptz", "_float4"} <= {r[found["types"][1].index("typname")] for r in found["types"][0]}
    assert table in {r[found["tables"][1].index("relname")] for r in found["tables"][0]}
    columns = found["columns"][0]
    assert columns and columns[0][1] == column and all(r[2] for r in columns)  # every column joins a pg_type row
    (constraint,) = found["constraints"][0]
    assert constraint[found["constraints"][1].index("contype")] == "p"
    (index,) = found["indexes"][0]
    assert index[found["indexes"][1].index("indisprimary")] is True


def test_infinite_and_unsendable_values_end_the_statement_not_the_session(served, monkeypatch):
    """Before: a value Python's datetime cannot hold ('infinity'::timestamp, year 12000) stopped the
    row stream and closed the connection. They go out as Postgres sends them; a value that still
    cannot be encoded is an ErrorResponse after the rows before it, and the session goes on."""
    import psycopg

    import dbrouter.serve.wire as wire

    env = {**os.environ, "PGCONNECT_TIMEOUT": "10"}
    proc = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(served["port"]), "-U", "analyst", "-d", "kb", "-X",
                           "-A", "-t", "-c", "select 'infinity'::timestamp, '-infinity'::date, 'infinity'::timestamptz, "
                           "TIMESTAMP '12000-01-01 10:00:00.5'"], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "infinity|-infinity|infinity|12000-01-01 10:00:00.5", \
        proc.stderr
    real = wire.encode_text

    def failing(oid, value):  # a value no encoder can send (the server runs in this process)
        if value == "cannot-send":
            raise ValueError("no text form")
        return real(oid, value)

    monkeypatch.setattr(wire, "encode_text", failing)
    with psycopg.connect(host="127.0.0.1", port=served["port"], user="analyst", dbname="kb",
                         connect_timeout=10, autocommit=True) as con:
        with pytest.raises(psycopg.errors.DataException, match="cannot be sent: no text form"):
            con.execute("select v from (values ('fine'), ('cannot-send')) t(v)").fetchall()
        assert con.execute("select 1").fetchall() == [(1,)]  # the same session
        cur = con.cursor(binary=True)
        cur.execute("select '12:00:00+05'::timetz, '101'::bit")
        assert cur.fetchone() == ("12:00:00+05", "101")  # sent as text, in either format
