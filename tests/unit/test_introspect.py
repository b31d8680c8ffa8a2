import json
import re
import sqlite3

import pytest

from dbrouter.errors import SourceError
from dbrouter.introspect import (DatabaseSnapshot, ForeignKey, TableInfo, ColumnInfo, check_foreign_keys,
                                 label_of, read_duckdb, read_schema_json, read_sqlite)
from dbrouter.sources import SourceSpec


def make_sqlite(path):
    con = sqlite3.connect(path)
    con.executescript("""
        create table artist (artist_id int primary key, name text);
        create table album (album_id int primary key, title text, artist_id int references artist(artist_id));
        create table empty_looking (x text);
    """)
    con.executemany("insert into artist values (?, ?)", [(i, f"artist {i} " + "z" * 100) for i in range(20)])
    con.commit()
    con.close()


def test_label_of():
    assert label_of("HomeTown_ID") == "home town id"
    assert label_of("song_release_year") == "song release year"


def test_read_sqlite_reads_keys_counts_and_bounded_samples(tmp_path):
    make_sqlite(tmp_path / "m.sqlite")
    snap = read_sqlite(SourceSpec("sqlite", tmp_path / "m.sqlite"), "m", 5, 60)
    tables = {t.name: t for t in snap.tables}
    assert tables["artist"].row_count == 20
    name = next(c for c in tables["artist"].columns if c.name == "name")
    assert len(name.samples) == 5 and all(len(s) <= 60 for s in name.samples)
    assert next(c for c in tables["artist"].columns if c.name == "artist_id").is_primary_key
    assert [(f.table, f.column, f.ref_table, f.ref_column) for f in snap.foreign_keys] == [
        ("album", "artist_id", "artist", "artist_id")]


def test_read_sqlite_is_read_only(tmp_path):
    make_sqlite(tmp_path / "m.sqlite")
    before = (tmp_path / "m.sqlite").read_bytes()
    read_sqlite(SourceSpec("sqlite", tmp_path / "m.sqlite"), "m", 5, 60)
    assert (tmp_path / "m.sqlite").read_bytes() == before


def test_unreadable_sources_raise_source_error_naming_the_database(tmp_path):
    (tmp_path / "bad.sqlite").write_text("this is not a database")
    with pytest.raises(SourceError, match="'bad'.*cannot open"):
        read_sqlite(SourceSpec("sqlite", tmp_path / "bad.sqlite"), "bad", 5, 60)
    with pytest.raises(SourceError, match="not found"):
        read_sqlite(SourceSpec("sqlite", tmp_path / "missing.sqlite"), "missing", 5, 60)


def test_read_duckdb_reads_comments_and_constraints(tmp_path):
    import duckdb

    path = tmp_path / "d.duckdb"
    con = duckdb.connect(str(path))
    con.execute("create table store (store_id integer primary key, name varchar)")
    con.execute("create table sale (sale_id integer primary key, store_id integer references store(store_id), amount double)")
    con.execute("comment on table store is 'physical shops'")
    con.execute("comment on column sale.amount is 'gross amount in euro'")
    con.execute("insert into store values (1, 'Main'), (2, 'Harbour')")
    con.close()
    snap = read_duckdb(SourceSpec("duckdb", path), "d", 5, 60)
    tables = {t.name: t for t in snap.tables}
    assert tables["store"].description == "physical shops"
    amount = next(c for c in tables["sale"].columns if c.name == "amount")
    assert amount.description == "gross amount in euro"
    assert set(next(c for c in tables["store"].columns if c.name == "name").samples) == {"Main", "Harbour"}
    assert [(f.table, f.ref_table) for f in snap.foreign_keys] == [("sale", "store")]


def test_schema_json_and_malformed_parts(tmp_path):
    obj = {"db_id": "hr", "tables": [
        {"name": "emp", "label": "employee", "columns": [{"name": "id", "type": "number", "primary_key": True},
                                                         {"label": "no name"}]},
        {"label": "nameless"}],
        "foreign_keys": [{"table": "emp"}]}
    (tmp_path / "hr.jsonl").write_text(json.dumps(obj) + "\nnot json\n" + json.dumps({"tables": []}) + "\n")
    (snap,), bad = read_schema_json(SourceSpec("schema_json", tmp_path / "hr.jsonl"))
    assert [(i.object_name.split(":")[-1], i.severity) for i in bad] == [("2", "error"), ("3", "error")]
    assert "not valid JSON" in bad[0].message and "needs `db_id`" in bad[1].message
    assert snap.db_id == "hr" and [t.name for t in snap.tables] == ["emp"]
    assert len(snap.tables[0].columns) == 1
    messages = " | ".join(i.message for i in snap.issues)
    assert "table without a name" in messages and "column without a name" in messages
    assert "malformed foreign key" in messages


def test_schema_json_invalid_json(tmp_path):
    (tmp_path / "x.json").write_text("{not json")
    snaps, bad = read_schema_json(SourceSpec("schema_json", tmp_path / "x.json"))
    assert snaps == [] and "not valid JSON" in bad[0].message


def test_check_foreign_keys_drops_dangling_edges_with_issue():
    snap = DatabaseSnapshot("db", "sqlite", "x", tables=[
        TableInfo("a", "a", [ColumnInfo("b_id", "b id", 1, "int")])],
        foreign_keys=[ForeignKey("a", "b_id", "b", "id"), ForeignKey("A", "B_ID", "a", "b_id")])
    check_foreign_keys(snap)
    assert [(f.table, f.ref_table) for f in snap.foreign_keys] == [("A", "a")]
    assert "missing table 'b'" in snap.issues[0].message and snap.issues[0].db_id == "db"


@pytest.mark.parametrize("table, message", [
    ({"name": 42}, r"tables\[0\].name must be a string, got 42 \(int\)"),
    ({"name": "t", "label": ["x"]}, r"tables\[0\].label must be a string"),
    ({"name": "t", "columns": "abc"}, r"tables\[0\].columns must be a list"),
    ({"name": "t", "columns": [{"name": "c", "type": 5}]}, r"tables\[0\].columns\[0\].type must be a string"),
    ({"name": "t", "columns": [{"name": "c", "primary_key": "yes"}]},
     r"columns\[0\].primary_key must be true or false, got \"yes\""),
    ({"name": "t", "columns": [{"name": {"x": 1}}]}, r"columns\[0\].name must be a string"),
    ({"name": "t", "columns": ["c"]}, r"columns\[0\] must be an object"),
    ({"name": "t", "columns": [{"name": "c", "samples": "abc"}]}, r"columns\[0\].samples must be a list"),
    ("t", r"tables\[0\] must be an object"),
])
def test_schema_json_wrong_types_leave_that_database_out_with_its_place(tmp_path, table, message):
    """Before: label_of(42) etc. raised TypeError/AttributeError and aborted the whole ingest."""
    lines = [json.dumps({"db_id": "bad", "tables": [table]}),
             json.dumps({"db_id": "good", "tables": [{"name": "t", "columns": [{"name": "c"}]}]})]
    (tmp_path / "s.jsonl").write_text("\n".join(lines) + "\n")
    snaps, bad = read_schema_json(SourceSpec("schema_json", tmp_path / "s.jsonl"))
    assert [s.db_id for s in snaps] == ["good"]
    assert [(i.db_id, i.severity) for i in bad] == [("bad", "error")]
    assert re.search(message, bad[0].message), bad[0].message
    assert "fix the schema file" in bad[0].message or "must be an object" in bad[0].message


def test_schema_json_db_id_must_be_a_string(tmp_path):
    (tmp_path / "s.json").write_text(json.dumps({"db_id": ["x"], "tables": []}))
    snaps, bad = read_schema_json(SourceSpec("schema_json", tmp_path / "s.json"))
    assert snaps == [] and "`db_id` (a string)" in bad[0].message


def test_schema_json_latin1_byte_is_an_issue_for_that_line_only(tmp_path):
    """Before: read_text(encoding='utf-8') raised UnicodeDecodeError out of the ingest."""
    good = json.dumps({"db_id": "good", "tables": [{"name": "t", "columns": [{"name": "c"}]}]}).encode()
    bad = b'{"db_id": "caf\xe9", "tables": []}'
    (tmp_path / "s.jsonl").write_bytes(bad + b"\n" + good + b"\n")
    snaps, issues = read_schema_json(SourceSpec("schema_json", tmp_path / "s.jsonl"))
    assert [s.db_id for s in snaps] == ["good"]
    assert issues[0].object_name.endswith("s.jsonl:1") and issues[0].severity == "error"
    assert "not valid UTF-8 (byte 0xe9" in issues[0].message
    (tmp_path / "one.json").write_bytes(bad)
    snaps, issues = read_schema_json(SourceSpec("schema_json", tmp_path / "one.json"))
    assert snaps == [] and "file is not valid UTF-8 (byte 0xe9" in issues[0].message


def _wal_sqlite(path):
    con = sqlite3.connect(path)
    con.execute("pragma journal_mode=wal")
    con.executescript("create table t (id int primary key, x text); insert into t values (1, 'a');")
    con.close()  # the last connection checkpoints and removes -wal/-shm


def test_wal_sqlite_source_gets_no_files_beside_it_and_is_unchanged(tmp_path):
    """Before: mode=ro on a WAL database created t.sqlite-shm and t.sqlite-wal next to the source."""
    src = tmp_path / "w #1?.sqlite"  # characters that need quoting in a file: URI
    _wal_sqlite(src)
    before = src.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == [src.name]
    snap = read_sqlite(SourceSpec("sqlite", src), "w", 5, 60)
    assert [t.name for t in snap.tables] == ["t"] and snap.tables[0].columns[1].samples == ["a"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [src.name]
    assert src.read_bytes() == before


def test_duckdb_source_is_opened_read_only(tmp_path):
    import duckdb

    path = tmp_path / "d.duckdb"
    con = duckdb.connect(str(path))
    con.execute("create table t (id integer)")
    con.close()
    before = path.read_bytes()
    read_duckdb(SourceSpec("duckdb", path), "d", 5, 60)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.duckdb"] and path.read_bytes() == before


def test_references_without_column_resolve_to_the_primary_key_or_are_reported(tmp_path):
    """Before: `REFERENCES ghost` became ghost.id (the referencing table's own key), a column that
    does not exist; `REFERENCES owner` with a 2-column key picked an arbitrary column."""
    con = sqlite3.connect(tmp_path / "f.sqlite")
    con.executescript("""
        create table id_holder (id int);
        create table person (pid int primary key, name text);
        create table pair (a int, b int, primary key (a, b));
        create table nokey (x int);
        create table pet (id int primary key, owner int references person, ghost_id int references ghost,
                          pair_a int, pair_b int, nk int references nokey,
                          foreign key (pair_a, pair_b) references pair);
    """)
    con.close()
    snap = read_sqlite(SourceSpec("sqlite", tmp_path / "f.sqlite"), "f", 0, 60)
    check_foreign_keys(snap)
    assert sorted((f.table, f.column, f.ref_table, f.ref_column) for f in snap.foreign_keys) == [
        ("pet", "owner", "person", "pid"), ("pet", "pair_a", "pair", "a"), ("pet", "pair_b", "pair", "b")]
    issues = {i.object_name: i.message for i in snap.issues}
    assert "missing table 'ghost'" in issues["pet.ghost_id -> ghost"]
    assert "names no referenced column and table 'nokey' has no primary key" in issues["pet.nk -> nokey"]


def test_schema_json_foreign_key_without_ref_column_uses_the_single_primary_key(tmp_path):
    obj = {"db_id": "j", "tables": [
        {"name": "a", "columns": [{"name": "id", "primary_key": True}]},
        {"name": "b", "columns": [{"name": "a_ref"}]}],
        "foreign_keys": [{"table": "b", "column": "a_ref", "ref_table": "a"},
                         {"table": "b", "column": "a_ref", "ref_table": 7}]}
    (tmp_path / "j.json").write_text(json.dumps(obj))
    (snap,), _ = read_schema_json(SourceSpec("schema_json", tmp_path / "j.json"))
    check_foreign_keys(snap)
    assert [(f.table, f.ref_table, f.ref_column) for f in snap.foreign_keys] == [("b", "a", "id")]
    assert "malformed foreign key" in snap.issues[0].message


def test_uncheckpointed_wal_file_is_reported(tmp_path):
    src = tmp_path / "live.sqlite"
    _wal_sqlite(src)
    writer = sqlite3.connect(src)
    try:
        writer.execute("pragma wal_autocheckpoint=0")
        writer.execute("insert into t values (2, 'b')")
        writer.commit()  # committed to live.sqlite-wal, not yet to the file
        snap = read_sqlite(SourceSpec("sqlite", src), "live", 5, 60)
    finally:
        writer.close()
    assert any("live.sqlite-wal exists" in i.message and "not read" in i.message for i in snap.issues)


def test_views_are_read_like_tables_and_marked(tmp_path):
    import duckdb

    make_sqlite(tmp_path / "m.sqlite")
    con = sqlite3.connect(tmp_path / "m.sqlite")
    con.execute("create view famous_artist as select name from artist where artist_id < 3")
    con.commit()
    con.close()
    snap = read_sqlite(SourceSpec("sqlite", tmp_path / "m.sqlite"), "m", 5, 60)
    kinds = {t.name: t.kind for t in snap.tables}
    assert kinds == {"album": "table", "artist": "table", "empty_looking": "table", "famous_artist": "view"}
    view = next(t for t in snap.tables if t.name == "famous_artist")
    assert view.row_count == 3 and [c.name for c in view.columns] == ["name"] and len(view.columns[0].samples) == 3

    path = tmp_path / "d.duckdb"
    dcon = duckdb.connect(str(path))
    dcon.execute("create table store (store_id integer primary key, name varchar)")
    dcon.execute("create view big_store as select * from store where store_id > 1")
    dcon.execute("comment on view big_store is 'stores after the first'")
    dcon.close()
    snap = read_duckdb(SourceSpec("duckdb", path), "d", 5, 60)
    assert {(t.name, t.kind, t.description) for t in snap.tables} == {
        ("store", "table", None), ("big_store", "view", "stores after the first")}


def make_hostile_duckdb(path, secret_file):
    """The attack of issue 22, finding 1: views that read a local file and the process environment."""
    import duckdb

    con = duckdb.connect(str(path))
    con.execute("create table singer (name varchar)")
    con.execute("insert into singer values ('Joe')")
    con.execute(f"create view leak_file as select content from read_text('{secret_file}')")
    con.execute("create view leak_environ as select content from read_text('/proc/self/environ')")
    con.execute("create view leak_blob as select content::varchar as content from read_blob('/proc/self/environ')")
    con.close()


def test_hostile_duckdb_source_reads_no_file_and_no_environment(tmp_path, monkeypatch):
    """A view over read_text()/read_blob() must not put a file's content or a secret of the
    build's environment into the snapshot (kb_columns.sample_values), the refresh fingerprint or
    a query's rows: sources open with external access off and the configuration locked."""
    from dbrouter.execution import run_duckdb
    from dbrouter.ingest import collect_raw_rows
    from dbrouter.refresh import fingerprint_duckdb
    from dbrouter.sources import SourcesConfig

    secret_file = tmp_path / "secret.txt"
    secret_file.write_text("TOPSECRET-file-content")
    monkeypatch.setenv("DBROUTER_LLM_API_KEY", "sk-TOPSECRET-env")
    path = tmp_path / "hostile.duckdb"
    make_hostile_duckdb(path, secret_file)
    config = SourcesConfig(databases=[SourceSpec("duckdb", path)])
    snaps, _, _, rows = collect_raw_rows(config)
    dumped = json.dumps(rows, default=str)
    assert "TOPSECRET" not in dumped
    assert [t.name for t in snaps[0].tables] == ["singer"]  # the rest of the database is kept
    skipped = {i.object_name: i.message for i in snaps[0].issues}
    assert set(skipped) == {"leak_file", "leak_environ", "leak_blob"}
    assert all("file and network access off" in m for m in skipped.values())
    assert fingerprint_duckdb(path)  # catalog only: works, reads no file
    for view in ("leak_file", "leak_environ", "leak_blob"):
        result = run_duckdb(path, f"select * from {view}", 5, 10)
        assert result.error and not result.rows and "TOPSECRET" not in str(result.error)
    result = run_duckdb(path, "select current_setting('enable_external_access')", 5, 10)
    assert result.rows == [(False,)]
