"""type: sqlite - reading, read-only opening, fingerprint."""

import sqlite3

import duckdb
import pytest

from dbrouter.errors import SourceError
from dbrouter.sources.base import SourceSpec, check_foreign_keys
from dbrouter.sources.duckdb import read_duckdb
from dbrouter.sources.sqlite import fingerprint_sqlite, read_sqlite
from tests.unit.conftest import make_sqlite_file


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


def _walmake_sqlite_file(path):
    con = sqlite3.connect(path)
    con.execute("pragma journal_mode=wal")
    con.executescript("create table t (id int primary key, x text); insert into t values (1, 'a');")
    con.close()  # the last connection checkpoints and removes -wal/-shm


def test_wal_sqlite_source_gets_no_files_beside_it_and_is_unchanged(tmp_path):
    """Before: mode=ro on a WAL database created t.sqlite-shm and t.sqlite-wal next to the source."""
    src = tmp_path / "w #1?.sqlite"  # characters that need quoting in a file: URI
    _walmake_sqlite_file(src)
    before = src.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == [src.name]
    snap = read_sqlite(SourceSpec("sqlite", src), "w", 5, 60)
    assert [t.name for t in snap.tables] == ["t"] and snap.tables[0].columns[1].samples == ["a"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [src.name]
    assert src.read_bytes() == before


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


def test_uncheckpointed_wal_file_is_reported(tmp_path):
    src = tmp_path / "live.sqlite"
    _walmake_sqlite_file(src)
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


def test_sqlite_fingerprint_is_stable_and_blind_to_rows(sq):
    first = fingerprint_sqlite(sq)
    assert len(first) == 64 and fingerprint_sqlite(sq) == first
    make_sqlite_file(sq, "insert into customer values (3, 'Cy', 'Oslo')", "update orders set total = 1",
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
    make_sqlite_file(sq, change)
    assert fingerprint_sqlite(sq) != before


def test_sqlite_fingerprint_sees_type_key_and_foreign_key_changes(tmp_path):
    base = "create table t(a {a_type} {pk}, b int {fk})"
    variants = [dict(a_type="int", pk="primary key", fk=""), dict(a_type="text", pk="primary key", fk=""),
                dict(a_type="int", pk="", fk=""), dict(a_type="int", pk="primary key", fk="references u(x)")]
    prints = []
    for i, v in enumerate(variants):
        path = make_sqlite_file(tmp_path / f"v{i}.sqlite", "create table u(x int primary key)", base.format(**v))
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
