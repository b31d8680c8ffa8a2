"""`dbrouter eval abstain`'s pieces that need no KB: the repository without the withheld databases
and the report."""

import json

from dbrouter.eval.abstain import AbstainMetrics, abstain_report, databases_without_withheld
from dbrouter.eval.benchmark import Benchmark, is_withheld


def test_withheld_databases_are_left_out_of_the_repository(tmp_path):
    ids = [f"db_{i}" for i in range(40)]
    (tmp_path / "databases.jsonl").write_text("".join(json.dumps({"db_id": d, "tables": []}) + "\n" for d in ids))
    bench = Benchmark("b", tmp_path, ids, [], [])
    out = databases_without_withheld(bench, tmp_path / "out" / "databases.jsonl")
    kept = [json.loads(line)["db_id"] for line in out.read_text().splitlines()]
    assert kept == [d for d in ids if not is_withheld(d)]
    assert 0 < len(kept) < len(ids)  # some of 40 are withheld, not all


def test_abstain_report_names_both_sides_paths_and_rules():
    udf = AbstainMetrics("b", n_out=10, n_in=20, out_refused=0.4, in_refused=0.05, in_r1=0.9,
                         in_r1_with_abstention=0.88, threshold=19.42, seconds=1.0, path="udf", floor=0.31,
                         kb_estimate_out_refused=0.5, kb_estimate_in_refused=0.02)
    sql = AbstainMetrics("b", n_out=10, n_in=20, out_refused=0.1, in_refused=0.0, in_r1=0.85,
                         in_r1_with_abstention=0.85, threshold=19.42, seconds=1.0, path="sql")
    report = abstain_report([udf, sql], "dbrouter eval abstain --benchmark B")
    assert report.key == "eval abstain b" and "**0.4000**" in report.markdown
    assert "| udf | 0.31 |" in report.markdown and "| sql | none: ranker score < 19.42 |" in report.markdown
    assert report.text.startswith("b abstain (udf path, floor 0.31): out-of-repository refused 0.4000 (n=10)")
    assert [p["path"] for p in report.data["paths"]] == ["udf", "sql"]
