"""`dbrouter eval abstain`'s pieces that need no KB: the repository without the withheld databases,
the off-topic set and the report."""

import csv
import json
from pathlib import Path

from dbrouter.eval.abstain import AbstainMetrics, abstain_report, databases_without_withheld
from dbrouter.eval.benchmark import Benchmark, is_withheld
from dbrouter.eval.offtopic import corpus_questions, gibberish, offtopic_questions

SEED = Path(__file__).resolve().parents[2] / "seeds" / "offtopic_probes.csv"


def test_withheld_databases_are_left_out_of_the_repository(tmp_path):
    ids = [f"db_{i}" for i in range(40)]
    (tmp_path / "databases.jsonl").write_text("".join(json.dumps({"db_id": d, "tables": []}) + "\n" for d in ids))
    bench = Benchmark("b", tmp_path, ids, [], [])
    out = databases_without_withheld(bench, tmp_path / "out" / "databases.jsonl")
    kept = [json.loads(line)["db_id"] for line in out.read_text().splitlines()]
    assert kept == [d for d in ids if not is_withheld(d)]
    assert 0 < len(kept) < len(ids)  # some of 40 are withheld, not all


def test_the_offtopic_set_is_the_public_corpus_and_gibberish_never_the_calibration_probes():
    corpus = corpus_questions()
    assert len(corpus) > 500 and len({t for _, t in corpus}) == len(corpus)
    assert {"trivia", "greetings", "ai"} <= {c for c, _ in corpus}
    picked = offtopic_questions(n_corpus=400, n_gibberish=100)
    assert len(picked) == 500 and picked == offtopic_questions(n_corpus=400, n_gibberish=100)  # seeded
    assert sum(k == "gibberish" for k, _ in picked) == 100
    with SEED.open(encoding="utf-8") as f:
        probes = {row["question"].strip().lower() for row in csv.DictReader(f)}
    assert len(probes) > 50 and not probes & {t.strip().lower() for _, t in picked}


def test_gibberish_is_seeded_letters():
    assert gibberish(20, seed=3) == gibberish(20, seed=3) != gibberish(20, seed=4)
    assert all(w.isalpha() and w.islower() and 3 <= len(w) <= 9 for g in gibberish(50) for w in g.split())


def test_abstain_report_names_kbs_paths_floors_and_every_kind_of_question():
    udf = AbstainMetrics("b", n_out=10, n_in=20, out_refused=0.4, in_refused=0.05, in_r1=0.9,
                         in_r1_with_abstention=0.88, threshold=19.42, seconds=1.0, path="udf", floor=0.31,
                         kb_estimate_out_refused=0.5, kb_estimate_in_refused=0.02, n_off=50, off_refused=0.96,
                         offtopic_floor=0.2, off_refused_by_vocabulary=0.5, off_refused_by_intent=0.3)
    sql = AbstainMetrics("b", n_out=0, n_in=20, out_refused=0.0, in_refused=0.0, in_r1=0.85,
                         in_r1_with_abstention=0.85, threshold=19.42, seconds=1.0, path="sql", kb="schema-only",
                         n_off=50, off_refused=0.9, offtopic_floor=0.61)
    none = AbstainMetrics("b", n_out=0, n_in=1, out_refused=0.0, in_refused=0.0, in_r1=1.0,
                          in_r1_with_abstention=1.0, threshold=19.42, seconds=1.0, path="sql", kb="schema-only")
    report = abstain_report([udf, sql, none], "dbrouter eval abstain --benchmark B")
    assert report.key == "eval abstain b" and "**0.4000** (n=10)" in report.markdown
    assert "| examples | udf | examples 0.31 | **0.9600** (n=50) | 0.5 / 0.3 |" in report.markdown
    assert "| schema-only | sql | off-topic 0.61 | **0.9000** (n=50) | - / - | - |" in report.markdown
    assert "| schema-only | sql | ranker score < 19.42 | - |" in report.markdown
    assert report.text.startswith("b abstain (examples KB, udf path, examples 0.31): off-topic refused 0.96 (n=50)")
    assert [p["kb"] for p in report.data["paths"]] == ["examples", "schema-only", "schema-only"]
