"""`dbrouter eval wide`'s pieces that need no KB: the domain grouping, the merge with date shards,
the BM25 baseline's documents and the report."""

import numpy as np

from dbrouter.eval.route import RankMetrics
from dbrouter.eval.wide import WideMetrics, bm25_document, domain_groups, merge_group, tokens, wide_report


def _unit(rows):
    m = np.asarray(rows, dtype=np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_domain_groups_separate_clear_domains_and_cover_every_database_once():
    rng = np.random.default_rng(3)
    centres = np.eye(3, 8)
    vectors = _unit(np.vstack([c + 0.05 * rng.standard_normal((6, 8)) for c in centres]))
    groups = domain_groups(vectors, group_size=6)
    assert sorted(i for g in groups for i in g) == list(range(18))
    assert sorted(groups) == [list(range(0, 6)), list(range(6, 12)), list(range(12, 18))]


def test_domain_groups_cap_a_dominant_domain_at_twice_the_mean():
    rng = np.random.default_rng(4)
    vectors = _unit(np.vstack([np.eye(1, 8) + 0.01 * rng.standard_normal((20, 8)),
                               np.eye(1, 8, 3) + 0.01 * rng.standard_normal((4, 8))]))
    groups = domain_groups(vectors, group_size=6)  # 4 groups of mean 6: at most 12 each
    assert len(groups) == 4 and max(len(g) for g in groups) <= 12
    assert sorted(i for g in groups for i in g) == list(range(24))


def test_merge_renames_tables_keeps_foreign_keys_and_adds_date_shards():
    a = {"db_id": "shop", "tables": [{"name": "orders", "label": "orders", "columns": [{"name": "id"}]},
                                     {"name": "items", "label": "items", "columns": [{"name": "order_id"}]}],
         "foreign_keys": [{"table": "items", "column": "order_id", "ref_table": "orders", "ref_column": "id"}]}
    b = {"db_id": "crm", "tables": [{"name": "orders", "label": "orders", "columns": [{"name": "x"}]}]}
    merged = merge_group([a, b], "warehouse_00", shard_every=2, shards=3)
    names = [t["name"] for t in merged["tables"]]
    assert names == ["shop__orders", "shop__orders_20240101", "shop__orders_20240102", "shop__orders_20240103",
                     "shop__items", "crm__orders", "crm__orders_20240101", "crm__orders_20240102",
                     "crm__orders_20240103"]
    assert merged["foreign_keys"] == [{"table": "shop__items", "column": "order_id", "ref_table": "shop__orders",
                                       "ref_column": "id"}]
    assert merged["db_id"] == "warehouse_00"


def test_bm25_document_counts_each_logical_table_once():
    row = merge_group([{"db_id": "shop", "tables": [{"name": "orders", "label": "customer orders",
                                                     "columns": [{"name": "order_total", "label": "total"}]}]}],
                      "w", shard_every=1, shards=5)
    doc = bm25_document(row)
    assert doc.count("total") == 2 and doc.count("customer") == 1  # column name + label; table label once
    assert tokens("Order_Total of shop") == ["order", "total", "of", "shop"]


def test_wide_report_states_the_margin_over_the_better_baseline():
    r = lambda x: RankMetrics(x, x, x, x, x)  # noqa: E731
    m = WideMetrics("b", "schema-only", n=10, databases=3, source_databases=18, columns_mean=400, columns_max=900,
                    tables_max=50, dbrouter=r(0.7), bm25=r(0.4), mean_table=r(0.45), first_stage_k=3,
                    first_stage_recall=1.0, first_stage_recall_10=1.0, p50_ms=90.0, p95_ms=120.0, seconds=1.0)
    report = wide_report(m, "dbrouter eval wide --benchmark B")
    assert report.key == "eval wide b schema-only"
    assert "minus the better baseline: +0.2500" in report.markdown
    assert "18 databases merged by domain into 3" in report.markdown
