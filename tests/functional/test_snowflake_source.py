"""`dbrouter ingest` reading a Snowflake database (fakesnow server): tables, columns, a table
comment, primary keys, bounded samples; the source is unchanged afterwards and the secret appears
nowhere. fakesnow keeps no column comments and its SHOW IMPORTED KEYS names no referenced table, so
column comments and foreign keys are read as on Snowflake but not verified here."""

from __future__ import annotations

import duckdb
import pytest

from dbrouter.kb.refresh import fingerprint_sources
from dbrouter.sources.config import load_sources
from tests.conftest import run_cli
from tests.fakesnow_server import connect, running_fakesnow

SOURCE_DDL = [
    "create database if not exists SHOPDB",
    "create schema if not exists SHOPDB.SALES",
    "create or replace table SHOPDB.SALES.CUSTOMER (ID number primary key, NAME varchar, CITY varchar) "
    "comment = 'people who buy'",
    "create or replace table SHOPDB.SALES.ORDERS (ORDER_ID number primary key, CUSTOMER_ID number, AMOUNT float)",
    "insert into SHOPDB.SALES.CUSTOMER values (1, 'Ann', 'Oslo'), (2, 'Bob', 'Rome'), (3, 'Cy', 'Oslo'), "
    "(4, 'Di', null)",
    "insert into SHOPDB.SALES.ORDERS values (10, 1, 9.5), (11, 2, 20), (12, 1, 3)",
    "create schema if not exists SHOPDB.OTHER",
    "create or replace table SHOPDB.OTHER.NOT_READ (X number)",
]


def _state(conn) -> list:
    """Everything a write could change: tables, columns, comments and all rows."""
    cur = conn.cursor()
    out = [cur.execute("select table_schema, table_name, comment from SHOPDB.information_schema.tables "
                       "where table_schema <> 'INFORMATION_SCHEMA' order by 1, 2").fetchall(),
           cur.execute("select table_schema, table_name, column_name, data_type, comment "
                       "from SHOPDB.information_schema.columns order by 1, 2, 3").fetchall()]
    for table in ("SALES.CUSTOMER", "SALES.ORDERS", "OTHER.NOT_READ"):
        out.append(cur.execute(f"select * from SHOPDB.{table} order by 1").fetchall())
    return out


def _fingerprint(config, env: dict) -> object:
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        return fingerprint_sources(config)


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    work = tmp_path_factory.mktemp("sf_source")
    with running_fakesnow(work) as server:
        conn = connect(server)
        for sql in SOURCE_DDL:
            conn.cursor().execute(sql)
        before = _state(conn)
        (work / "sources.yml").write_text(
            "sample_values: 2\n"
            "databases:\n"
            f"  - {{type: snowflake, id: shop, database: SHOPDB, schemas: [SALES], account: fakesnow, user: fake,\n"
            f"     host: 127.0.0.1, port: {server['port']}, protocol: http, password_env: SHOP_SF_PASSWORD,\n"
            "     description: the web shop}\n")
        proc = run_cli("ingest", "--sources", str(work / "sources.yml"), "--warehouse", str(work / "kb.duckdb"),
                       env={"SHOP_SF_PASSWORD": server["password"]})
        after = _state(conn)
        config = load_sources(work / "sources.yml")
        with_env = {"SHOP_SF_PASSWORD": server["password"]}
        prints = [_fingerprint(config, with_env), _fingerprint(config, with_env)]
        conn.cursor().execute("alter table SHOPDB.SALES.ORDERS add column NOTE varchar")
        prints.append(_fingerprint(config, with_env))
        conn.close()
    with duckdb.connect(str(work / "kb.duckdb"), read_only=True) as con:
        raw = {name: con.execute(f"select * from dbrouter_raw.{name}").fetchall()
               for name in ("databases", "tables", "columns", "foreign_keys", "issues")}
        cols = {(r[1], r[2]): r for r in raw["columns"]}
    yield {"proc": proc, "before": before, "after": after, "raw": raw, "cols": cols, "server": server,
           "prints": prints}


def test_tables_columns_comments_and_keys_are_read(ingested):
    raw = ingested["raw"]
    assert [(r[0], r[1], r[2]) for r in raw["databases"]] == [("shop", "snowflake", "snowflake://fakesnow/SHOPDB")]
    assert raw["databases"][0][3] == "the web shop"
    tables = {r[1]: r for r in raw["tables"]}
    assert set(tables) == {"CUSTOMER", "ORDERS"}  # schema OTHER is not listed in `schemas`
    assert tables["CUSTOMER"][2:5] == ("customer", "people who buy", 4)
    cols = ingested["cols"]
    assert [c for (t, c) in sorted(cols, key=lambda k: (k[0], cols[k][4])) if t == "CUSTOMER"] == ["ID", "NAME", "CITY"]
    assert cols[("CUSTOMER", "ID")][5:7] == ("number", True)
    # column comments come from INFORMATION_SCHEMA.COLUMNS.COMMENT, which fakesnow leaves empty:
    # only the table comment is checked here
    assert cols[("CUSTOMER", "NAME")][3] == "name" and cols[("CUSTOMER", "NAME")][7] is None
    assert cols[("ORDERS", "CUSTOMER_ID")][6] is False


def test_samples_are_bounded_distinct_and_skip_nulls(ingested):
    city = ingested["cols"][("CUSTOMER", "CITY")][9]
    assert len(city) == 2 and set(city) <= {"Oslo", "Rome"} and len(set(city)) == 2
    assert ingested["cols"][("ORDERS", "AMOUNT")][9]  # numbers become text samples


def test_source_is_unchanged_and_the_secret_is_nowhere(ingested):
    assert ingested["before"] == ingested["after"]
    secret = ingested["server"]["password"]
    assert secret not in ingested["proc"].stdout + ingested["proc"].stderr
    assert secret not in repr(ingested["raw"])


def test_unreachable_snowflake_source_is_an_error_naming_it_not_the_secret(tmp_path):
    (tmp_path / "sources.yml").write_text(
        "databases:\n  - {type: snowflake, id: gone, database: X, account: fakesnow, user: fake, host: 127.0.0.1,\n"
        "     port: 9, protocol: http, password_env: GONE_SF_PASSWORD}\n")
    proc = run_cli("ingest", "--sources", str(tmp_path / "sources.yml"), "--warehouse", str(tmp_path / "kb.duckdb"),
                   env={"GONE_SF_PASSWORD": "do-not-print-me"}, check=False)
    out = proc.stdout + proc.stderr
    assert "gone" in out and "cannot connect to Snowflake database X" in out
    assert "do-not-print-me" not in out


def test_refresh_fingerprint_is_stable_and_sees_a_new_column(ingested):
    first, again, changed = ingested["prints"]
    assert first.unreadable == {} and set(first.databases) == {"shop"}
    assert first.databases == again.databases
    assert changed.databases["shop"] != first.databases["shop"]
