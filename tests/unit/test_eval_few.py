"""`dbrouter eval few`'s pieces that need no KB: which examples are stored, which questions are
their paraphrases, and the report."""

from dbrouter.eval.benchmark import Benchmark, Question
from dbrouter.eval.few import FewMetrics, choose_examples, few_report, paraphrases_of


def _bench(tmp_path) -> Benchmark:
    train = [Question(f"a{i}", f"question a{i}", "a", f"select {i // 2} from t") for i in range(10)]
    train += [Question("b0", "question b0", "b", "select 0 from t"), Question("b1", "Question B0 ", "b", "SELECT 0 FROM t;")]
    return Benchmark("b", tmp_path, ["a", "b", "c"], train, [])


def test_k_examples_per_database_seeded_and_all_of_a_small_one(tmp_path):
    bench = _bench(tmp_path)
    three = choose_examples(bench, 3, seed=3)
    assert [q.db_id for q in three] == ["a", "a", "a", "b", "b"]  # b has 2, c none
    assert three == choose_examples(bench, 3, seed=3) and choose_examples(bench, 0) == []


def test_paraphrases_share_database_and_sql_and_are_not_stored(tmp_path):
    bench = _bench(tmp_path)
    stored = [bench.train[0], bench.train[10]]  # a0 (select 0), b0 (select 0)
    found = paraphrases_of(bench, stored, limit=100)
    # a1 has a0's SQL; the b question differs only in case and spacing from the stored b0: not a paraphrase
    # a2..a9 have other SQL; a's "select 0" is not b's
    assert [q.id for q in found] == ["a1"]
    assert len(paraphrases_of(bench, bench.train[0::2], limit=3)) == 3  # capped


def test_few_report_compares_each_count_with_schema_only_per_path():
    def m(k, path, r1, para):
        return FewMetrics("b", k, path, n_examples=k * 10, examples_trusted=k >= 3, n_test=100, r1=r1,
                          r1_with_abstention=r1 - 0.01, refused=0.02, n_paraphrases=0 if para is None else 40,
                          paraphrases_routed=para, seconds=1.0)
    report = few_report([m(0, "udf", 0.8, None), m(0, "sql", 0.7, None), m(1, "udf", 0.79, 0.9),
                         m(1, "sql", 0.75, 0.85)], "dbrouter eval few --benchmark B")
    assert report.key == "eval few b"
    assert "| 1 | udf | 10 | no | **0.7900** (-0.0100) | 0.7800 | 0.0200 | **0.9000** (n=40) |" in report.markdown
    assert "| 1 | sql | 10 | no | **0.7500** (+0.0500) |" in report.markdown
    assert "| 0 | udf | 0 | no | **0.8000** (+0.0000) | 0.7900 | 0.0200 | - |" in report.markdown
    assert [lv["per_database"] for lv in report.data["levels"]] == [0, 0, 1, 1]
