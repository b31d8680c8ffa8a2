"""Table-first linking under a column budget (dbrouter.linking.budget) and the table-recall
scoring of `eval link` (dbrouter.eval.link_tables), on hand-made schemas: no KB needed."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np

from dbrouter.eval.benchmark import Benchmark
from dbrouter.eval.link_tables import TableBM25, TableTally, load_gold_tables
from dbrouter.linking.budget import bm25_scores, budgeted_columns, rank_tables
from dbrouter.linking.columns import SchemaColumn
from dbrouter.linking.features import DatabaseSignals, table_words
from dbrouter.linking.linker import select_columns


def test_bm25_prefers_the_table_holding_the_rare_word():
    docs = {"orders": Counter({"order": 3, "date": 1, "customer": 1}),
            "customers": Counter({"customer": 3, "name": 1}),
            "shipments": Counter({"shipment": 2, "carrier": 1, "order": 1})}
    scores = bm25_scores("Which carrier shipped the most orders?", docs)
    assert max(scores, key=scores.get) == "shipments"
    assert scores["customers"] == 0.0
    assert bm25_scores("anything", {}) == {}


def test_table_words_read_names_labels_and_descriptions():
    sig = DatabaseSignals("d", columns=[("PLATFORM.TARGETS", "approvedSymbol", False, False, "")],
                          schema_columns=[SchemaColumn("PLATFORM.TARGETS", "approvedSymbol",
                                                       description="HGNC gene symbol")])
    bag = table_words(sig)["platform.targets"]
    assert {"platform", "target", "approved", "symbol", "hgnc", "gene"} <= set(bag)


def test_rank_tables_fuses_three_rankings():
    tables = ["a", "b", "c"]
    # b is second by probability but first by cosine and by BM25: fusion puts it first
    ranked = rank_tables(tables, ["a", "b", "c"], np.array([0.9, 0.8, 0.1]), {"a": 0.1, "b": 0.5, "c": 0.3},
                         {"b": 2.0, "c": 1.0})
    assert ranked[0] == "b" and ranked[-1] == "c"


def test_rank_tables_lifts_a_bridge_between_relevant_tables():
    tables = ["rooms", "departments", "room_dept_key", "weather"]
    p = np.array([0.9, 0.8, 0.01, 0.02])  # the bridge matches nothing, weather a little more
    cosine = {"rooms": 0.6, "departments": 0.5, "room_dept_key": 0.1, "weather": 0.2}
    lexical = {"rooms": 3.0, "departments": 2.0}
    alone = rank_tables(tables, tables, p, cosine, lexical)
    assert alone.index("weather") < alone.index("room_dept_key")
    edges = [("rooms", "room_id", "room_dept_key", "room_id", False),
             ("room_dept_key", "room_id", "rooms", "room_id", False),
             ("departments", "dept_id", "room_dept_key", "dept_id", False),
             ("room_dept_key", "dept_id", "departments", "dept_id", False)]
    joined = rank_tables(tables, tables, p, cosine, lexical, edges)
    assert joined[:2] == alone[:2] and joined.index("room_dept_key") < joined.index("weather")


def _wide(n_tables: int, per_table: int) -> tuple[list[str], list[str]]:
    tables = [f"s.t{i}" for i in range(n_tables)]  # schema-qualified names hold a dot
    names = [f"{t}.c{j}" for t in tables for j in range(per_table)]
    return names, [n.rsplit(".", 1)[0] for n in names]


def test_budget_caps_columns_and_tables_and_gives_every_table_a_column():
    names, column_tables = _wide(30, 10)
    p = np.linspace(1.0, 0.0, len(names))  # t0's columns most probable: they would fill the budget
    ranked = [f"s.t{i}" for i in range(30)]
    got = budgeted_columns(names, column_tables, p, ranked, [], budget=40)
    assert len(got) == 40
    got_tables = {column_tables[names.index(n)] for n in got}
    assert got_tables == {f"s.t{i}" for i in range(10)}  # 40 // 4 tables, each with a column
    assert got[:10] == [f"s.t{i}.c0" for i in range(10)]


def test_budget_brings_bridge_tables_and_join_keys():
    names = ["a.x", "a.k", "bridge.k", "bridge.m", "c.m", "c.y", "z.q"]
    column_tables = [n.split(".")[0] for n in names]
    edges = [("a", "k", "bridge", "k", False), ("bridge", "m", "c", "m", False)]
    p = np.array([0.9, 0.1, 0.05, 0.05, 0.1, 0.8, 0.7])
    got = budgeted_columns(names, column_tables, p, ["a", "c", "z", "bridge"], edges, budget=16)
    assert {"a.k", "bridge.k", "bridge.m", "c.m"} <= set(got)  # the path a - bridge - c and its keys
    assert got.index("a.x") < got.index("z.q")


def test_budget_skips_a_table_whose_path_does_not_fit():
    names = ["a.x", "a.k", "b1.k", "b2.k", "b3.k", "c.k", "c.y", "z.q"]
    column_tables = [n.split(".")[0] for n in names]
    chain = ["a", "b1", "b2", "b3", "c"]
    edges = [(u, "k", v, "k", False) for u, v in zip(chain, chain[1:])]
    p = np.array([0.9, 0.1, 0.1, 0.1, 0.1, 0.1, 0.8, 0.7])
    got = budgeted_columns(names, column_tables, p, ["a", "c", "z", "b1"], edges, budget=12)
    # c needs four more tables, over the 12 // 4 = 3 allowed: z and b1 come instead
    assert "c.y" not in got and {"a.x", "z.q", "a.k", "b1.k"} <= set(got) and len(got) <= 12


def test_selection_keeps_dotted_table_names_whole():
    names = ["s.t.name", "s.t.age", "s.u.name"]
    got = select_columns(names, np.array([0.9, 0.03, 0.02]), [], threshold=0.5, table_threshold=0.025,
                         min_columns=1, column_tables=["s.t", "s.t", "s.u"])
    # s.t.age joins through its table s.t; cutting at the first dot would have admitted s.u.name
    assert got == ["s.t.name", "s.t.age"]


def test_table_tally_needs_every_gold_table():
    tally = TableTally()
    tally.add({"a", "b"}, {"a", "b", "c"}, 12)
    tally.add({"a", "d"}, {"a"}, 4)
    got = tally.score()
    assert (got.recall, got.avg_tables, got.avg_columns, got.n) == (0.5, 2.0, 8.0, 2)
    assert TableTally().score().n == 0


def test_gold_tables_and_table_bm25(tmp_path):
    (tmp_path / "gold_tables.jsonl").write_text(
        json.dumps({"id": "q1", "db_id": "d", "tables": ["Orders", "SHIPMENTS"]}) + "\n"
        + json.dumps({"id": "q2", "db_id": "d", "tables": []}) + "\n", encoding="utf-8")
    bench = Benchmark("b", tmp_path, ["d"], [], [])
    assert load_gold_tables(bench) == {"q1": {"orders", "shipments"}}
    assert load_gold_tables(Benchmark("b", tmp_path / "none", ["d"], [], [])) == {}
    bm25 = TableBM25([{"db_id": "d", "tables": [
        {"name": "Orders", "columns": [{"name": "order_date"}, {"name": "customer_id"}]},
        {"name": "SHIPMENTS", "columns": [{"name": "carrier", "description": "who delivered the parcel"}]},
        {"name": "customers", "columns": [{"name": "customer_name"}]}]}])
    assert bm25.top("d", "Which carrier delivered the parcel?", 1) == ["shipments"]
    assert bm25.top("unknown", "x", 3) == [] and bm25.top("d", "x", 0) == []
