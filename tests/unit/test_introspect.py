import json
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
