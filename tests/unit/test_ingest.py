import json
import sqlite3

import duckdb

from dbrouter.ingest import ingest
from dbrouter.sources import SourceSpec, SourcesConfig


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
    from dbrouter.warehouse import connect

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
