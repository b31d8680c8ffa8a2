import json

import pytest

from dbrouter.errors import BenchmarkError
from dbrouter.eval.benchmark import SETTINGS, is_withheld, load_benchmark, setting_split
from dbrouter.eval.publish import Report, update_benchmarks_md
from dbrouter.eval.route import RankMetrics, RouteMetrics, rank_of, route_metrics, route_report
from tests.unit.evidence_samples import evidence_json


def test_route_metrics_recall_and_map():
    m = route_metrics([1, 2, None, 4])
    assert m["r1"] == 0.25 and m["r2"] == 0.5 and m["r3"] == 0.5 and m["r10"] == 0.75
    assert m["map"] == pytest.approx((1 + 0.5 + 0.25) / 4)
    assert rank_of(["a", "b"], "b") == 2 and rank_of(["a"], "z") is None


def test_cross_domain_withholds_about_a_fifth_deterministically():
    ids = [f"db_{i}" for i in range(2000)]
    share = sum(map(is_withheld, ids)) / len(ids)
    assert 0.17 < share < 0.23
    assert [is_withheld(i) for i in ids[:50]] == [is_withheld(i) for i in ids[:50]]


def _bench(tmp_path):
    (tmp_path / "databases.jsonl").write_text("\n".join(json.dumps({"db_id": d, "tables": []}) for d in "abcdefgh"))
    rows = lambda split: "\n".join(json.dumps({"id": f"{split}{i}", "question": f"q{i}", "db_id": "abcdefgh"[i % 8], "sql": ""}) for i in range(40))  # noqa: E731
    (tmp_path / "train.jsonl").write_text(rows("tr"))
    (tmp_path / "test.jsonl").write_text(rows("te"))
    return load_benchmark(tmp_path)


def test_setting_split(tmp_path):
    b = _bench(tmp_path)
    assert setting_split(b, "in-domain") == (b.train, b.test)
    assert setting_split(b, "schema-only")[0] == []
    ex, qs = setting_split(b, "cross-domain")
    assert all(not is_withheld(q.db_id) for q in ex) and all(is_withheld(q.db_id) for q in qs)
    assert set(SETTINGS) == {"in-domain", "schema-only", "cross-domain"}
    with pytest.raises(BenchmarkError):
        setting_split(b, "zero-shot")


def test_missing_benchmark_files(tmp_path):
    with pytest.raises(BenchmarkError, match="databases.jsonl not found"):
        load_benchmark(tmp_path)


def test_update_benchmarks_md_replaces_only_its_block(tmp_path):
    md = tmp_path / "B.md"
    md.write_text("# Benchmarks\nintro\n")
    update_benchmarks_md(md, "k1", "first")
    update_benchmarks_md(md, "k2", "other")
    update_benchmarks_md(md, "k1", "second")
    text = md.read_text()
    assert "intro" in text and "second" in text and "other" in text and "first" not in text


def test_statement_scores_recall_and_f1_at_k():
    from dbrouter.eval.statements import Scores, gold_statements, statement_key

    s = Scores()
    s.add(["a", "x", "b", "y", "z"], {"a", "b"})
    m = s.mean()
    assert m["recall_at_gold"] == 0.5 and m["f1"] == 0.5
    assert m["recall_at_4"] == 1.0 and m["f1_at_4"] == round(2 * 0.5 * 1.0 / 1.5, 4)
    assert gold_statements("a refers to x; b = 1 ;") == ["a refers to x", "b = 1"]
    assert statement_key("'In 2017' refers to year = 2017.") == statement_key("in 2019 refers to year = 2019")


def test_error_category_names_why_gold_lost():
    from dbrouter.eval.route import error_category
    from dbrouter.routing.evidence import RouteEvidence

    ev = lambda **kw: RouteEvidence.from_json(evidence_json(**kw))  # noqa: E731
    top = ev()
    signals = dict(top.signals)
    assert error_category(None, top) == "not_in_shortlist"
    assert error_category(ev(stage="shortlist"), top) == "not_in_shortlist"
    assert error_category(ev(signals={**signals, "lex_name": 0.1}), top) == "lost_on_lex_name"
    # the weighted gap decides: a small gap on a heavy signal beats a larger one on a light signal
    gold = ev(signals={**signals, "lex_name": 0.5, "mapped": 0.4})
    assert error_category(gold, top, {"lex_name": 0.1, "mapped": 10.0}) == "lost_on_mapped"
    assert error_category(gold, top, {"lex_name": 1.0, "mapped": 1.0}) == "lost_on_lex_name"


def _metrics() -> RouteMetrics:
    return RouteMetrics(benchmark="b", setting="in-domain", n=4, final=RankMetrics.of([1, 2, None, 4]),
                        shortlist=RankMetrics.of([2, 1, None, 3]), shortlist_k=10, shortlist_recall=0.75,
                        p50_ms=40.0, p95_ms=55.5, seconds=1.2, implied_edge_wins=1, reranked_changed=2,
                        errors={"tie_semantic": 1})


def test_route_metrics_json_keeps_the_flat_keys():
    out = _metrics().to_json()
    assert list(out)[:8] == ["r1", "r2", "r3", "map", "n", "shortlist_recall", "p50_ms", "p95_ms"]
    assert out["r1"] == 0.25 and out["shortlist_r1"] == 0.25 and out["shortlist_r2"] == 0.5
    assert out["errors"] == {"tie_semantic": 1} and out["benchmark"] == "b" and "final" not in out


def test_route_report_block_has_command_date_and_machine():
    report = route_report(_metrics(), "dbrouter eval route --benchmark B --setting in-domain")
    assert report.key == "eval route b in-domain" and report.text.startswith("b in-domain: n=4 R@1=0.2500")
    block = report.block()
    assert "| 4 | **after re-rank** | **0.2500** |" in block and "tie_semantic 1" in block
    assert "\nCommand: `dbrouter eval route --benchmark B --setting in-domain` - 20" in block
    assert block.endswith("; routing 4 questions took 1.2s.\n")
    plain = Report("k", "cmd", {}, "body\n\n").block()
    assert plain.startswith("body\n\nCommand: `cmd` - ") and " cores" in plain and plain.endswith(".\n")


def test_synthesize_renames_tables_and_keeps_foreign_keys():
    from dbrouter.eval.scale import synthesize

    schemas = [{"db_id": "a", "tables": [{"name": "t", "columns": [{"name": "id"}]},
                                         {"name": "u", "columns": [{"name": "t_id"}]}],
                "foreign_keys": [{"table": "u", "column": "t_id", "ref_table": "t", "ref_column": "id"}]},
               {"db_id": "b", "tables": [{"name": "v", "columns": [{"name": "x"}]}], "foreign_keys": []}]
    out = synthesize(schemas, 3, seed=1)
    assert [d["db_id"] for d in out] == ["synthetic_00000", "synthetic_00001", "synthetic_00002"]
    for d in out:
        names = [t["name"] for t in d["tables"]]
        assert len(names) == 3 and len(set(names)) == 3 and not {"t", "u", "v"} & set(names)
        fk = d["foreign_keys"][0]
        assert fk["table"] in names and fk["ref_table"] in names and fk["table"].startswith("u_")
    assert synthesize(schemas, 3, seed=1) == out  # seeded: the same repository every time


def test_the_scale_report_says_whether_the_route_was_held():
    from dbrouter.eval.scale import scale_report

    r = {"databases": 10, "tables": 20, "columns": 30, "documents": 60, "embedder": "hash", "build_s": 1.0,
         "noop_rebuild_s": 0.5, "build_peak_rss_mib": 100.0, "warehouse_mib": 5.0, "p50_ms": 9.0, "p95_ms": 12.0,
         "held_p50_ms": 4.0, "held_p95_ms": 6.0, "held_same": 40, "held_compared": 40, "sql_p50_ms": 20.0,
         "sql_p95_ms": 30.0, "shortlist_p50_ms": 3.0, "route_peak_rss_mib": 200.0, "n_questions": 40}
    assert "| 9.0 / 12.0 | 4.0 / 6.0 (40/40 answers as planned) | 20.0 / 30.0 |" in scale_report(r, "c").markdown
    unheld = scale_report({**r, "held_same": 0, "held_compared": 0}, "c").markdown
    assert "4.0 / 6.0 (not held: above MAX_HELD_ROWS, planned per call)" in unheld
    assert "| not measured |" in scale_report({k: v for k, v in r.items() if not k.startswith("held")}, "c").markdown
    plain = {**r, "planned_p50_ms": 15.0, "planned_p95_ms": 19.0, "plain_same": 39, "plain_compared": 40}
    assert ("| 9.0 / 12.0 (planned `route_query_udf`: 15.0 / 19.0; 39/40 answers as planned) | 4.0 / 6.0"
            in scale_report(plain, "c").markdown)


def test_the_held_route_line_says_what_was_measured_and_compared():
    from dataclasses import replace

    from dbrouter.eval.route import held_line, route_report

    m = _metrics()
    assert held_line(m) == ""  # not measured (the pure-SQL path)
    held = replace(m, held_p50_ms=30.1, held_p95_ms=41.0, held_same=199, held_compared=200)
    assert "p50 30.1 / p95 41.0 ms" in held_line(held) and "199 of 200" in held_line(held)
    assert held_line(held) in route_report(held, "cmd").markdown
    assert route_report(held, "cmd").data["held_same"] == 199
    big = replace(m, held_p50_ms=300.0, held_p95_ms=400.0)
    assert "planned per question" in held_line(big)
    plain = replace(held, planned_p50_ms=80.5, planned_p95_ms=99.0, plain_same=200, plain_compared=200)
    assert "planned for every question, p50 80.5 / p95 99.0 ms" in held_line(plain) and "200 of 200" in held_line(plain)
    assert route_report(plain, "cmd").data["planned_p50_ms"] == 80.5
    assert "asked again" not in held_line(held)  # not measured
    again = replace(held, again_p50_ms=1.12, again_p95_ms=1.9)
    assert "asked again on that connection, answered from the answers it kept: p50 1.12 / p95 1.9 ms" in held_line(again)
    assert route_report(again, "cmd").data["again_p50_ms"] == 1.12
