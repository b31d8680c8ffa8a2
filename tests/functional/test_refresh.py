"""`dbrouter refresh` on copies of the demo (hash embedder): the first refresh builds, an
unchanged one runs no dbt and is fast, a new table is built and routed to, schema changes and
removed databases are detected, `--force` rebuilds, an unreadable source is reported by name
while the rest refreshes."""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from pathlib import Path

import duckdb
import pytest

from dbrouter.kb.refresh import check, record_path
from dbrouter.sources.config import load_sources
from tests.conftest import copy_demo, run_cli

PLANETS = ["create table planet(planet_id int primary key, planet_name text, moons int)",
           "insert into planet values (1, 'Earth', 1), (2, 'Mars', 2), (3, 'Jupiter', 95), (4, 'Saturn', 146)"]
QUESTION = "Which planet has the most moons?"


@pytest.fixture(scope="module")
def first_refresh(tmp_path_factory) -> dict:
    """The demo sources and the KB the first `dbrouter refresh` built (once per module)."""
    base = tmp_path_factory.mktemp("refresh")
    sources = copy_demo(base)
    proc = run_cli("refresh", "--sources", str(sources), "--warehouse", str(base / "kb.duckdb"))
    return {"dir": base, "log": proc.stderr}


@pytest.fixture()
def kb(first_refresh, tmp_path) -> dict:
    """A private copy of the first refresh (copytree keeps the warehouse's mtime, so its record holds)."""
    dest = tmp_path / "kb"
    shutil.copytree(first_refresh["dir"], dest, symlinks=True)
    return {"dir": dest, "sources": dest / "sources.yml", "warehouse": dest / "kb.duckdb"}


def refresh(kb: dict, *extra: str):
    return run_cli("refresh", "--sources", str(kb["sources"]), "--warehouse", str(kb["warehouse"]), *extra)


def stamp(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_ino, st.st_mtime_ns


def sql(path: Path, *statements: str) -> None:
    con = sqlite3.connect(path)
    for statement in statements:
        con.execute(statement)
    con.commit()
    con.close()


def top_database(kb: dict) -> str:
    proc = run_cli("route", QUESTION, "--warehouse", str(kb["warehouse"]), "--json", "--no-llm")
    return json.loads(proc.stdout)["ranking"][0]["db_id"]


def kb_rows(kb: dict, query: str) -> list[tuple]:
    con = duckdb.connect(str(kb["warehouse"]), read_only=True)
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


def test_first_refresh_builds_and_records_every_database(first_refresh):
    assert "does not exist yet: first build" in first_refresh["log"]
    assert "schema fingerprints recorded" in first_refresh["log"]
    record = json.loads(record_path(first_refresh["dir"] / "kb.duckdb").read_text())
    assert len(record["databases"]) == 10 and record["embedder"] == "hash" and record["unreadable"] == {}


def test_unchanged_refresh_runs_no_dbt_and_is_fast(kb):
    before, record = stamp(kb["warehouse"]), record_path(kb["warehouse"]).read_bytes()
    started = time.monotonic()
    proc = refresh(kb)
    seconds = time.monotonic() - started
    assert "no schema change in 10 databases since " in proc.stderr and "nothing to do" in proc.stderr
    assert "building" not in proc.stderr
    assert stamp(kb["warehouse"]) == before, "the warehouse was rewritten"
    assert record_path(kb["warehouse"]).read_bytes() == record
    assert seconds < 5, f"a no-change refresh took {seconds:.1f}s"


def test_new_table_is_built_and_routed_to(kb):
    assert top_database(kb) != "orchestra"
    before = stamp(kb["warehouse"])
    sql(kb["dir"] / "databases" / "orchestra.sqlite", *PLANETS)
    proc = refresh(kb)
    assert "1 of 10 databases changed since" in proc.stderr and "changed  orchestra" in proc.stderr
    assert stamp(kb["warehouse"]) != before
    assert kb_rows(kb, "select db_id from kb_tables where table_name = 'planet'") == [("orchestra",)]
    assert top_database(kb) == "orchestra"
    assert "nothing to do" in refresh(kb).stderr, "the rebuild's fingerprints were not recorded"


def test_data_change_alone_does_not_rebuild(kb):
    sql(kb["dir"] / "databases" / "singer.sqlite", "delete from singer where Singer_ID > 3")
    changes, _, _ = check(load_sources(kb["sources"]), kb["warehouse"], "hash")
    assert not changes.needs_build


def test_column_type_change_is_detected(kb):
    con = duckdb.connect(str(kb["dir"] / "databases" / "headphone_store.duckdb"))
    table, column, _ = con.execute("select table_name, column_name, data_type from duckdb_columns() "
                                   "where data_type <> 'VARCHAR' and not internal order by all limit 1").fetchone()
    con.execute(f'alter table "{table}" alter column "{column}" type varchar')
    con.close()
    changes, _, since = check(load_sources(kb["sources"]), kb["warehouse"], "hash")
    assert changes.changed == ["headphone_store"] and not (changes.added or changes.removed or changes.reason)
    assert since is not None


def test_removed_and_added_databases_are_detected(kb):
    (kb["dir"] / "databases" / "singer.sqlite").unlink()
    sql(kb["dir"] / "databases" / "zoo.sqlite", "create table animal(animal_id int primary key, name text)")
    changes, fingerprints, _ = check(load_sources(kb["sources"]), kb["warehouse"], "hash")
    assert (changes.removed, changes.added, changes.changed) == (["singer"], ["zoo"], [])
    assert len(fingerprints.databases) == 10


def test_force_rebuilds_and_an_unreadable_source_is_named_while_the_rest_refreshes(kb):
    (kb["dir"] / "databases" / "musical.sqlite").write_bytes(b"not a database" * 200)
    quiet = refresh(kb)
    assert "musical: cannot be read" in quiet.stderr and "nothing to do" in quiet.stderr
    before = stamp(kb["warehouse"])
    strict = run_cli("refresh", "--sources", str(kb["sources"]), "--warehouse", str(kb["warehouse"]), "--force",
                     check=False)  # a scheduled job sees the failed source: exit 2, the KB untouched
    assert strict.returncode == 2 and "--allow-partial" in strict.stderr and stamp(kb["warehouse"]) == before
    proc = refresh(kb, "--force", "--allow-partial")
    assert "--force" in proc.stderr and "musical: cannot be read" in proc.stderr
    assert stamp(kb["warehouse"]) != before
    assert len(kb_rows(kb, "select db_id from kb_databases")) == 9
    assert json.loads(record_path(kb["warehouse"]).read_text())["unreadable"].keys() == {"musical"}


def test_bad_sources_file_is_one_error_line(tmp_path):
    proc = run_cli("refresh", "--sources", str(tmp_path / "nope.yml"), "--warehouse", str(tmp_path / "kb.duckdb"),
                   check=False)
    assert proc.returncode == 2 and "dbrouter: error: sources file" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "kb.duckdb").exists()
