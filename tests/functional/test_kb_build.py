"""Functional tests: real `dbt build` runs (through the CLI) on the shipped demo databases."""

from __future__ import annotations

import json
import re
import sqlite3

import duckdb
import pytest

from tests.conftest import ROOT, copy_built_kb, copy_demo, run_cli

pytestmark = pytest.mark.slow


def embedded_count(log: str) -> int:
    return sum(int(n) for n in re.findall(r"dbrouter: embedded (\d+)", log))


def test_first_build_materialises_the_kb(built_kb, kb_con):
    log = built_kb["log"]
    assert "Completed successfully" in log and "ERROR=0" in log
    counts = dict(kb_con.execute("select doc_kind, count(*) from kb_documents group by 1").fetchall())
    assert counts["database"] == 10 and counts["table"] == 56 and counts["column"] == 265
    assert counts["example"] > 0 and counts["statement"] == 5
    assert embedded_count(log) == kb_con.execute("select count(*) from kb_embedding_cache").fetchall()[0][0]


def test_column_document_has_name_table_type_keys_and_samples(kb_con):
    (doc,) = kb_con.execute(
        "select column_document from kb_columns where column_key = 'concert_singer.singer_in_concert.Singer_ID'"
    ).fetchall()[0]
    assert doc.startswith("column: Singer_ID (singer id) | table: singer_in_concert | type: text")
    assert "foreign key to singer.Singer_ID" in doc and "examples: " in doc


def test_join_graph_has_declared_and_rule_based_edges(kb_con):
    rules = dict(kb_con.execute(
        "select from_table || '.' || from_column || '>' || to_table, rule from kb_join_edges "
        "where db_id = 'headphone_store'").fetchall())
    # the DuckDB demo copy declares no foreign keys: its edges come from the naming rules
    assert rules["stock.Store_ID>store"] == "matches_primary_key"
    assert rules["store.Store_ID>stock"] == "matches_primary_key"  # usable both ways
    declared = kb_con.execute(
        "select count(*) from kb_join_edges where db_id = 'concert_singer' and is_declared").fetchall()[0][0]
    assert declared == 6  # 3 foreign keys, both directions


def test_reachability_hops_and_connectivity(kb_con):
    hops, path = kb_con.execute(
        "select hops, join_path from kb_table_reachability where db_id = 'concert_singer' "
        "and from_table = 'stadium' and to_table = 'singer'").fetchall()[0]
    assert hops == 3 and path == "stadium > concert > singer_in_concert > singer"
    connected = dict(kb_con.execute("select db_id, is_connected from kb_database_connectivity").fetchall())
    assert connected["headphone_store"] is True


def test_route_query_from_plain_python(kb_con):
    assert kb_con.execute("select route_query('How many singers do we have?')").fetchall()[0][0] in (
        "singer", "concert_singer")
    rows = kb_con.execute("select rank, db_id, score, evidence from route_query_ranked('stadium capacity', 3)").fetchall()
    assert [r[0] for r in rows] == [1, 2, 3]
    evidence = [json.loads(r[3]) for r in rows]
    assert all(e["stage"] == "reranked" and e["shortlist"]["top_table"] for e in evidence)
    # re-ranked order: total score first, then the tie-break (semantic + weighted shortlist score)
    totals = [e["total_score"] for e in evidence]
    assert totals == sorted(totals, reverse=True)


@pytest.mark.parametrize("question", [None, "", "   ", " \t\n\r ", "\u00a0\u2003"])
def test_route_query_null_and_empty_give_null_and_reason(kb_con, question):
    assert kb_con.execute("select route_query(?)", [question]).fetchall()[0][0] is None
    out = json.loads(kb_con.execute("select route_query_json(?)", [question]).fetchall()[0][0])
    assert out["ranking"] == [] and out["reason"].startswith("question is")


@pytest.mark.parametrize("question", ["'; DROP TABLE kb_databases; --", "x" * 100_000,
                                      "歌手は何人いますか", "Combien de chanteurs ?"])
def test_route_query_odd_input_is_text_and_connection_survives(kb_con, question):
    best = kb_con.execute("select route_query(?)", [question]).fetchall()[0][0]
    assert best is None or isinstance(best, str)
    assert kb_con.execute("select count(*) from kb_databases").fetchall()[0][0] == 10


def test_route_functions_refuse_a_different_embedder(built_kb):
    import dbrouter
    from dbrouter.errors import EmbedderMismatch
    from python_udfs.plugin import register_udfs

    with pytest.raises(EmbedderMismatch, match="built with embedder hash but the embedder argument"):
        dbrouter.connect(built_kb["warehouse"], embedder="minilm")
    # a client that registers the UDFs itself with another embedder gets a reason from the UDF path,
    # not a wrong answer; the plain names it did not shadow are the pure-SQL path, which needs no UDF
    con = duckdb.connect(str(built_kb["warehouse"]), read_only=True)
    try:
        register_udfs(con, "minilm")
        out = json.loads(con.execute("select route_query_json_udf('singers')").fetchall()[0][0])
        assert out["ranking"] == [] and "no documents embedded with model minilm" in out["reason"]
        out = json.loads(con.execute("select route_query_json('singers')").fetchall()[0][0])
        assert out["path"] == "sql" and out["ranking"] and out["reason"] is None
    finally:
        con.close()


def test_vectors_are_labelled_with_the_embedder_the_plugin_registered(tmp_path, monkeypatch):
    """A hand-written profile decides the embedder; the env var no longer labels the vectors."""
    from dbrouter.errors import DbtRunError
    from dbrouter.kb.connect import connect
    from dbrouter.kb.dbt_runner import run_dbt
    from dbrouter.kb.ingest import ingest
    from dbrouter.sources.config import load_sources

    wh = tmp_path / "kb.duckdb"
    ingest(load_sources(ROOT / "tests" / "fixtures" / "mini_kb" / "sources.yml"), wh)
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "profiles.yml").write_text(
        "dbrouter:\n  target: dev\n  outputs:\n    dev:\n      type: duckdb\n"
        f"      path: '{wh}'\n      plugins:\n        - module: python_udfs.plugin\n"
        "          config: {embedder: hash}\n")
    monkeypatch.setenv("DBT_PROFILES_DIR", str(profiles))
    monkeypatch.setenv("DBROUTER_EMBEDDER", "minilm")  # what used to label the vectors
    with pytest.raises(DbtRunError, match="var dbrouter__embedding_model is 'minilm' but the profile plugin "
                                          "registered embedder 'hash'"):
        run_dbt(["build", "--vars", "{dbrouter__embedding_model: minilm}"], wh, quiet=True)
    out = run_dbt(["build"], wh, quiet=True)
    assert "Completed successfully" in out
    con = connect(wh, embedder="hash")
    try:
        labels = con.execute("select distinct embedding_model from kb_embedding_cache").fetchall()
        assert labels == [("hash",)]
        assert con.execute("select route_query('Singers from France')").fetchall()[0][0] == "concerts"
    finally:
        con.close()


def test_dbt_show_inline_routes(built_kb):
    from dbrouter.kb.dbt_runner import run_dbt

    out = run_dbt(["show", "--inline", "select route_query('How many concerts were held in 2014?') as db"],
                  built_kb["warehouse"], "hash", quiet=True)
    assert re.search(r"\|\s*(concert_singer|singer|orchestra|musical)\s*\|", out)


def test_incremental_builds_embed_only_changes(built_kb, tmp_path):
    kb = copy_built_kb(built_kb, tmp_path)  # the shared first build embedded every document
    sources, wh = kb["sources"], kb["warehouse"]
    assert embedded_count(built_kb["log"]) > 300
    second = run_cli("build", "--sources", str(sources), "--warehouse", str(wh), "--force")
    assert "--force: rebuilding on a copy" in second.stderr and "Completed successfully" in second.stdout
    assert embedded_count(second.stdout) == 0
    con = sqlite3.connect(tmp_path / "databases" / "musical.sqlite")
    con.execute("alter table actor add column Agent text")
    con.commit()
    con.close()
    third = run_cli("build", "--sources", str(sources), "--warehouse", str(wh))
    # the new column's document, its table's and its database's documents change
    assert embedded_count(third.stdout) == 3
    (tmp_path / "databases" / "singer.sqlite").unlink()
    fourth = run_cli("build", "--sources", str(sources), "--warehouse", str(wh))
    assert embedded_count(fourth.stdout) == 0
    db = duckdb.connect(str(wh), read_only=True)
    assert db.execute("select count(*) from kb_databases where db_id = 'singer'").fetchall()[0][0] == 0
    assert db.execute("select count(*) from kb_columns where column_key = 'musical.actor.Agent'").fetchall()[0][0] == 1
    db.close()


def test_bad_sources_are_reported_and_the_rest_builds(tmp_path):
    sources = copy_demo(tmp_path)
    (tmp_path / "databases" / "corrupt.sqlite").write_text("not a database")
    con = sqlite3.connect(tmp_path / "databases" / "dangling.sqlite")
    con.executescript("create table a (id int primary key, b_id int references nowhere(id));"
                      "create table nothing_here (x text);")
    con.close()
    wh = tmp_path / "kb.duckdb"
    strict = run_cli("build", "--sources", str(sources), "--warehouse", str(wh), check=False)
    assert strict.returncode == 2 and "--allow-partial" in strict.stderr and not wh.exists()
    proc = run_cli("build", "--sources", str(sources), "--warehouse", str(wh), "--allow-partial")
    assert "corrupt" in proc.stderr and "cannot open" in proc.stderr
    assert "dangling / a.b_id -> nowhere.id" in proc.stderr
    db = duckdb.connect(str(wh), read_only=True)
    issues = db.execute("select db_id, severity, message from kb_ingest_issues").fetchall()
    db_ids = set(r[0] for r in db.execute("select db_id from kb_databases").fetchall())
    db.close()
    assert ("corrupt", "error") in {(r[0], r[1]) for r in issues}
    assert "dangling" in db_ids and "corrupt" not in db_ids and len(db_ids) == 11


def test_build_without_examples_or_statements(tmp_path):
    """A repository without example or statement files builds (the package ships none of its own)."""
    sources = copy_demo(tmp_path / "src")
    text = sources.read_text()
    sources.write_text(text[:text.index("examples:")])
    wh = tmp_path / "kb.duckdb"
    run_cli("build", "--sources", str(sources), "--warehouse", str(wh))
    db = duckdb.connect(str(wh), read_only=True)
    assert db.execute("select count(*) from kb_examples").fetchall()[0][0] == 0
    assert db.execute("select example_gap from kb_routing_calibration").fetchall()[0][0] == 0
    db.close()
