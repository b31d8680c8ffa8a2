"""What BI tools ask `dbrouter serve`, asked by the real clients: psql's meta-commands, pgcli's
completion queries, SQLAlchemy's PostgreSQL inspector (what Superset and most BI tools call),
PREPARE/EXECUTE, psycopg's named cursors, DBeaver's pg_get_keywords(); writes stay refused, and a
slow query holds up only its own client."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def port(built_kb, tmp_path_factory):
    from dbrouter.serve.server import ServeConfig, start_in_thread, stop

    warehouse = tmp_path_factory.mktemp("serve-catalog") / "kb.duckdb"
    shutil.copyfile(built_kb["warehouse"], warehouse)
    server, _ = start_in_thread(ServeConfig(warehouse, "127.0.0.1", 0, timeout=20))
    yield server.server_address[1]
    stop(server)


def _psql(port: int, command: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PGCONNECT_TIMEOUT": "10"}
    return subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "analyst", "-d", "kb", "-X",
                           "-v", "ON_ERROR_STOP=1", "-c", command], capture_output=True, text=True, env=env, timeout=60)


def _pg(port: int, **kw):
    import psycopg

    return psycopg.connect(host="127.0.0.1", port=port, user="analyst", dbname="kb", connect_timeout=10, **kw)


@pytest.mark.parametrize("command, expected", [
    ("\\l", "kb"),
    ("\\dn", "main"),
    ("\\dt", "kb_databases"),
    ("\\dv", "stg_catalog__tables"),
    ("\\d kb_databases", "timestamp without time zone"),
    ("\\d+ kb_databases", "db_id"),
    ("\\df", "route_query"),
    ("\\du", "dbrouter"),
    ("SHOW TABLES", "kb_databases"),
])
def test_psql_meta_commands(port, command, expected):
    """Before: \\l \\dn \\dt failed on pg_get_userbyid, \\d and \\df on the pg_catalog collation."""
    proc = _psql(port, command)
    assert proc.returncode == 0 and "ERROR" not in proc.stderr, proc.stderr
    assert expected in proc.stdout


def test_pgcli_completion_queries(port):
    from pgcli.pgexecute import PGExecute

    pg = PGExecute("kb", "analyst", None, "127.0.0.1", str(port), None)
    try:
        assert "main" in list(pg.schemata())
        assert ("main", "kb_databases") in list(pg.tables())
        assert ("main", "stg_catalog__tables") in list(pg.views())
        columns = {(t, c): ty for _s, t, c, ty, *_ in pg.table_columns()}
        assert columns[("kb_databases", "db_id")] == "text"  # DuckDB's VARCHAR has no length: Postgres's text
        assert "route_query" in {f.func_name for f in pg.functions()}
        assert list(pg.databases()) == ["kb"]
        list(pg.datatypes())
        list(pg.foreignkeys())
    finally:
        pg.conn.close()


def test_sqlalchemy_inspector_sees_tables_columns_and_keys(port):
    from sqlalchemy import TEXT, TIMESTAMP, create_engine, inspect

    engine = create_engine(f"postgresql+psycopg://analyst@127.0.0.1:{port}/kb")
    try:
        insp = inspect(engine)
        assert "main" in insp.get_schema_names()
        assert "kb_databases" in insp.get_table_names() and "stg_catalog__tables" in insp.get_view_names()
        columns = {c["name"]: c for c in insp.get_columns("kb_databases")}
        assert isinstance(columns["db_id"]["type"], TEXT)
        assert isinstance(columns["ingested_at"]["type"], TIMESTAMP)
        assert insp.get_pk_constraint("kb_databases")["constrained_columns"] == []
        assert insp.get_foreign_keys("kb_databases") == [] and insp.get_indexes("kb_databases") == []
        assert insp.has_table("kb_databases") and not insp.has_table("no_such_table")
        assert "SELECT" in insp.get_view_definition("stg_catalog__tables").upper()
    finally:
        engine.dispose()


def test_prepare_execute_named_cursors_and_keywords(port):
    with _pg(port) as con:
        with con.cursor(name="all_dbs") as cur:  # DECLARE ... CURSOR / FETCH FORWARD n / CLOSE
            cur.itersize = 3
            cur.execute("select db_id from kb_databases order by db_id")
            rows = cur.fetchall()
        assert len(rows) == 10 and rows == sorted(rows)
        con.commit()
        con.autocommit = True
        assert con.execute("PREPARE top(text) AS select route_query($1)").statusmessage == "PREPARE"
        assert con.execute("EXECUTE top('How many singers do we have?')").fetchall() == [("singer",)]
        assert con.execute("DEALLOCATE top").statusmessage == "DEALLOCATE"
        words = {w for (w,) in con.execute("select word from pg_catalog.pg_get_keywords()").fetchall()}
        assert {"select", "from", "where"} <= words


@pytest.mark.parametrize("statement, reason", [
    ("PREPARE wipe AS delete from kb_databases", "DELETE"),
    ("DECLARE c CURSOR FOR drop table kb_databases", "DROP"),
    ("EXECUTE q((select count(*) from read_csv('/etc/passwd')))", "read_csv"),
    ("select * from pg_catalog.pg_class; delete from kb_databases", "multiple statements"),
    ("CREATE TEMP VIEW v AS select 1", "CREATE"),
])
def test_writes_and_file_reads_stay_refused(port, statement, reason):
    import psycopg

    with _pg(port, autocommit=True) as con:
        if statement.startswith("EXECUTE"):  # a checked statement, run with a hostile argument
            con.execute("PREPARE q AS select 1")
        with pytest.raises(psycopg.Error, match=reason):
            con.execute(statement)
        assert con.execute("select count(*) from kb_databases").fetchone()[0] == 10


def test_a_slow_query_holds_up_only_its_own_client(port):
    """Each session has its own cursor: a client's 3-second query does not delay the others."""
    slow_started = threading.Event()
    slow_seconds = []

    def slow():
        with _pg(port, autocommit=True) as con:
            slow_started.set()
            t = time.monotonic()
            con.execute("select count(*) from range(300000000) AS a(x) where hash(x) % 7 = 3").fetchone()
            slow_seconds.append(time.monotonic() - t)

    thread = threading.Thread(target=slow)
    thread.start()
    slow_started.wait(10)
    time.sleep(0.3)
    with _pg(port, autocommit=True) as con:
        t = time.monotonic()
        for _ in range(5):
            assert con.execute("select count(*) from kb_databases").fetchone()[0] == 10
        quick = time.monotonic() - t
    thread.join(60)
    assert slow_seconds and quick < slow_seconds[0] / 2, (quick, slow_seconds)
