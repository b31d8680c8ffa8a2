"""`dbrouter eval signals`'s pieces that need no KB: the repository with distractors, the rank of a
single signal, and the report."""

import json

import pytest

from dbrouter.eval.benchmark import load_benchmark
from dbrouter.eval.route import RankMetrics
from dbrouter.eval.signals import SIGNALS, SignalMetrics, _ranks_by, outvoting_signal, repository, signals_report


def _bench(path, name, db_ids):
    d = path / name
    d.mkdir()
    (d / "databases.jsonl").write_text("".join(json.dumps({"db_id": i, "tables": [
        {"name": "t", "label": "t", "columns": [{"name": "a"}, {"name": "b"}]}]}) + "\n" for i in db_ids))
    for f in ("train.jsonl", "test.jsonl"):
        (d / f).write_text("")
    return load_benchmark(d)


def test_repository_holds_the_benchmark_and_its_distractors_once(tmp_path):
    main, other = _bench(tmp_path, "main", ["a", "b"]), _bench(tmp_path, "other", ["c"])
    rows = repository(main, [other], tmp_path / "out" / "databases.jsonl")
    assert [r["db_id"] for r in rows] == ["a", "b", "c"]
    assert [json.loads(l)["db_id"] for l in (tmp_path / "out" / "databases.jsonl").read_text().splitlines()] \
        == ["a", "b", "c"]


def test_a_distractor_repeating_a_database_is_refused(tmp_path):
    main, other = _bench(tmp_path, "main", ["a", "b"]), _bench(tmp_path, "other", ["b"])
    with pytest.raises(ValueError, match="'b' is in both main and other"):
        repository(main, [other], tmp_path / "databases.jsonl")


def test_a_signal_ranks_by_its_column_with_nulls_unranked():
    rows = [("x", 0.2, None), ("y", 0.9, 3.0), ("z", 0.9, None)]
    assert _ranks_by(rows, 1, "y") == 1 and _ranks_by(rows, 1, "z") == 2 and _ranks_by(rows, 1, "x") == 3
    assert _ranks_by(rows, 2, "y") == 1 and _ranks_by(rows, 2, "x") is None


def test_the_report_lists_every_ranking_and_where_the_misses_happened():
    r = RankMetrics(0.5, 0.6, 0.7, 0.9, 0.6)
    m = SignalMetrics("bench", ["spider-route"], 10, 12, 300, 50, 10,
                      {k: r for k in (*SIGNALS, "bm25", "mean_table")}, 1, 2, 2, {"shortlist": 2}, 80.0, 200.0, 3.0)
    text = signals_report(m, "dbrouter eval signals --benchmark b").markdown
    assert "among spider-route" in text and text.count("| 0.5000 |") == len(SIGNALS) + 2
    assert ("gold outside stage 1's top 50 1, outside the re-rank's 10 candidates 2, re-ranked below another 2 "
            "(the ranker signal giving the winner most of its lead: shortlist 2)") in text


def test_the_outvoting_signal_is_the_largest_weighted_lead():
    weights = {"semantic": 10.0, "mapped": 3.0, "column": -6.0}
    winner, gold = {"semantic": 0.50, "mapped": 1.0, "column": 0.3}, {"semantic": 0.49, "mapped": 0.5, "column": 0.5}
    assert outvoting_signal(winner, gold, weights) == "mapped"  # 1.5 against 0.1 and 1.2 (a lower column)
