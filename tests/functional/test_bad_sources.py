"""Functional tests: sources that used to break the whole KB build (or the CLI) are reported by name.

One real `dbrouter build` (hash embedder) over a repository holding every kind of bad source the
testers found; the rest of the KB must build, and the ingest summary must count what
`kb_ingest_issues` lists.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess

import duckdb
import pytest

from tests.conftest import DBROUTER, ROOT, run_cli

pytestmark = pytest.mark.slow


def _sqlite(path, ddl, wal=False):
    con = sqlite3.connect(path)
    if wal:
        con.execute("pragma journal_mode=wal")
    con.executescript(ddl)
    con.close()


@pytest.fixture(scope="module")
def bad_kb(tmp_path_factory):
    base = tmp_path_factory.mktemp("bad")
    dbs = base / "databases"
    dbs.mkdir()
    _sqlite(dbs / "good.sqlite", """
        create table person (pid int primary key, name text);
        create table pet (id int primary key, owner int references person, ghost_id int references ghost,
                          kind text);
        insert into person values (1, 'Ann'); insert into pet values (1, 1, null, 'cat');""")
    _sqlite(dbs / "dots.sqlite", 'create table "a.b" (c int); create table "a" ("b.c" int);')
    _sqlite(dbs / "empty.sqlite", "")
    _sqlite(dbs / "walmode.sqlite", "create table w (id int primary key, v text); insert into w values (1, 'x');",
            wal=True)
    schemas = base / "schemas"
    schemas.mkdir()
    objects = [
        {"db_id": "dupcol", "tables": [{"name": "t", "columns": [{"name": "x"}, {"name": "x"}]}]},
        {"db_id": "duptab", "tables": [{"name": "t", "columns": [{"name": "x"}]}, {"name": "t", "columns": []}]},
        {"db_id": "cased", "tables": [{"name": "Item", "columns": [{"name": "Name"}, {"name": "name"}]},
                                      {"name": "item", "columns": [{"name": "id", "primary_key": True}]}]},
        {"db_id": "typed", "tables": [{"name": 42}]},
    ]
    (schemas / "s.jsonl").write_bytes(b"\n".join(json.dumps(o).encode() for o in objects)
                                      + b'\n{"db_id": "latin\xe9", "tables": []}\n')
    (base / "examples.jsonl").write_bytes(
        b"".join(json.dumps({"db_id": d, "question": q, "sql": "select 1"}).encode() + b"\n"
                 for d, q in (("good", "How many pets?"), ("dots", "What is c?")))
        + b'{"db_id": "good", "question": "caf\xe9", "sql": "select 1"}\n')
    (base / "sources.yml").write_text(
        "databases:\n  - {type: sqlite, glob: 'databases/*.sqlite'}\n"
        "  - {type: schema_json, path: schemas/s.jsonl}\nexamples: [{path: examples.jsonl}]\n")
    before = {p.name: p.read_bytes() for p in dbs.iterdir()}
    warehouse = base / "kb.duckdb"
    strict = run_cli("build", "--sources", str(base / "sources.yml"), "--warehouse", str(warehouse), check=False)
    proc = run_cli("build", "--sources", str(base / "sources.yml"), "--warehouse", str(warehouse),
                   "--allow-partial", check=False)
    return {"base": base, "warehouse": warehouse, "proc": proc, "strict": strict, "before": before}


def test_a_failed_source_is_an_error_without_allow_partial(bad_kb):
    """Before: `build` exited 0 with sources left out, so a scheduled job could not tell."""
    strict = bad_kb["strict"]
    assert strict.returncode == 2 and "Traceback" not in strict.stderr
    assert "source error(s)" in strict.stderr and "--allow-partial" in strict.stderr
    assert "no knowledge base was written" in strict.stderr


def test_bad_sources_are_left_out_by_name_and_the_rest_builds(bad_kb):
    """Before: the dotted names passed the ingest with 0 errors, dbt's unique test on
    int_columns_keyed failed and 85 nodes were skipped; the schema file's {"name": 42} and latin-1
    line aborted the ingest with a traceback."""
    proc = bad_kb["proc"]
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    assert "Traceback" not in log and "ERROR=0" in log
    assert re.search(r"ERROR\s+dots: names collide .*'dots\.a\.b\.c'.*exclude_tables", proc.stderr)
    assert re.search(r"ERROR\s+dupcol: names collide .*column 'x' appears 2 times", proc.stderr)
    assert re.search(r"ERROR\s+duptab: names collide .*table 't' appears 2 times", proc.stderr)
    assert re.search(r"ERROR\s+typed / .*s\.jsonl:4: .*tables\[0\]\.name must be a string", proc.stderr)
    assert re.search(r"ERROR\s+s / .*s\.jsonl:5: line is not valid UTF-8 \(byte 0xe9", proc.stderr)
    assert re.search(r"WARNING empty: .*has no tables", proc.stderr)
    assert "good / pet.ghost_id -> ghost: foreign key refers to missing table 'ghost'" in proc.stderr
    con = duckdb.connect(str(bad_kb["warehouse"]), read_only=True)
    try:
        dbs = {r[0] for r in con.execute("select db_id from kb_databases").fetchall()}
        fks = con.execute("select column_key, ref_column_key from kb_foreign_keys").fetchall()
        issues = dict(con.execute("select severity, count(*) from kb_ingest_issues group by 1").fetchall())
    finally:
        con.close()
    assert dbs == {"good", "empty", "walmode", "cased"}
    assert fks == [("good.pet.owner", "good.person.pid")]  # REFERENCES person -> its primary key
    # the summary line counts exactly what kb_ingest_issues lists (examples for absent databases too)
    summary = re.search(r"; (\d+) errors, (\d+) warnings", proc.stderr)
    assert (int(summary[1]), int(summary[2])) == (issues.get("error", 0), issues.get("warning", 0))


def test_sources_are_not_written_to(bad_kb):
    """Before: the WAL-mode source got walmode.sqlite-shm / -wal created beside it."""
    dbs = bad_kb["base"] / "databases"
    assert {p.name: p.read_bytes() for p in dbs.iterdir()} == bad_kb["before"]


def _cli(args: list, stdin: bytes = b"") -> subprocess.CompletedProcess:
    env = {**os.environ, "DBROUTER_EMBEDDER": "hash"}
    return subprocess.run([DBROUTER, *args], input=stdin, capture_output=True, env=env, cwd=str(ROOT))


def test_invalid_utf8_in_arguments_and_stdin_is_one_error_line(bad_kb):
    """Before: `dbrouter route $'\\xff'` and a non-UTF-8 stdin ended in a UnicodeError traceback."""
    wh = str(bad_kb["warehouse"])
    for args, stdin, what in (
            (["route", "--warehouse", wh, b"how many \xffpets"], b"", "argument 'question'"),
            (["route", "--warehouse", wh], b"how many pets\nwho owns \xe9\n", "stdin"),
            (["statements", "add", "--warehouse", wh, "--db", "good", "-"], b"caf\xe9 refers to pet.kind", "stdin"),
            (["statements", "add", "--warehouse", wh, "--db", b"go\xffod", "x refers to pet.kind"], b"",
             "argument 'db'")):
        proc = _cli(args, stdin)
        err = proc.stderr.decode()
        assert proc.returncode == 2, err
        assert err.startswith(f"dbrouter: error: {what} is not valid UTF-8") and err.count("\n") == 1, err


def test_statement_read_from_stdin(bad_kb):
    proc = _cli(["statements", "add", "--warehouse", str(bad_kb["warehouse"]), "--db", "good", "-"],
                b"'cats' refers to pet.kind = 'cat'\n")
    assert proc.returncode == 0, proc.stderr.decode()
    con = duckdb.connect(str(bad_kb["warehouse"]), read_only=True)
    try:
        rows = con.execute("select statement from dbrouter_user.statements where db_id = 'good'").fetchall()
    finally:
        con.close()
    assert rows == [("'cats' refers to pet.kind = 'cat'",)]
