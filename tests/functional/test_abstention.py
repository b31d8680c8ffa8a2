"""Abstention from the first build, with no example needed: the vocabulary test and the off-topic
probes' floor, on both routing paths of the demo KB (hash embedder).

Before (issue 34): a KB with fewer than 50 examples fell back to one ranker threshold fitted on the
UDF path's scores, so the pure-SQL path answered every off-topic question ("What is the weather in
Paris?" -> concert_singer)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import duckdb
import pytest

import dbrouter

SEED = Path(__file__).resolve().parents[2] / "seeds" / "offtopic_probes.csv"
OFF_TOPIC = ["What is the weather in Paris?", "asdf qwerty zxcv", "Tell me a joke about cats",
             "How do I bake sourdough bread?", "Translate good morning into Spanish", "Recommend a good movie",
             "What is the capital of Australia?"]
ANSWERABLE = [("How many singers do we have?", {"singer", "concert_singer"}),
              ("List the names of all teachers", {"course_teach"}),
              ("Which headphones cost the most?", {"headphone_store"}),
              ("Show all departments of the store", {"department_store"}),
              ("Which orchestra was founded earliest?", {"orchestra"})]


@pytest.fixture(params=["udf", "sql"])
def path_con(built_kb, request):
    con = (dbrouter.connect(built_kb["warehouse"], embedder="hash") if request.param == "udf"
           else duckdb.connect(str(built_kb["warehouse"]), read_only=True))
    yield request.param, con
    con.close()


def test_every_build_scores_the_offtopic_probes_on_each_path(built_kb):
    with SEED.open(encoding="utf-8") as f:
        n_seed = sum(1 for _ in csv.DictReader(f))
    con = duckdb.connect(str(built_kb["warehouse"]), read_only=True)
    try:
        n, floor, n_static, static_floor, ex_floor = con.execute(
            "select n_offtopic_probes, offtopic_floor, static_n_offtopic_probes, static_offtopic_floor, abstain_floor "
            "from kb_routing_calibration").fetchone()
        # every probe has a vector in the encoder's space; the static space drops those without a content word
        assert n == n_seed and 0 < n_static <= n_seed
        assert floor is not None and static_floor is not None and ex_floor is None
        vocab = {r[0] for r in con.execute("select term from kb_vocabulary where db_id = 'singer'").fetchall()}
        # table terms, sample values and example questions all count as words the database knows
        assert {"singer", "citizenship"} <= vocab
        ex_words = con.execute("select dbrouter_sql_content_words(question) from kb_examples "
                               "where db_id = 'singer'").fetchall()
        assert {w for (ws,) in ex_words for w in ws} <= vocab
    finally:
        con.close()


def test_offtopic_questions_are_refused_on_both_paths_with_the_test_that_refused(path_con):
    path, con = path_con
    for question in OFF_TOPIC:
        out = json.loads(con.execute(f"select route_query_json_{path}(?)", [question]).fetchone()[0])
        assert con.execute(f"select route_query_{path}(?)", [question]).fetchone()[0] is None, (path, question)
        if not out["ranking"]:  # the SQL path cannot embed a question of no known word at all
            assert path == "sql" and out["reason"]
            continue
        ev = out["ranking"][0]["evidence"]
        assert out["abstained"] and ev["abstain"] and ev["abstain_test"] in ("vocabulary", "offtopic_floor")
        if ev["abstain_test"] == "vocabulary":
            assert ev["known_words"] == 0 and ev["content_words"] > 0 and "kb_vocabulary" in out["reason"]
        else:
            assert ev["shortlist"]["score"] < ev["offtopic_floor"] and "offtopic_floor" in out["reason"]


def test_the_llm_paths_json_gives_the_same_reasons_in_the_same_words(path_con):
    """route_query_json_mapped (the ranking over given mappings, `route --llm`) and route_query_json
    share one body, so the reasons are written once. Before, Python rewrote them for the LLM path
    and left out the ranker's threshold."""
    path, con = path_con
    names = {"vocabulary": "(kb_vocabulary)", "intent": "(dbrouter__intent_probe)",
             "example_floor": "(kb_routing_calibration.abstain_floor)",
             "offtopic_floor": "(kb_routing_calibration.offtopic_floor)", "ranker": "below dbrouter__abstain_below ("}
    refused = 0
    for question in OFF_TOPIC + [q for q, _ in ANSWERABLE]:
        plain = json.loads(con.execute(f"select route_query_json_{path}(?)", [question]).fetchone()[0])
        mapped = json.loads(con.execute(f"select route_query_json_mapped_{path}(?, '[]')", [question]).fetchone()[0])
        assert set(mapped) == set(plain) and mapped["path"] == path
        if not plain["ranking"]:
            assert mapped == plain
            continue
        test = mapped["ranking"][0]["evidence"]["abstain_test"]
        assert mapped["abstained"] == (test is not None)
        if test is None:
            assert mapped["reason"] is None
            continue
        refused += 1
        assert mapped["reason"].endswith(names[test]) or names[test] in mapped["reason"], mapped["reason"]
        if test in ("vocabulary", "intent"):  # the question's own tests: the same words as route_query_json
            assert mapped["reason"] == plain["reason"], question
    assert refused >= len(OFF_TOPIC) - 1


def test_answerable_questions_are_answered_on_both_paths(path_con):
    path, con = path_con
    for question, gold in ANSWERABLE:
        out = json.loads(con.execute(f"select route_query_json_{path}(?)", [question]).fetchone()[0])
        assert not out["abstained"] and out["reason"] is None, (path, question, out["reason"])
        assert con.execute(f"select route_query_{path}(?)", [question]).fetchone()[0] in gold
        ev = out["ranking"][0]["evidence"]
        assert ev["abstain_test"] is None and ev["known_words"] >= 1


def test_the_vocabulary_test_sees_only_the_callers_databases(built_kb):
    from dbrouter.access import scope_ddl

    con = dbrouter.connect(built_kb["warehouse"], embedder="hash")
    try:
        question = "Which headphones cost the most?"
        assert con.execute("select route_query(?)", [question]).fetchone()[0] == "headphone_store"
        every = [r[0] for r in con.execute("select db_id from kb_databases").fetchall()]
        con.execute(scope_ddl([d for d in every if d not in ("headphone_store", "store_product",
                                                               "department_store")]))
        out = json.loads(con.execute("select route_query_json(?)", [question]).fetchone()[0])
        ev = out["ranking"][0]["evidence"]
        # 'headphone' and 'cost' are words of hidden databases only: for this caller nothing here is about them
        assert out["abstained"] and ev["abstain_test"] == "vocabulary" and ev["known_words"] == 0
        assert "headphone" not in out["reason"]
    finally:
        con.close()


def test_a_stored_example_question_is_never_refused(path_con):
    path, con = path_con
    for question, db in con.execute("select question, db_id from kb_examples").fetchall():
        assert con.execute(f"select route_query_{path}(?)", [question]).fetchone()[0] == db, (path, question)


def test_the_only_example_of_a_database_is_never_a_leave_one_out_probe(tmp_path):
    """Left out, it would test a question whose database lost its examples while the others keep
    theirs: with one example per database the trust test trusted examples that then cost R@1."""
    from tests.conftest import copy_demo, run_cli

    sources = copy_demo(tmp_path)
    examples = tmp_path / "examples.jsonl"
    lines = [line for line in examples.read_text().splitlines() if line.strip()]
    first: dict[str, str] = {}
    for line in lines:
        first.setdefault(json.loads(line)["db_id"], line)
    two = [line for line in lines if json.loads(line)["db_id"] == "singer"][:2]
    examples.write_text("\n".join(list(first.values()) + two[1:]) + "\n")
    warehouse = tmp_path / "kb.duckdb"
    run_cli("build", "--sources", str(sources), "--warehouse", str(warehouse))
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        row = con.execute("select n_probes, static_n_probes from kb_routing_calibration").fetchone()
        n_examples = con.execute("select count(*) from kb_examples").fetchone()[0]
    finally:
        con.close()
    assert n_examples == len(first) + 1
    # only singer's two examples (each keeps the other) are probes, on both paths
    assert row == (2, 2)
