import json
import sqlite3

import duckdb

from dbrouter.kb.ingest import ingest
from dbrouter.sources.base import Issue, SourcesConfig, SourceSpec


def _db(path, ddl):
    con = sqlite3.connect(path)
    con.executescript(ddl)
    con.close()


def test_ingest_snapshot_replaces_previous_and_isolates_bad_sources(tmp_path):
    _db(tmp_path / "a.sqlite", "create table t (id int primary key, x text);")
    _db(tmp_path / "b.sqlite", "create table u (id int primary key, t_id int references missing(id));")
    (tmp_path / "broken.sqlite").write_text("garbage")
    ex = tmp_path / "ex.jsonl"
    ex.write_text(json.dumps({"db_id": "a", "question": "q?", "sql": "select 1"}) + "\nnot json\n")
    wh = tmp_path / "wh.duckdb"
    cfg = SourcesConfig([SourceSpec("sqlite", tmp_path / f"{n}.sqlite") for n in ("a", "b", "broken")],
                        examples=[ex])
    report = ingest(cfg, wh)
    assert report.databases == 2 and report.examples == 1
    msgs = [(i.db_id, i.severity, i.message) for i in report.issues]
    assert any(db == "broken" and sev == "error" for db, sev, _ in msgs)
    assert any(db == "b" and "missing table 'missing'" in m for db, _, m in msgs)
    assert any("line skipped" in m for _, _, m in msgs)
    # a removed database disappears on re-ingest
    ingest(SourcesConfig([SourceSpec("sqlite", tmp_path / "a.sqlite")]), wh)
    con = duckdb.connect(str(wh))
    assert con.execute("select db_id from dbrouter_raw.databases").fetchall() == [("a",)]
    assert con.execute("select count(*) from dbrouter_raw.examples").fetchall() == [(0,)]
    con.close()


def test_duplicate_database_ids_are_reported(tmp_path):
    (tmp_path / "x").mkdir()
    _db(tmp_path / "a.sqlite", "create table t (id int);")
    _db(tmp_path / "x" / "a.sqlite", "create table t (id int);")
    report = ingest(SourcesConfig([SourceSpec("sqlite", tmp_path / "a.sqlite"),
                                   SourceSpec("sqlite", tmp_path / "x" / "a.sqlite")]), tmp_path / "wh.duckdb")
    assert report.databases == 1
    assert any("duplicate database id" in i.message for i in report.issues)


def test_connect_explains_a_locked_or_missing_warehouse(tmp_path):
    import subprocess
    import sys

    import pytest

    from dbrouter.errors import WarehouseError
    from dbrouter.kb.connect import connect

    with pytest.raises(WarehouseError, match="not found"):
        connect(tmp_path / "none.duckdb")
    wh = tmp_path / "w.duckdb"
    duckdb.connect(str(wh)).close()
    holder = subprocess.Popen([sys.executable, "-c", f"import duckdb,time; c=duckdb.connect({str(wh)!r}); "
                               "print('ready', flush=True); time.sleep(30)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(WarehouseError, match="holds it for writing"):
            connect(wh)
    finally:
        holder.kill()


def _raw(wh, sql):
    con = duckdb.connect(str(wh), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_dotted_names_that_collide_leave_that_database_out_by_name(tmp_path):
    """Before: 0 ingest errors, then dbt's unique test on db.a.b.c failed and stopped the whole KB."""
    _db(tmp_path / "dots.sqlite", 'create table "a.b" (c int); create table "a" ("b.c" int); '
                                   'insert into "a.b" values (1); insert into "a" values (1);')
    _db(tmp_path / "ok.sqlite", "create table t (id int);")
    wh = tmp_path / "wh.duckdb"
    report = ingest(SourcesConfig([SourceSpec("sqlite", tmp_path / "dots.sqlite"),
                                   SourceSpec("sqlite", tmp_path / "ok.sqlite")]), wh)
    (err,) = [i for i in report.issues if i.severity == "error"]
    assert err.db_id == "dots"
    assert "table 'a' column 'b.c' and table 'a.b' column 'c' both give the column key 'dots.a.b.c'" in err.message
    assert "Rename" in err.message and "exclude_tables" in err.message and "left out" in err.message
    assert report.databases == 1 and "1 errors" in report.summary()
    assert _raw(wh, "select distinct db_id from dbrouter_raw.columns") == [("ok",)]
    # leaving one of the tables out makes the rest of the database load
    report = ingest(SourcesConfig([SourceSpec("sqlite", tmp_path / "dots.sqlite", exclude_tables=("a.b",))]),
                    wh)
    assert report.databases == 1 and not report.issues
    assert _raw(wh, "select table_name, column_name from dbrouter_raw.columns") == [("a", "b.c")]


def test_schema_json_duplicate_tables_and_columns_are_errors(tmp_path):
    dbs = [{"db_id": "dupcol", "tables": [{"name": "t", "columns": [{"name": "x"}, {"name": "x"}]}]},
           {"db_id": "duptab", "tables": [{"name": "t", "columns": [{"name": "x"}]}, {"name": "t", "columns": []}]},
           {"db_id": "case", "tables": [{"name": "T", "columns": [{"name": "x"}, {"name": "X"}]},
                                        {"name": "t", "columns": [{"name": "x"}]}]}]
    (tmp_path / "s.jsonl").write_text("\n".join(json.dumps(d) for d in dbs) + "\n")
    report = ingest(SourcesConfig([SourceSpec("schema_json", tmp_path / "s.jsonl")]), tmp_path / "wh.duckdb")
    errors = {i.db_id: i.message for i in report.issues if i.severity == "error"}
    assert "column 'x' appears 2 times in table 't'" in errors["dupcol"]
    assert "table 't' appears 2 times" in errors["duptab"]
    assert "case" not in errors and report.databases == 1  # keys differ in case only: distinct strings


def test_a_database_whose_keys_meet_another_database_is_left_out(tmp_path):
    dbs = [{"db_id": "x", "tables": [{"name": "y.t", "columns": [{"name": "c"}]}]},
           {"db_id": "x.y", "tables": [{"name": "t", "columns": [{"name": "c"}]}]},
           {"db_id": "x", "tables": [{"name": "other", "columns": [{"name": "c"}]}]}]
    (tmp_path / "s.jsonl").write_text("\n".join(json.dumps(d) for d in dbs) + "\n")
    report = ingest(SourcesConfig([SourceSpec("schema_json", tmp_path / "s.jsonl")]), tmp_path / "wh.duckdb")
    errors = [(i.db_id, i.message) for i in report.issues if i.severity == "error"]
    assert errors[0][0] == "x.y" and "key 'x.y.t', which database 'x' (table 'y.t') already has" in errors[0][1]
    assert errors[1][0] == "x" and "duplicate database id" in errors[1][1] and "s.jsonl:1" in errors[1][1]
    assert report.databases == 1
    # the other order: the database kept first wins, the later one is named
    (tmp_path / "s.jsonl").write_text("\n".join(json.dumps(d) for d in dbs[1::-1]) + "\n")
    report = ingest(SourcesConfig([SourceSpec("schema_json", tmp_path / "s.jsonl")]), tmp_path / "wh.duckdb")
    (err,) = [i for i in report.issues if i.severity == "error"]
    assert err.db_id == "x" and "table 'y.t' gives the key 'x.y.t', which database 'x.y' (table 't')" in err.message


def test_key_collisions_through_arrows_in_names():
    from dbrouter.kb.ingest import key_collisions
    from dbrouter.sources.base import ColumnInfo, DatabaseSnapshot, TableInfo

    tables = [TableInfo(n, n, [ColumnInfo("id", "id", 1, "int")]) for n in ("a", "a->b", "b->c", "c")]
    found = key_collisions(DatabaseSnapshot("db", "schema_json", "x", tables=tables))
    assert any("'db.a' -> 'b->c' and 'db.a->b' -> 'c' both give 'db.a->b->c'" in f for f in found)
    plain = [TableInfo(n, n, [ColumnInfo("id", "id", 1, "int")]) for n in ("a", "b.c", "a.b")]
    assert key_collisions(DatabaseSnapshot("db", "schema_json", "x", tables=plain)) == []


def test_empty_database_is_kept_with_a_warning_naming_it(tmp_path):
    _db(tmp_path / "empty.sqlite", "")
    (tmp_path / "empty.sqlite").touch()
    (tmp_path / "s.json").write_text(json.dumps({"db_id": "nothing", "tables": []}))
    report = ingest(SourcesConfig([SourceSpec("sqlite", tmp_path / "empty.sqlite"),
                                   SourceSpec("schema_json", tmp_path / "s.json")]), tmp_path / "wh.duckdb")
    warnings = {i.db_id: i.message for i in report.issues if i.severity == "warning"}
    assert "has no tables" in warnings["empty"] and "has no tables" in warnings["nothing"]
    assert report.databases == 2 and "0 errors, 2 warnings" in report.summary()


def test_a_reader_crash_is_an_error_for_that_source_only(tmp_path, monkeypatch):
    from dbrouter.sources.registry import SOURCE_TYPES

    sqlite = SOURCE_TYPES["sqlite"]
    real = sqlite.read

    def flaky(spec, *rest):
        if spec.path.stem == "bad":
            raise RuntimeError("boom\nsecond line")
        return real(spec, *rest)

    monkeypatch.setattr(sqlite, "read", flaky)
    _db(tmp_path / "bad.sqlite", "create table t (id int);")
    _db(tmp_path / "good.sqlite", "create table t (id int); insert into t values (1);")
    report = ingest(SourcesConfig([SourceSpec("sqlite", tmp_path / n) for n in ("bad.sqlite", "good.sqlite")]),
                    tmp_path / "wh.duckdb")
    assert report.databases == 1
    (err,) = report.issues
    assert err.db_id == "bad" and "RuntimeError: boom second line" in err.message


def test_examples_file_bad_bytes_and_types_skip_lines_only(tmp_path):
    """Before: a latin-1 byte raised UnicodeDecodeError out of the ingest; {"question": 42} was loaded as '42'."""
    _db(tmp_path / "a.sqlite", "create table t (id int);")
    ex = tmp_path / "ex.jsonl"
    ex.write_bytes(b'{"db_id": "a", "question": "caf\xe9?", "sql": "select 1"}\n'
                   + json.dumps({"db_id": "a", "question": 42, "sql": "select 1"}).encode() + b"\n"
                   + json.dumps({"db_id": "a", "question": "ok?", "sql": "select 1"}).encode() + b"\n")
    st = tmp_path / "st.jsonl"
    st.write_bytes(b'\xff\n' + json.dumps({"db_id": "a", "statement": "x refers to t.id"}).encode() + b"\n")
    report = ingest(SourcesConfig([SourceSpec("sqlite", tmp_path / "a.sqlite")], examples=[ex], statements=[st]),
                    tmp_path / "wh.duckdb")
    assert report.examples == 1 and report.statements == 1
    msgs = {i.object_name.rsplit("/", 1)[-1]: i.message for i in report.issues}
    assert "not valid UTF-8 (byte 0xe9" in msgs["ex.jsonl:1"] and "question must be a string" in msgs["ex.jsonl:2"]
    assert "not valid UTF-8 (byte 0xff" in msgs["st.jsonl:1"]


def test_summary_counts_examples_and_statements_for_databases_not_ingested(tmp_path):
    """Before: kb_ingest_issues listed these warnings (35 from the shipped seeds) while the summary said 0."""
    _db(tmp_path / "a.sqlite", "create table t (id int); insert into t values (1);")
    ex = tmp_path / "ex.jsonl"
    ex.write_text("".join(json.dumps({"db_id": d, "question": q, "sql": "select 1"}) + "\n"
                          for d, q in (("a", "q?"), ("gone", "q2?"), ("gone", "  "), ("elsewhere", "q1"),
                                       ("elsewhere", "q1"))))
    st = tmp_path / "st.jsonl"
    st.write_text(json.dumps({"db_id": "elsewhere", "statement": "s refers to t.x"}) + "\n")
    wh = tmp_path / "wh.duckdb"
    report = ingest(SourcesConfig([SourceSpec("sqlite", tmp_path / "a.sqlite")], examples=[ex], statements=[st]), wh)
    objects = sorted((i.db_id, i.object_name) for i in report.issues)
    assert objects == [("elsewhere", "example: q1"), ("elsewhere", "statement: s refers to t.x"),
                       ("gone", "example: q2?")]
    assert report.summary().endswith("0 errors, 3 warnings")
    # the models add these rows to kb_ingest_issues themselves: not written twice
    assert _raw(wh, "select count(*) from dbrouter_raw.issues") == [(0,)]
    assert ingest(SourcesConfig([SourceSpec("sqlite", tmp_path / "a.sqlite")], examples=[ex]), wh).summary().endswith("0 errors, 2 warnings")


def test_print_issues_sums_up_examples_for_absent_databases():
    import io

    from dbrouter.kb.ingest import IngestReport, print_issues, unrouted_issues

    rows = [dict(db_id=f"db{i % 3}", question=f"q{i}", sql="s") for i in range(40)]
    report = IngestReport(issues=[Issue("x", "t", "error", "bad")] + unrouted_issues({"db0"}, rows, []))
    out = io.StringIO()
    print_issues(report, out, limit=5)
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["ERROR", "x", "/", "t:", "bad"]
    assert lines[1] == ("  WARNING 26 examples for databases that are not ingested, not used: db1, db2 "
                        "(each is listed in kb_ingest_issues)")
    assert len(lines) == 2 and report.summary().endswith("1 errors, 26 warnings")


def test_duckdb_schema_and_dotted_table_collide(tmp_path):
    path = tmp_path / "d.duckdb"
    con = duckdb.connect(str(path))
    con.execute('create schema s; create table s.t (x int); create table main."s.t" (x int); create table ok (x int)')
    con.close()
    report = ingest(SourcesConfig([SourceSpec("duckdb", path)]), tmp_path / "wh.duckdb")
    (err,) = report.issues
    assert err.db_id == "d" and "table 's.t' appears 2 times" in err.message and report.databases == 0


def test_empty_tables_are_reported(tmp_path):
    _db(tmp_path / "a.sqlite", "create table full_one (id int); insert into full_one values (1); "
                               "create table nothing_here (id int);")
    report = ingest(SourcesConfig([SourceSpec("sqlite", tmp_path / "a.sqlite")]), tmp_path / "wh.duckdb")
    assert [(i.object_name, i.severity, i.message) for i in report.issues] == [
        ("nothing_here", "warning", "table is empty: no sample values to route on")]
    assert report.summary().endswith("0 errors, 1 warnings")
