"""Batch routing in SQL: a whole table of questions routed in one statement with
``lateral route_query_ranked_<path>(q.text, k)`` gives, question by question, the ranking that
routing each question alone gives - on both paths of the demo KB."""

from __future__ import annotations

import duckdb
import pytest

import dbrouter
from tests.functional.test_two_stage_shortlist import QUESTIONS as TWO_STAGE_QUESTIONS

QUESTIONS = [
    *TWO_STAGE_QUESTIONS,
    "Show the names of singers older than 40",
    "",  # an empty question: no ranking, alone or batched
    "How many concerts took place in stadiums with a capacity over 5000?",
]


@pytest.mark.parametrize("path", ["udf", "sql"])
def test_a_batch_routes_every_question_as_one_at_a_time(built_kb, path):
    con = (dbrouter.connect(built_kb["warehouse"], embedder="hash") if path == "udf"
           else duckdb.connect(str(built_kb["warehouse"]), read_only=True))
    try:
        con.execute("create temp table questions as select i as id, q as text "
                    "from unnest(?) with ordinality as t(q, i)", [QUESTIONS])
        rows = con.execute(f"select q.id, r.rank, r.db_id, r.score, r.shortlist_rank from questions as q, "
                           f"lateral route_query_ranked_{path}(q.text, 3) as r order by q.id, r.rank").fetchall()
        batched: dict[int, list[tuple]] = {}
        for qid, *rest in rows:
            batched.setdefault(qid, []).append(tuple(rest))
        for i, question in enumerate(QUESTIONS, 1):
            alone = con.execute(f"select rank, db_id, score, shortlist_rank from route_query_ranked_{path}(?, 3) "
                                "order by rank", [question]).fetchall()
            got = batched.get(i, [])
            assert [(r[0], r[1], r[3]) for r in got] == [(r[0], r[1], r[3]) for r in alone], question
            assert [r[2] for r in got] == pytest.approx([r[2] for r in alone], abs=1e-4), question
        assert sum(len(v) for v in batched.values()) == 3 * (len(QUESTIONS) - 1)  # the empty one has none
    finally:
        con.close()
