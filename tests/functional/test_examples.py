"""Examples end to end: descriptors in dbt, calibrated thresholds, the cascade in SQL, the LLM path."""

from __future__ import annotations

import json

import duckdb
import pytest

from tests.conftest import copy_built_kb, run_cli
from tests.fake_llm import FakeLLM

pytestmark = pytest.mark.slow


def test_examples_have_descriptors_and_parsed_tables(kb_con):
    rows = kb_con.execute(
        "select question, normalized_question, main_clause, tables_used, sql_parsed, described_by from kb_examples"
    ).fetchall()
    assert len(rows) == 30 and all(r[4] for r in rows) and all(r[5] == "rules" for r in rows)
    assert all(r[1] and r[2] and r[3] for r in rows)
    kinds = dict(kb_con.execute(
        "select doc_kind, count(*) from kb_documents where doc_kind like 'example%' group by 1").fetchall())
    assert kinds["example"] == 30 and kinds["example_normalized"] == 30 and kinds["example_main_clause"] == 30


def test_thresholds_are_calibrated_ordered_and_logged(built_kb, kb_con):
    n, t2, t3, t4 = kb_con.execute(
        "select n_examples, normalized_threshold, main_clause_threshold, expanded_threshold "
        "from kb_example_thresholds").fetchall()[0]
    assert n == 30 and 0 < t4 <= t3 <= t2 <= 1
    assert f"dbrouter: example cascade thresholds from 30 examples: normalized >= {round(t2, 4)}" in built_kb["log"]


def test_cascade_exact_match_returns_the_stored_sql(kb_con):
    question, sql = kb_con.execute("select question, sql_text from kb_examples order by question limit 1").fetchall()[0]
    rows = kb_con.execute("select stage, sql_text, score from retrieve_examples(?, NULL, 3)",
                          [f"  {question.upper()} "]).fetchall()
    assert rows == [("exact", sql, 1.0)]


def test_cascade_stages_and_bad_input(kb_con):
    rows = kb_con.execute("select stage, score, threshold, db_id, similarity from retrieve_examples("
                          "'how many singers are older than 40', 'concert_singer', 3)").fetchall()
    assert rows and len({r[0] for r in rows}) == 1 and rows[0][0] in ("normalized", "main_clause", "expanded")
    assert all(r[3] == "concert_singer" for r in rows)
    # what is shown as compared was compared (before: the expanded stage printed its re-rank score,
    # "score 0.1373 >= 0.2183")
    assert all(r[4] >= r[2] for r in rows) and all(r[1] == r[4] or r[0] == "expanded" for r in rows)
    expanded = kb_con.execute("select score, threshold, similarity, stage from retrieve_examples("
                              "'which vocalists perform at the arena shows', NULL, 5)").fetchall()
    assert all(r[2] >= r[1] for r in expanded)
    for bad in (None, "", "   "):
        assert kb_con.execute("select count(*) from retrieve_examples(?, NULL)", [bad]).fetchall() == [(0,)]
    assert kb_con.execute("select count(*) from retrieve_examples('singers', 'no_such_db')").fetchall() == [(0,)]


def test_llm_descriptors_with_fake_server(built_kb, tmp_path):
    kb = copy_built_kb(built_kb, tmp_path)
    wh = kb["warehouse"]

    def responder(system, user):
        if "orchestra" in system:
            return "```json\n" + json.dumps({
                "normalized_question": "orchestras of some record company", "main_clause": "orchestras",
                "requested_entities": ["orchestra"], "paraphrases": ["which orchestras record with a label"]}) + "\n```"
        return "not json at all"

    env = {"DBROUTER_LLM_CACHE": str(tmp_path / "cache"), "DBROUTER_LLM_MODEL": "fake-2"}
    with FakeLLM(responder) as fake:
        env["DBROUTER_LLM_BASE_URL"] = fake.base_url
        proc = run_cli("examples", "describe", "--warehouse", str(wh), env=env)
    assert "3 described by the LLM, 27 malformed twice" in proc.stderr
    con = duckdb.connect(str(wh), read_only=True)
    rows = con.execute("select db_id, described_by, normalized_question, paraphrases from kb_examples").fetchall()
    paraphrase_docs = con.execute("select count(*) from kb_documents where doc_kind = 'example_paraphrase'").fetchall()
    con.close()
    orch = [r for r in rows if r[0] == "orchestra"]
    assert all(r[1] == "llm:fake-2" and r[2] == "orchestras of some record company" for r in orch)
    assert all(r[1] == "rules" for r in rows if r[0] != "orchestra")
    assert paraphrase_docs == [(3,)]


def test_python_and_cli_retrieval(built_kb, kb_con):
    import dbrouter

    stmts = dbrouter.retrieve_statements(kb_con, "How many male singers are there?", "concert_singer", k=2)
    assert stmts[0].snippet == "singer.Is_male = 'T'" and stmts[0].rank == 1
    question = kb_con.execute("select question from kb_examples where db_id = 'orchestra' limit 1").fetchall()[0][0]
    exs = dbrouter.retrieve_examples(kb_con, question, "orchestra")
    assert exs[0].stage == "exact" and exs[0].db_id == "orchestra" and exs[0].tables_used
    out = run_cli("examples", "retrieve", "--warehouse", str(built_kb["warehouse"]), "--json", question)
    assert json.loads(out.stdout)[0]["stage"] == "exact"
    out = run_cli("statements", "retrieve", "--warehouse", str(built_kb["warehouse"]), "big stores?", "--k", "1")
    assert out.stdout.startswith("1. [store_product] 'big stores' refers to")
    typo = run_cli("statements", "retrieve", "--warehouse", str(built_kb["warehouse"]), "--db", "concert_singr",
                   "big stores?", check=False)
    assert typo.returncode == 2 and "'concert_singr' is not in the knowledge base; did you mean concert_singer" \
        in typo.stderr and typo.stdout == ""


@pytest.mark.parametrize("question", ["word " * 20000, "'; DROP TABLE kb_examples; --", "歌手は何人いますか"])
def test_retrievers_take_odd_input_as_text(kb_con, question):
    assert len(kb_con.execute("select * from retrieve_statements(?, NULL, 4)", [question]).fetchall()) <= 4
    assert len(kb_con.execute("select * from retrieve_examples(?, NULL, -5)", [question]).fetchall()) <= 1
    assert kb_con.execute("select count(*) from kb_examples").fetchall() == [(30,)]
