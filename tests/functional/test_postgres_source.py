"""`type: url` sources against a real PostgreSQL server that the test starts itself (loopback,
temporary directory): several schemas, comments, foreign keys across schemas, a view, an empty
table, unusual identifiers, a table the read-only role may not read; the source is unchanged."""

from __future__ import annotations

import psycopg
import pytest

from dbrouter.sources.url import ServerSource, read_server
from tests.pg_server import postgres_server

pytestmark = pytest.mark.slow

READER_PW = "r3ad er@/:pw"  # characters that must be URL-quoted

SETUP = [
    "create schema sales",
    "create schema hr",
    "create table hr.employee (emp_id int primary key, full_name text not null, hired date)",
    "comment on table hr.employee is 'People on the payroll'",
    "comment on column hr.employee.full_name is 'First and last name'",
    "create table hr.salaries (emp_id int references hr.employee(emp_id), amount numeric)",
    "create table sales.customer (customer_id int primary key, name text, city text)",
    'create table sales."Order Items" ("Order ID" int primary key, "Qty" int, "unit price" numeric(10,2), '
    "sold_by int references hr.employee(emp_id), customer int references sales.customer(customer_id))",
    "create view sales.paris_customers as select * from sales.customer where city = 'Paris'",
    "create table sales.empty_table (x int)",
    "create table public.settings (k text primary key, v jsonb)",
    "insert into hr.employee values (1, 'Ada Lovelace', '2020-01-02'), (2, 'Alan Turing', null)",
    "insert into hr.salaries values (1, 100)",
    "insert into sales.customer values (10, 'Acme', 'Paris'), (11, 'Globex', 'Berlin'), (12, 'Initech', 'Paris')",
    """insert into sales."Order Items" values (1, 3, 9.99, 1, 10), (2, 1, 120.00, 2, 11)""",
    """insert into public.settings values ('theme', '{"dark": true}')""",
    f"create role reader login password '{READER_PW}'",
    "grant usage on schema sales, hr, public to reader",
    "grant select on hr.employee, sales.customer, sales.\"Order Items\", sales.paris_customers, "
    "sales.empty_table, public.settings to reader",
]

FINGERPRINT = """
select md5(string_agg(x, '|' order by x)) from (
  select table_schema || '.' || table_name || ':' || table_type as x from information_schema.tables
  where table_schema in ('sales', 'hr', 'public')
  union all select 'rows:' || (select count(*) from sales."Order Items") || ',' || (select count(*) from sales.customer)
    || ',' || (select count(*) from hr.employee) || ',' || (select string_agg(v::text, ',') from public.settings)
  union all select 'roles:' || string_agg(rolname, ',' order by rolname) from pg_roles where rolname !~ '^pg_'
) s
"""


@pytest.fixture(scope="module")
def pg():
    with postgres_server() as server:
        with psycopg.connect(server.dsn(), autocommit=True) as con:
            con.execute("create database shop")
            con.execute("create database archive")
        with psycopg.connect(server.dsn(database="archive"), autocommit=True) as con:
            con.execute("create table old_invoice (invoice_no int primary key, total numeric)")
            con.execute("comment on table old_invoice is 'invoices before 2010'")
        with psycopg.connect(server.dsn(database="shop"), autocommit=True) as con:
            for sql in SETUP:
                con.execute(sql)
        yield server


def _fingerprint(pg) -> str:
    with psycopg.connect(pg.dsn(database="shop")) as con:
        return con.execute(FINGERPRINT).fetchone()[0]


def _source(pg, **kw) -> ServerSource:
    return ServerSource(url=f"postgresql+psycopg://reader:${{PG_TEST_PW}}@{pg.host}:{pg.port}/shop",
                        env={"PG_TEST_PW": READER_PW}, **kw)


def test_reads_schemas_comments_keys_views_and_samples(pg):
    before = _fingerprint(pg)
    snaps, issues = read_server(_source(pg, schemas=("public", "sales", "hr")), n_samples=5, chars=60)
    assert issues == [] and len(snaps) == 1
    snap = snaps[0]
    assert snap.db_id == "shop" and snap.source_type == "url"
    tables = {t.name: t for t in snap.tables}
    # the default schema's tables keep their bare name, the others are schema-qualified
    assert set(tables) == {"settings", "sales.customer", "sales.Order Items", "sales.paris_customers",
                           "sales.empty_table", "hr.employee"}
    assert tables["sales.paris_customers"].kind == "view" and tables["sales.customer"].kind == "table"
    emp = tables["hr.employee"]
    assert emp.description == "People on the payroll"
    cols = {c.name: c for c in emp.columns}
    assert cols["full_name"].description == "First and last name" and cols["emp_id"].is_primary_key
    assert sorted(cols["full_name"].samples) == ["Ada Lovelace", "Alan Turing"]
    assert [c.name for c in tables["sales.Order Items"].columns] == ["Order ID", "Qty", "unit price", "sold_by",
                                                                    "customer"]
    assert tables["sales.Order Items"].columns[2].data_type.startswith("numeric")
    assert sorted(tables["sales.customer"].columns[2].samples) == ["Berlin", "Paris"]
    assert tables["sales.customer"].row_count == 3
    # foreign keys, also across schemas
    fks = {(f.table, f.column, f.ref_table, f.ref_column) for f in snap.foreign_keys}
    assert fks == {("sales.Order Items", "sold_by", "hr.employee", "emp_id"),
                   ("sales.Order Items", "customer", "sales.customer", "customer_id")}
    # a table the role may not read is reported by name, the rest still read
    found = {(i.object_name, i.message.split(" (")[0]) for i in snap.issues}
    assert found == {("hr.salaries", "cannot read table")}
    assert tables["sales.empty_table"].row_count == 0
    # the secret appears nowhere; the stored source is the URL as written
    assert READER_PW not in repr(snaps) and "${PG_TEST_PW}" in snap.source_path
    assert _fingerprint(pg) == before


def test_filters_and_one_database_per_schema(pg):
    snaps, _ = read_server(_source(pg, schemas=("sales", "hr"), per_schema=True,
                                   exclude_tables=("empty_*", "hr.salaries"), include_tables=()),
                           n_samples=0, chars=60)
    by_id = {s.db_id: s for s in snaps}
    assert set(by_id) == {"sales", "hr"}
    assert {t.name for t in by_id["sales"].tables} == {"customer", "Order Items", "paris_customers"}
    assert {t.name for t in by_id["hr"].tables} == {"employee"}
    assert all(not c.samples for t in by_id["sales"].tables for c in t.columns)
    only, _ = read_server(_source(pg, id="crm", schemas=("sales",), include_tables=("customer",)), 3, 60)
    assert [(s.db_id, [t.name for t in s.tables]) for s in only] == [("crm", ["customer"])]


def test_one_source_names_several_databases(pg):
    with psycopg.connect(pg.dsn(database="archive"), autocommit=True) as con:
        con.execute("grant select on old_invoice to reader")
    snaps, issues = read_server(_source(pg, id="corp", databases=("shop", "archive")), 0, 60)
    by_id = {s.db_id: s for s in snaps}
    assert issues == [] and set(by_id) == {"corp_shop", "corp_archive"}
    assert [(t.name, t.description) for t in by_id["corp_archive"].tables] == [("old_invoice", "invoices before 2010")]
    # every non-system schema by default; the default schema's tables keep bare names
    assert {t.name for t in by_id["corp_shop"].tables} == {"settings", "sales.customer", "sales.Order Items",
                                                          "sales.paris_customers", "sales.empty_table", "hr.employee"}
    assert by_id["corp_shop"].source_path.endswith("/shop search_path public")


def test_bad_sources_are_reported_not_raised(pg):
    from dbrouter.errors import SourceError

    wrong_pw = ServerSource(url=f"postgresql+psycopg://reader:${{PG_TEST_PW}}@{pg.host}:{pg.port}/shop",
                            env={"PG_TEST_PW": "not-the-password"})
    snaps, issues = read_server(wrong_pw, 3, 60)
    assert snaps == [] and len(issues) == 1 and issues[0].severity == "error"
    assert "password authentication failed" in issues[0].message and "not-the-password" not in issues[0].message
    missing_schema, issues = read_server(_source(pg, schemas=("nope",)), 3, 60)
    assert missing_schema == [] and "schema 'nope' not found" in issues[0].message and "sales" in issues[0].message
    with pytest.raises(SourceError, match="PG_TEST_PW"):
        read_server(ServerSource(url="postgresql+psycopg://reader:${PG_TEST_PW}@127.0.0.1/shop", env={}), 3, 60)
    down, issues = read_server(ServerSource(url="postgresql+psycopg://reader@127.0.0.1:1/shop", env={}), 3, 60)
    assert down == [] and issues[0].severity == "error" and "127.0.0.1" in issues[0].message


def test_sessions_are_read_only(pg):
    import sqlalchemy

    from dbrouter.redaction import expand_url
    from dbrouter.sources.url import make_engine

    engine = make_engine(expand_url(_source(pg).url, {"PG_TEST_PW": READER_PW}))
    with engine.connect() as con, pytest.raises(sqlalchemy.exc.InternalError, match="read-only transaction"):
        con.execute(sqlalchemy.text("create temp table t (x int)"))
    engine.dispose()


def test_build_and_refresh_from_a_url_source(pg, tmp_path):
    """`dbrouter build` and `dbrouter refresh` with a `type: url` entry in sources.yml."""
    import duckdb

    from tests.conftest import run_cli

    sources = tmp_path / "sources.yml"
    sources.write_text(
        "databases:\n"
        f"  - {{type: url, url: 'postgresql+psycopg://reader:${{PG_TEST_PW}}@{pg.host}:{pg.port}/shop',\n"
        "     schemas: [public, sales, hr], description: 'the shop database'}\n")
    wh = tmp_path / "kb.duckdb"
    env = {"PG_TEST_PW": READER_PW}
    before = _fingerprint(pg)
    proc = run_cli("build", "--sources", str(sources), "--warehouse", str(wh), env=env)
    log = proc.stdout + proc.stderr
    # every problem is in the summary line, and named above it
    assert "0 errors, 2 warnings" in log and "sales.empty_table: table is empty" in log
    assert "hr.salaries: cannot read table" in log
    con = duckdb.connect(str(wh), read_only=True)
    try:
        kinds = dict(con.execute("select table_name, table_kind from kb_tables where db_id = 'shop'").fetchall())
        desc = con.execute("select column_description from kb_columns where column_key = 'shop.hr.employee.full_name'"
                           ).fetchall()
        fks = con.execute("select column_key, ref_column_key from kb_foreign_keys order by 1").fetchall()
        source = con.execute("select source_path from kb_databases").fetchall()
    finally:
        con.close()
    assert kinds["sales.paris_customers"] == "view" and kinds["hr.employee"] == "table"
    assert desc == [("First and last name",)]
    assert ("shop.sales.Order Items.sold_by", "shop.hr.employee.emp_id") in fks
    assert "${PG_TEST_PW}" in source[0][0]
    assert READER_PW.encode() not in wh.read_bytes() and READER_PW not in log
    assert _fingerprint(pg) == before

    # the first refresh records the fingerprints; then nothing changed: it exits without dbt;
    # a new table: it rebuilds
    run_cli("refresh", "--sources", str(sources), "--warehouse", str(wh), env=env)
    quiet = run_cli("refresh", "--sources", str(sources), "--warehouse", str(wh), env=env)
    assert "no schema change in 1 databases" in quiet.stderr and "building" not in quiet.stderr
    with psycopg.connect(pg.dsn(database="shop"), autocommit=True) as con:
        con.execute("create table sales.warehouse_robot (robot_id int primary key, battery_level int)")
        con.execute("grant select on sales.warehouse_robot to reader")
    changed = run_cli("refresh", "--sources", str(sources), "--warehouse", str(wh), env=env)
    assert "1 of 1 databases changed since" in changed.stderr and "changed  shop" in changed.stderr
    con = duckdb.connect(str(wh), read_only=True)
    try:
        assert con.execute("select count(*) from kb_tables where table_name = 'sales.warehouse_robot'").fetchone() == (1,)
    finally:
        con.close()


def test_samples_do_not_depend_on_the_query_plan(pg):
    """Before: samples were the first distinct values the plan produced; after a bare ANALYZE (or a
    new index) PostgreSQL could pick another plan and another order, and `refresh` re-embedded."""
    with psycopg.connect(pg.dsn(database="shop"), autocommit=True) as con:
        con.execute("create table public.cities (city_id int primary key, city text)")
        con.execute("insert into public.cities select g, 'city ' || ((g * 7919) % 1000) from generate_series(1, 3000) g")
        con.execute("grant select on public.cities to reader")
    src = _source(pg, schemas=("public",), include_tables=("cities",))
    first, _ = read_server(src, 5, 60)
    with psycopg.connect(pg.dsn(database="shop"), autocommit=True) as con:
        con.execute("create index on public.cities (city)")
        con.execute("analyze public.cities")
    second, _ = read_server(src, 5, 60)
    samples = {c.name: c.samples for c in first[0].tables[0].columns}
    assert samples == {c.name: c.samples for c in second[0].tables[0].columns}
    assert samples["city"] == ["city 0", "city 1", "city 10", "city 100", "city 101"]  # smallest, not first
