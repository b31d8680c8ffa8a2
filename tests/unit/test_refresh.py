"""Schema fingerprints of `dbrouter refresh`: stable, blind to rows, sensitive to schema; the
comparison with the record and the record's round trip (no dbt, no warehouse build)."""

from __future__ import annotations

import json
import os

from dbrouter.kb.refresh import Fingerprints, compare, fingerprint_sources, load_record, record_path, write_record
from dbrouter.sources.config import load_sources
from tests.unit.conftest import make_sqlite_file


def test_fingerprint_sources_goes_on_past_an_unreadable_source(sq, tmp_path):
    (tmp_path / "broken.sqlite").write_bytes(b"junk" * 500)
    make_sqlite_file(tmp_path / "zoo.sqlite", "create table animal(id int)")
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
