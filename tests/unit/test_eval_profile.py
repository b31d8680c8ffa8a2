"""`dbrouter eval profile`'s reading of DuckDB's JSON profile: operator time by part (CTE)."""

from __future__ import annotations

import duckdb
import pytest

from dbrouter.eval.profile import MAIN, RouteProfile, parts_of, planning_seconds, profile_report


def _op(kind: str, timing: float, *children: dict, **extra: str) -> dict:
    return {"type": kind, "timing": timing, "extra_info": extra, "children": list(children)}


def test_an_operator_belongs_to_the_cte_whose_definition_holds_it():
    # CTE a's definition (first child) holds a scan; the CTE's second child, which reads it, is main's
    tree = {"operator": [_op("PROJECTION", 0.001,
                             _op("CTE", 0.002, _op("UNNEST", 0.010, _op("TABLE_SCAN", 0.003)),
                                 _op("HASH_JOIN", 0.004,
                                     _op("CTE", 0.0005, _op("WINDOW", 0.006, **{"x": "y"}), _op("CTE_SCAN", 0.0001),
                                         **{"CTE Name": "b"}),
                                     _op("CTE_SCAN", 0.0002)),
                                 **{"CTE Name": "a"}))]}
    seconds, heaviest, count = parts_of(tree)
    assert count == 9
    # a CTE operator's own time (materialising its rows) is the CTE's
    assert seconds == pytest.approx({MAIN: 0.001 + 0.004 + 0.0001 + 0.0002, "a": 0.015, "b": 0.0065})
    assert heaviest == {MAIN: "HASH_JOIN", "a": "UNNEST", "b": "WINDOW"}


def test_a_cte_duckdb_made_up_counts_to_the_part_holding_it():
    tree = {"operator": [_op("CTE", 0.001, _op("CTE", 0.002, _op("WINDOW", 0.004), _op("HASH_JOIN", 0.003),
                                               **{"CTE Name": "__duckdb_delim_1317"}),
                             _op("CTE_SCAN", 0.0001), **{"CTE Name": "mapped"})]}
    seconds, heaviest, _ = parts_of(tree)
    assert seconds == pytest.approx({MAIN: 0.0001, "mapped": 0.010}) and heaviest["mapped"] == "WINDOW"


def test_a_real_profile_is_read_whole_and_planning_is_counted(tmp_path):
    out = tmp_path / "p.json"
    con = duckdb.connect()
    con.execute("pragma enable_profiling='json'")
    con.execute(f"pragma profiling_output='{out}'")
    con.execute("pragma profiling_mode='detailed'")
    con.execute("with x as materialized (select range as i from range(100000)), "
                "y as materialized (select i % 7 as g, count(*) as n from x group by 1) "
                "select sum(n) from y").fetchall()
    con.execute("pragma disable_profiling")
    import json

    profile = json.loads(out.read_text())
    seconds, heaviest, count = parts_of(profile)
    assert {"x", "y", MAIN} <= set(seconds) and count >= 5
    assert heaviest["y"] == "HASH_GROUP_BY"
    assert 0 < planning_seconds(profile) < 5


def test_planning_counts_the_optimisers_once():
    profile = {"planner": {"binding_time": 0.015, "total_time": 0.020}, "physical_planner": {"total_time": 0.002},
               "optimizer": {"total_time": 0.030, "join_order": 0.010, "expression_rewriter": 0.015}}
    assert planning_seconds(profile) == pytest.approx(0.052)
    del profile["optimizer"]["total_time"]  # without a total: the optimisers' sum
    assert planning_seconds(profile) == pytest.approx(0.047)


def test_the_report_lists_parts_by_time_and_sums_the_rest():
    parts = {f"p{i}": [float(i), float(i)] for i in range(20)}
    result = RouteProfile("sp/kb.duckdb", "held", 2, wall_ms=[50.0, 60.0], cpu_ms=[190.0, 190.0],
                          planning_ms=[0.1, 0.2], parts=parts, heaviest={"p19": "UNNEST"}, operators=42)
    report = profile_report(result, "dbrouter eval profile --warehouse x")
    md = report.markdown
    assert report.key == "eval profile sp/kb.duckdb held"
    assert md.index("`p19`") < md.index("`p18`") and "| `p19` | 19.00 | 10% | UNNEST |" in md
    assert "| the other 4 parts | 6.00 |" in md  # p0..p3
    assert "| **operators, all parts** | **190.0** |" in md and "| wall time of the profiled query | 55.0 |" in md
    assert report.data["median_ms"]["p7"] == 7.0
