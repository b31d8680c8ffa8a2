"""Digests of a build's inputs (dbrouter.kb.inputs): what changes them and what does not."""

from __future__ import annotations

import duckdb

from dbrouter.kb.ingest import write_raw
from dbrouter.kb.inputs import (
    BuildInputs,
    build_inputs,
    project_digest,
    record_inputs,
    recorded_inputs,
    sources_digest,
    user_digest,
)
from dbrouter.kb.tables import add_statement, ensure_tables
from tests.conftest import copy_project


def _rows(sample: str = "a", at: str = "2026-11-27T10:00:00") -> dict[str, list[dict]]:
    return {"databases": [dict(db_id="shop", source_type="sqlite", source_path="shop.sqlite", description=None,
                               status="ok", ingested_at=at)],
            "columns": [dict(db_id="shop", table_name="t", column_name="c", sample_values=[sample])]}


def test_sources_digest_ignores_the_ingest_time_and_sees_a_sample_value():
    assert sources_digest(_rows(at="2026-01-01T00:00:00")) == sources_digest(_rows(at="2026-11-27T11:11:11"))
    assert sources_digest(_rows("a")) != sources_digest(_rows("b"))
    assert sources_digest({"tables": []}) != sources_digest({"columns": []})


def test_user_digest_sees_kept_rows_not_their_order_nor_the_query_log(tmp_path):
    wh = tmp_path / "kb.duckdb"
    con = duckdb.connect(str(wh))
    ensure_tables(con)
    empty = user_digest(con, wh)
    add_statement(con, "shop", "big refers to t.c > 1")
    one = user_digest(con, wh)
    assert one != empty
    con.execute("insert into dbrouter_user.query_log (entry_id, question) values ('e1', 'how many?')")
    con.execute("insert into dbrouter_user.query_log_journals values ('/x/log.jsonl', 1, 10)")
    assert user_digest(con, wh) == one
    add_statement(con, "shop", "small refers to t.c < 1")
    two = user_digest(con, wh)
    # the same rows stored in the other order give the same digest
    con.execute("create table s2 as select * from dbrouter_user.statements order by statement desc")
    con.execute("delete from dbrouter_user.statements")
    con.execute("insert into dbrouter_user.statements select * from s2")
    assert user_digest(con, wh) == two
    con.execute("insert into dbrouter_llm.statement_structures (statement_hash) values ('h')")
    assert user_digest(con, wh) != two
    con.close()


def test_a_pending_change_in_the_journal_is_a_user_change(tmp_path):
    from dbrouter.kb.changes import Change, append

    wh = tmp_path / "kb.duckdb"
    con = duckdb.connect(str(wh))
    ensure_tables(con)
    before = user_digest(con, wh)
    append(wh, Change(op="add_statement", db_id="shop", statement="x refers to t.c"))
    assert user_digest(con, wh) != before
    con.close()


def test_project_digest_follows_the_project_folder(tmp_path, monkeypatch):
    project = copy_project(tmp_path / "project")
    monkeypatch.setenv("DBROUTER_PROJECT_DIR", str(project))
    monkeypatch.delenv("DBT_PROFILES_DIR", raising=False)
    before = project_digest()
    assert project_digest() == before
    (project / "macros" / "extra.sql").write_text("{% macro extra() %}1{% endmacro %}\n")
    assert project_digest() != before


def test_record_round_trip_and_an_ingest_drops_the_record(tmp_path):
    wh = tmp_path / "kb.duckdb"
    con = duckdb.connect(str(wh))
    assert recorded_inputs(con) is None  # no raw schema yet (and no Python variable taken for the table)
    write_raw(con, _rows())
    inputs = build_inputs(_rows(), con, wh, "hash")
    assert set(inputs.parts) == {"sources", "user", "project", "embedder", "software"}
    record_inputs(con, inputs)
    parts, since = recorded_inputs(con)
    assert parts == inputs.parts and len(since) == len("2026-11-27 10:00")
    assert inputs.changed_since(parts) == []
    assert BuildInputs({**inputs.parts, "embedder": "m2v"}).changed_since(parts) == ["embedder"]
    assert inputs.changed_since(None) == list(inputs.parts)
    write_raw(con, _rows())  # `dbrouter ingest` in place
    assert recorded_inputs(con) is None
    con.close()
