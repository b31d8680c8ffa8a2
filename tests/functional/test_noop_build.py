"""A build with nothing changed leaves the warehouse as it is; each kind of input change rebuilds."""

from __future__ import annotations

import json
import sqlite3

import duckdb
import pytest

from tests.conftest import copy_demo, copy_project, run_cli

pytestmark = pytest.mark.slow


def _build(sources, wh, *extra: str, env: dict | None = None):
    return run_cli("build", "--sources", str(sources), "--warehouse", str(wh), *extra, env=env)


def _stamp(wh):
    st = wh.stat()
    return st.st_ino, st.st_mtime_ns, st.st_size


def test_nothing_changed_rewrites_nothing_and_each_input_rebuilds(tmp_path):
    sources = copy_demo(tmp_path)
    wh = tmp_path / "kb.duckdb"
    log = tmp_path / "log.jsonl"
    first = _build(sources, wh)
    assert "Completed successfully" in first.stdout
    before = _stamp(wh)

    # a routed question adds a query-log entry: not an input of any mart, so nothing to rebuild
    run_cli("route", "How many singers are there?", "--warehouse", str(wh), env={"DBROUTER_LOG": str(log)})
    same = _build(sources, wh, env={"DBROUTER_LOG": str(log)})
    assert "nothing changed since the build of" in same.stderr and "--force rebuilds" in same.stderr
    assert "Completed successfully" not in same.stdout and "ingested 10 databases" in same.stderr
    assert _stamp(wh) == before
    assert not (tmp_path / ".dbrouter-dbt" / "building" / "kb.duckdb").exists()  # never copied

    # a statement added with the CLI (kept in the warehouse): the `user` part
    run_cli("statements", "add", "--warehouse", str(wh), "--db", "orchestra",
            "veteran conductors refers to conductor.Age > 60")
    user = _build(sources, wh)
    assert "user changed since the build of" in user.stderr and "Completed successfully" in user.stdout
    con = duckdb.connect(str(wh), read_only=True)
    assert con.execute("select count(*) from kb_domain_statements where statement_text like 'veteran%'"
                       ).fetchall() == [(1,)]
    con.close()

    # a sample value changed in a source (data, not schema): the `sources` part
    db = sqlite3.connect(tmp_path / "databases" / "orchestra.sqlite")
    db.execute("update conductor set Name = 'Zubin Mehta' where Conductor_ID = 1")
    db.commit()
    db.close()
    data = _build(sources, wh)
    assert "sources changed since the build of" in data.stderr
    assert "Zubin Mehta" in json.dumps(duckdb.connect(str(wh), read_only=True).execute(
        "select sample_values from kb_columns where column_key = 'orchestra.conductor.Name'").fetchall())

    # an ingest in place drops the record: the next build rebuilds
    run_cli("ingest", "--sources", str(sources), "--warehouse", str(wh))
    assert "no record of the last build's inputs: rebuilding" in _build(sources, wh).stderr
    assert "nothing changed" in _build(sources, wh).stderr


def test_a_changed_model_rebuilds(built_kb, tmp_path):
    project = copy_project(tmp_path / "project")
    wh = tmp_path / "kb.duckdb"
    wh.write_bytes(built_kb["warehouse"].read_bytes())
    assert "nothing changed" in _build(built_kb["sources"], wh).stderr
    model = project / "models" / "marts" / "catalog" / "kb_databases.sql"
    model.write_text(model.read_text() + "\n-- a comment is a change of the project\n")
    changed = _build(built_kb["sources"], wh, env={"DBROUTER_PROJECT_DIR": str(project)})
    assert "project changed since the build of" in changed.stderr
    assert "Completed successfully" in changed.stdout
