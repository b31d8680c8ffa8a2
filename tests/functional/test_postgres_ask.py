"""`dbrouter build` + `ask` + `link` on a real PostgreSQL server (started by the test, loopback): a
database whose tables live outside `public`, answered end to end with the fake LLM through the real
`openai` client; hostile SQL is refused or stopped by the read-only transaction, and the server's
data is unchanged afterwards."""

from __future__ import annotations

import json

import psycopg
import pytest

from dbrouter.execute.runners import execute
from dbrouter.sources.base import Target
from tests.conftest import run_cli
from tests.fake_llm import FakeLLM
from tests.pg_server import postgres_server

pytestmark = pytest.mark.slow

WRITER_PW = "wr1ter/p@ss"  # a role that *can* write: the session must stop it anyway

SETUP = [
    "create schema billing",
    "create table billing.customer (customer_id int primary key, name text not null, city text)",
    "comment on table billing.customer is 'Customers we bill'",
    "create table billing.invoice (invoice_id int primary key, customer_id int references billing.customer, "
    "amount numeric(10,2), paid boolean not null)",
    "insert into billing.customer values (1, 'Acme', 'Paris'), (2, 'Globex', 'Berlin'), (3, 'Initech', 'Austin')",
    "insert into billing.invoice values (10, 1, 100.00, true), (11, 1, 50.00, false), (12, 2, 75.00, false), "
    "(13, 3, 20.00, true)",
    "create sequence billing.audit_seq",
    "create function billing.wipe() returns int language sql as 'delete from billing.invoice; select 1'",
    f"create role writer login password '{WRITER_PW}'",
    "grant usage on schema billing to writer",
    "grant select, insert, update, delete on all tables in schema billing to writer",
    "grant usage, select, update on sequence billing.audit_seq to writer",
    "grant execute on function billing.wipe() to writer",
]
UNPAID = ("SELECT c.name FROM customer AS c JOIN invoice AS i ON i.customer_id = c.customer_id "
          "WHERE NOT i.paid ORDER BY c.name")
STATE = "select count(*), sum(amount), (select last_value from billing.audit_seq) from billing.invoice"


@pytest.fixture(scope="module")
def pg_kb(tmp_path_factory):
    base = tmp_path_factory.mktemp("pgask")
    with postgres_server() as server:
        with psycopg.connect(server.dsn(), autocommit=True) as con:
            con.execute("create database sales")
            con.execute("create database empty_one")
        with psycopg.connect(server.dsn(database="sales"), autocommit=True) as con:
            for sql in SETUP:
                con.execute(sql)
        url = f"postgresql+psycopg://writer:${{PG_ASK_PW}}@{server.host}:{server.port}"
        (base / "sources.yml").write_text(f'databases:\n  - {{type: url, url: "{url}/sales"}}\n')
        (base / "broken.yml").write_text(f'databases:\n  - {{type: url, url: "{url}/sales"}}\n'
                                         f'  - {{type: url, url: "{url}/empty_one"}}\n')
        env = {"PG_ASK_PW": WRITER_PW}
        warehouse = base / "kb.duckdb"
        run_cli("build", "--sources", str(base / "sources.yml"), "--warehouse", str(warehouse), env=env)
        yield {"server": server, "base": base, "warehouse": warehouse, "env": env, "url": url}


def _state(pg_kb):
    with psycopg.connect(pg_kb["server"].dsn(database="sales")) as con:
        return con.execute(STATE).fetchone()


def _ask(pg_kb, tmp_path, responder, *args):
    with FakeLLM(responder, conversation=True) as fake:
        env = {**pg_kb["env"], "DBROUTER_LLM_BASE_URL": fake.base_url, "DBROUTER_LLM_MODEL": "fake-sql",
               "DBROUTER_LLM_CACHE": str(tmp_path / "cache")}
        proc = run_cli("ask", "--warehouse", str(pg_kb["warehouse"]), "--json", *args, env=env, check=False)
        return proc, list(fake.requests)


def test_tables_outside_public_are_read_with_bare_names(pg_kb):
    import duckdb

    with duckdb.connect(str(pg_kb["warehouse"]), read_only=True) as con:
        tables = sorted(r[0] for r in con.execute("select table_name from kb_tables where db_id = 'sales'").fetchall())
        kind, path = con.execute("select source_type, source_path from kb_databases where db_id = 'sales'").fetchone()
    assert tables == ["customer", "invoice"]  # billing is the only schema with tables: its names stay bare
    assert kind == "url" and path.endswith("/sales search_path billing") and WRITER_PW not in path


def test_ask_answers_on_postgres_in_its_dialect(pg_kb, tmp_path):
    before = _state(pg_kb)
    proc, requests = _ask(pg_kb, tmp_path, lambda m: f"```sql\n{UNPAID}\n```", "--candidates", "2",
                          "Which customers have not paid an invoice?")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["db_id"] == "sales" and data["status"] == "ok" and data["dialect"] == "postgres"
    assert data["rows"] == [["Acme"], ["Globex"]]
    # routing's phrase-mapping prompt comes first (ask routes as `dbrouter route` does), then the SQL's
    sql_prompts = [r for r in requests if "SQL DIALECT" in r["messages"][-1]["content"]]
    assert sql_prompts and "SQL DIALECT: PostgreSQL" in sql_prompts[0]["messages"][-1]["content"]
    assert _state(pg_kb) == before


HOSTILE = [
    ("SELECT pg_read_file('/etc/passwd')", "pg_read_file"),
    ("SELECT set_config('default_transaction_read_only', 'off', false)", "set_config"),
    ("SELECT pg_sleep(30)", "pg_sleep"),
    ("SELECT * FROM dblink('host=x', 'delete from billing.invoice') AS t(x int)", "dblink"),
    # SQL written in a string (hardening review): run by the server whatever the guard saw
    ("SELECT * FROM ts_stat('SELECT to_tsvector(pg_read_file(''/etc/passwd''))')", "ts_stat"),
    ("SELECT ts_rewrite('a'::tsquery, 'SELECT ''a''::tsquery, ''b''::tsquery')", "ts_rewrite"),
    # a function outside the built-in read-only set: the database's own, a sequence's
    ("SELECT billing.wipe()", "wipe"),
    ("SELECT nextval('billing.audit_seq')", "nextval"),
]
IN_THE_TRANSACTION = ["SELECT billing.wipe()", "SELECT nextval('billing.audit_seq')"]
"""Refused by the guard now; sent past it, the read-only transaction still stops them."""


def test_hostile_sql_is_refused_and_the_server_is_unchanged(pg_kb, tmp_path, monkeypatch):
    """Through `ask` once (the LLM answers DELETE: exit 1, nothing ran), then each hostile statement
    through the same runner `ask` uses: refused by the guard in PostgreSQL's dialect, or stopped by
    the read-only transaction."""
    from dbrouter.query.guard import UnsafeSQL

    before = _state(pg_kb)
    proc, _ = _ask(pg_kb, tmp_path, lambda m: "```sql\nDELETE FROM invoice\n```", "--db", "sales", "--candidates",
                   "1", "--repair-turns", "0", "Delete every invoice")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and "DELETE" in proc.stdout + proc.stderr
    monkeypatch.setenv("PG_ASK_PW", WRITER_PW)
    target = Target("sales", "url", url=f"{pg_kb['url']}/sales", schema="billing", sql_dialect="postgres")
    for hostile, refused in HOSTILE:
        try:
            result = execute(target, hostile, timeout=5)
        except UnsafeSQL as exc:
            assert refused in str(exc), (hostile, str(exc))
            continue
        assert result.error and refused in result.error, (hostile, result.error)
    from dbrouter.sources.url import run_url

    for hostile in IN_THE_TRANSACTION:
        assert "read-only transaction" in (run_url(target, hostile, 5, 10).error or ""), hostile
    assert _state(pg_kb) == before


def test_a_statement_reads_only_its_own_databases_tables(pg_kb, monkeypatch):
    """Hardening review: with one server role for several KB databases, MCP's run_sql on the allowed
    database read another schema's table (and information_schema listed every schema). A table the
    server has but the KB's database does not is refused before anything runs, CTEs told apart
    from tables in every scope."""
    from dbrouter.serve.mcp import Tools

    monkeypatch.setenv("PG_ASK_PW", WRITER_PW)
    with psycopg.connect(pg_kb["server"].dsn(database="sales"), autocommit=True) as con:
        con.execute("create schema if not exists hr")
        con.execute("create table if not exists hr.salary (name text, ssn text)")
        con.execute("insert into hr.salary values ('Ann', '078-05-1120')")
        con.execute("grant usage on schema hr to writer")
        con.execute("grant select on hr.salary to writer")
    tools = Tools(pg_kb["warehouse"])
    try:
        ok = tools.run_sql("sales", "with unpaid as (select * from invoice where not paid) select count(*) from unpaid")
        assert ok["rows"] == [[2]]
        for sql in ("select ssn from hr.salary",
                    "with hr as (select 1) select * from customer where exists (select ssn from hr.salary)",
                    "with salary as (select * from hr.salary) select * from salary",
                    "select table_schema, table_name from information_schema.tables",
                    "select usename from pg_user"):
            with pytest.raises(Exception, match="is not a table of database sales") as refused:
                tools.run_sql("sales", sql)
            assert "078-05-1120" not in str(refused.value)
    finally:
        tools.close()


def test_statement_timeout_and_row_cap_hold_on_the_server(pg_kb, monkeypatch):
    monkeypatch.setenv("PG_ASK_PW", WRITER_PW)
    target = Target("sales", "url", url=f"{pg_kb['url']}/sales", schema="billing", sql_dialect="postgres")
    slow = execute(target, "SELECT count(*) FROM generate_series(1, 10000000000) AS g", timeout=0.5)
    cross = ", ".join(f"invoice AS i{n}" for n in range(12))  # 4^12 = 16.7 million rows, streamed
    many = execute(target, f"SELECT i0.invoice_id FROM {cross}", row_cap=10, timeout=20)
    assert slow.timed_out and "timed out after 0.5 seconds" in slow.error
    # 10 rows kept, 1,000 counted, not 10^8 fetched (a server-side cursor: fast, and bounded in memory)
    assert len(many.rows) == 10 and many.total_rows == 1000 and many.truncated and many.total_capped
    assert many.seconds < 5


def test_a_failed_source_fails_the_build_and_keeps_the_previous_kb(pg_kb):
    before = pg_kb["warehouse"].read_bytes()
    args = ("build", "--sources", str(pg_kb["base"] / "broken.yml"), "--warehouse", str(pg_kb["warehouse"]))
    proc = run_cli(*args, env=pg_kb["env"], check=False)
    assert proc.returncode == 2 and "previous knowledge base" in proc.stderr and "--allow-partial" in proc.stderr
    assert "no table or view readable" in proc.stderr and "the database has schemas public" in proc.stderr
    assert pg_kb["warehouse"].read_bytes() == before
    partial = pg_kb["base"] / "partial.duckdb"
    proc = run_cli("build", "--sources", str(pg_kb["base"] / "broken.yml"), "--warehouse", str(partial),
                   "--allow-partial", env=pg_kb["env"], check=False)
    assert proc.returncode == 0, proc.stderr



def test_giant_text_cells_are_cut_on_the_server(pg_kb, monkeypatch):
    """Hardening review: `ask`/`run_sql` memory was unbounded by giant cells (the 64 KiB cell cap
    applied after the row was fetched). Text and bytea cells are now cut by PostgreSQL before they
    are sent; other columns, names (duplicates too) and order are kept."""
    import dbrouter.sources.url as url_source

    monkeypatch.setenv("PG_ASK_PW", WRITER_PW)
    monkeypatch.setattr(url_source, "SERVER_CELL_BYTES", 1000)
    target = Target("sales", "url", url=f"{pg_kb['url']}/sales", schema="billing", sql_dialect="postgres")
    big = execute(target, "SELECT c.customer_id AS id, repeat(c.name, 1000000) AS s, "
                          "decode(repeat('ab', 5000), 'hex') AS b, c.customer_id AS id FROM customer AS c ORDER BY 1 DESC")
    assert big.ok, big.error
    assert big.columns == ["id", "s", "b", "id"] and [r[0] for r in big.rows] == [3, 2, 1]
    assert all(len(r[1]) == 1001 and len(r[2]) == 1001 for r in big.rows)  # cut on the server, not here
    plain = execute(target, UNPAID)
    assert plain.ok and plain.rows == [("Acme",), ("Globex",)]
