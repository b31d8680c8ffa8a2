"""Schema fingerprints of `dbrouter refresh`: stable, blind to rows, sensitive to schema; the
comparison with the record and the record's round trip (no dbt, no warehouse build)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import duckdb
import pytest

from dbrouter.refresh import (Fingerprints, compare, fingerprint_duckdb, fingerprint_schema_json,
                              fingerprint_sources, fingerprint_sqlite, load_record, record_path, write_record)
from dbrouter.sources import SourceSpec, load_sources


def _sqlite(path: Path, *sql: str) -> Path:
    con = sqlite3.connect(path)
    for statement in sql:
        con.execute(statement)
    con.commit()
    con.close()
    return path


@pytest.fixture()
def sq(tmp_path) -> Path:
    return _sqlite(tmp_path / "shop.sqlite",
                   "create table customer(id integer primary key, name text, city text)",
                   "create table orders(id integer primary key, customer_id int references customer(id), total real)",
                   "insert into customer values (1, 'Ada', 'Paris'), (2, 'Bob', 'Rome')",
                   "insert into orders values (1, 1, 9.5)")


def test_sqlite_fingerprint_is_stable_and_blind_to_rows(sq):
    first = fingerprint_sqlite(sq)
    assert len(first) == 64 and fingerprint_sqlite(sq) == first
    _sqlite(sq, "insert into customer values (3, 'Cy', 'Oslo')", "update orders set total = 1",
            "delete from customer where id = 2", "create index ix_city on customer(city)")
    con = sqlite3.connect(sq)
    con.execute("vacuum")
    con.close()
    assert fingerprint_sqlite(sq) == first


@pytest.mark.parametrize("change", [
    "create table planet(planet_id int primary key, planet_name text, moons int)",
    "alter table customer add column email text",
    "alter table customer rename column city to town",
    "create view big_orders as select * from orders where total > 5",
    "drop table orders",
])
def test_sqlite_fingerprint_sees_schema_changes(sq, change):
    before = fingerprint_sqlite(sq)
    _sqlite(sq, change)
    assert fingerprint_sqlite(sq) != before


def test_sqlite_fingerprint_sees_type_key_and_foreign_key_changes(tmp_path):
    base = "create table t(a {a_type} {pk}, b int {fk})"
    variants = [dict(a_type="int", pk="primary key", fk=""), dict(a_type="text", pk="primary key", fk=""),
                dict(a_type="int", pk="", fk=""), dict(a_type="int", pk="primary key", fk="references u(x)")]
    prints = []
    for i, v in enumerate(variants):
        path = _sqlite(tmp_path / f"v{i}.sqlite", "create table u(x int primary key)", base.format(**v))
        prints.append(fingerprint_sqlite(path))
    assert len(set(prints)) == len(prints)


def test_sqlite_fingerprint_of_a_broken_file_names_it(tmp_path):
    bad = tmp_path / "broken.sqlite"
    bad.write_bytes(b"not a database" * 100)
    from dbrouter.errors import SourceError

    with pytest.raises(SourceError, match="broken.sqlite"):
        fingerprint_sqlite(bad)
    with pytest.raises(SourceError, match="not found"):
        fingerprint_sqlite(tmp_path / "missing.sqlite")


def test_duckdb_fingerprint_is_stable_blind_to_rows_and_sees_types_and_comments(tmp_path):
    path = tmp_path / "sales.duckdb"
    con = duckdb.connect(str(path))
    con.execute("create table item(id int primary key, label varchar, price double)")
    con.execute("insert into item values (1, 'pen', 1.5)")
    con.close()
    first = fingerprint_duckdb(path)
    assert fingerprint_duckdb(path) == first
    prints = [first]
    for sql in ("insert into item values (2, 'cup', 3.0); delete from item where id = 1",
                "alter table item alter column price type decimal(10, 2)",
                "comment on column item.label is 'what it is'",
                "create view cheap as select * from item where price < 2"):
        con = duckdb.connect(str(path))
        con.execute(sql)
        con.close()
        prints.append(fingerprint_duckdb(path))
    assert prints[1] == first, "a row change altered the fingerprint"
    assert len(set(prints[1:])) == 4, "a type change, a comment or a view went unnoticed"


def test_schema_json_fingerprint_ignores_layout_and_sees_content(tmp_path):
    path = tmp_path / "hr.jsonl"
    a = {"db_id": "hr", "tables": [{"name": "emp", "columns": [{"name": "id", "type": "int"}]}]}
    b = {"db_id": "pay", "tables": []}
    path.write_text(json.dumps(a) + "\n" + json.dumps(b) + "\nnot json\n")
    found, bad = fingerprint_schema_json(SourceSpec("schema_json", path))
    assert set(found) == {"hr", "pay"} and list(bad) == ["hr.jsonl:3"]
    path.write_text(json.dumps(a, indent=None, sort_keys=True, separators=(", ", ": ")) + "\n"
                    + json.dumps(b) + "\n")
    again, bad = fingerprint_schema_json(SourceSpec("schema_json", path))
    assert again == found and bad == {}
    a["tables"][0]["columns"][0]["type"] = "text"
    path.write_text(json.dumps(a) + "\n" + json.dumps(b) + "\n")
    changed, _ = fingerprint_schema_json(SourceSpec("schema_json", path))
    assert changed["hr"] != found["hr"] and changed["pay"] == found["pay"]


def test_fingerprint_sources_goes_on_past_an_unreadable_source(sq, tmp_path):
    (tmp_path / "broken.sqlite").write_bytes(b"junk" * 500)
    _sqlite(tmp_path / "zoo.sqlite", "create table animal(id int)")
    sources = tmp_path / "sources.yml"
    sources.write_text("databases:\n  - {type: sqlite, glob: '*.sqlite'}\n"
                       "  - {type: duckdb, path: gone.duckdb}\nexamples: [{path: ex.jsonl}]\n")
    fp = fingerprint_sources(load_sources(sources))
    assert set(fp.databases) == {"shop", "zoo"}
    assert set(fp.unreadable) == {"broken", "gone"} and "not found" in fp.unreadable["gone"]
    assert fp.files["examples file ex.jsonl"] == "missing" and "sources file" in fp.files
    sources.write_text(sources.read_text() + "# a comment changes nothing\n")
    assert fingerprint_sources(load_sources(sources)).files == fp.files


def _fp(**dbs: str) -> Fingerprints:
    return Fingerprints(dict(dbs), {}, {"sources file": "s1"})


def test_compare_names_added_removed_changed_and_file_changes(tmp_path):
    warehouse = tmp_path / "kb.duckdb"
    warehouse.write_bytes(b"kb")
    write_record(warehouse, _fp(a="1", b="2", c="3"), "hash")
    record = load_record(warehouse)
    assert compare(record, _fp(a="1", b="2", c="3"), warehouse, "hash").needs_build is False
    changes = compare(record, _fp(a="1", b="9", d="4"), warehouse, "hash")
    assert (changes.added, changes.removed, changes.changed, changes.reason) == (["d"], ["c"], ["b"], None)
    moved = Fingerprints({"a": "1", "b": "2", "c": "3"}, {}, {"sources file": "s2", "examples file e.jsonl": "x"})
    assert compare(record, moved, warehouse, "hash").files == ["examples file e.jsonl", "sources file"]


def test_compare_unreadable_alone_does_not_rebuild_but_readable_again_does(tmp_path):
    warehouse = tmp_path / "kb.duckdb"
    warehouse.write_bytes(b"kb")
    write_record(warehouse, _fp(a="1", b="2"), "hash")
    now = Fingerprints({"a": "1"}, {"b": "file is not a database"}, {"sources file": "s1"})
    changes = compare(load_record(warehouse), now, warehouse, "hash")
    assert not changes.needs_build and changes.unreadable == {"b": "file is not a database"}
    write_record(warehouse, now, "hash")  # a build for another reason left b out
    back = compare(load_record(warehouse), _fp(a="1", b="2"), warehouse, "hash")
    assert back.changed == ["b"] and back.needs_build


def test_compare_rebuilds_for_missing_record_or_warehouse_other_embedder_outside_write_and_force(tmp_path):
    warehouse = tmp_path / "kb.duckdb"
    assert "first build" in compare(None, _fp(a="1"), warehouse, "hash").reason
    warehouse.write_bytes(b"kb")
    assert "no refresh record" in compare(None, _fp(a="1"), warehouse, "hash").reason
    write_record(warehouse, _fp(a="1"), "hash")
    record = load_record(warehouse)
    assert "embedder changed from hash to minilm" in compare(record, _fp(a="1"), warehouse, "minilm").reason
    assert "--force" in compare(record, _fp(a="1"), warehouse, "hash", force=True).reason
    st = warehouse.stat()
    os.utime(warehouse, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert "written since the last refresh" in compare(record, _fp(a="1"), warehouse, "hash").reason


def test_record_is_written_atomically_and_a_bad_record_reads_as_none(tmp_path):
    warehouse = tmp_path / "kb.duckdb"
    warehouse.write_bytes(b"kb")
    path = write_record(warehouse, _fp(a="1"), "hash")
    assert path == record_path(warehouse) and path.parent.name == "refresh"
    assert [p.name for p in path.parent.iterdir()] == ["kb.duckdb.json"], "a temporary file was left"
    assert load_record(warehouse)["databases"] == {"a": "1"}
    path.write_text("{half")
    assert load_record(warehouse) is None
    path.write_text(json.dumps({"version": 999}))
    assert load_record(warehouse) is None
