"""The intent test on a demo KB built the way `make demo` builds it (MiniLM; the pure-SQL path reads
the static model distilled from it): questions that do not read as questions about data are
refused on both paths, with the test named, while the demo's questions are answered; the SQL
path's score is the one the tune script fitted (its vector computed in SQL equals the Python one).

The hash-embedder KB of the other tests has no probe (its vector space is not fixed by the
package), so there the off-topic floor decides (tests/functional/test_abstention.py)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import pytest

import dbrouter
from tests.conftest import copy_demo, run_cli

# none of these has all its words outside the demo's vocabulary, so the vocabulary test alone
# would not refuse them: each shares a word ("movie", "song", "time", "name", "concert") with a database
CHAT = ["Can you recommend a movie for tonight?", "Sing me a song about the sea", "What time is it now?",
        "How do I change my name on my passport?", "Do you like going to concerts?"]
DATA = ["How many singers do we have?", "List the names of all teachers", "Show all departments of the store",
        "What is the average age of the members?", "Show me the concerts in 2014"]


@pytest.fixture(scope="module")
def minilm_kb(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("minilm_kb")
    warehouse = base / "kb.duckdb"
    run_cli("build", "--sources", str(copy_demo(base)), "--warehouse", str(warehouse),
            env={"DBROUTER_EMBEDDER": "minilm"})
    return warehouse


@pytest.fixture(params=["udf", "sql"])
def con(minilm_kb, request):
    c = (dbrouter.connect(minilm_kb, embedder="minilm") if request.param == "udf"
         else duckdb.connect(str(minilm_kb), read_only=True))
    yield request.param, c
    c.close()


def _top(con, path: str, question: str) -> dict:
    return json.loads(con.execute(f"select route_query_json_{path}(?)", [question]).fetchone()[0])


def test_chit_chat_is_refused_by_the_intent_test_on_both_paths(con):
    path, c = con
    refused_by_intent = 0
    for question in CHAT:
        out = _top(c, path, question)
        assert out["abstained"], (path, question, out)
        ev = out["ranking"][0]["evidence"]
        assert ev["intent_floor"] is not None and ev["offtopic_floor"] is not None
        if ev["abstain_test"] == "intent":
            refused_by_intent += 1
            assert ev["intent_score"] < ev["intent_floor"]
            assert "intent probe" in out["reason"] and str(ev["intent_floor"]) in out["reason"]
        else:
            assert ev["abstain_test"] == "vocabulary", (path, question, ev["abstain_test"])
    assert refused_by_intent >= 3, path  # the probe, not only the vocabulary, decided


def test_questions_about_the_demo_data_are_answered_on_both_paths(con):
    path, c = con
    for question in DATA:
        out = _top(c, path, question)
        ev = out["ranking"][0]["evidence"]
        assert not out["abstained"] and out["reason"] is None, (path, question, out["reason"])
        assert ev["intent_score"] >= ev["intent_floor"]


def test_the_sql_path_scores_the_whole_question_as_the_probe_was_fitted(minilm_kb):
    from dbrouter.tune.intent import shipped_probes
    from python_udfs.embeddings import embed_texts, get_embedder

    probes = shipped_probes()
    c = duckdb.connect(str(minilm_kb), read_only=True)
    try:
        for question in CHAT[:2] + DATA[:2]:
            sql_score = _top(c, "sql", question)["ranking"][0]["evidence"]["intent_score"]
            v = embed_texts([question], get_embedder("m2v"))[0]
            p = probes["m2v"]
            assert sql_score == pytest.approx(float(np.array(p["weights"]) @ (v / np.linalg.norm(v)) + p["bias"]),
                                              abs=2e-3), question
    finally:
        c.close()
