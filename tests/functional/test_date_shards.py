"""Date-sharded tables (int_table_shards_grouped): shards with identical columns are one logical
table, documented and embedded once; a shard whose columns differ, a year-only suffix and a
name that is only a date stay tables of their own."""

from __future__ import annotations

import json

import pytest

from dbrouter.kb.connect import connect
from tests.conftest import run_cli


def _table(name: str, columns: list[tuple[str, str]]) -> dict:
    return {"name": name, "columns": [{"name": c, "type": t} for c, t in columns]}


EVENTS = [("event_id", "integer"), ("user_id", "integer"), ("event_name", "text"), ("event_time", "timestamp")]


@pytest.fixture(scope="module")
def shard_kb(tmp_path_factory):
    base = tmp_path_factory.mktemp("shards")
    tables = [_table(f"events_202401{d:02d}", EVENTS) for d in range(1, 31)]
    tables += [
        _table("events_20240131", EVENTS + [("country", "text")]),  # a new column: not the same table
        _table("sessions_2024_01", [("session_id", "integer"), ("user_id", "integer")]),
        _table("sessions_2024_02", [("session_id", "integer"), ("user_id", "integer")]),
        _table("report_2024", [("id", "integer")]),  # a year alone is no date shard
        _table("report_2025", [("id", "integer")]),
        _table("users", [("user_id", "integer"), ("name", "text")]),
    ]
    rows = [{"db_id": "analytics", "tables": tables, "foreign_keys": []},
            {"db_id": "shop", "tables": [_table("orders", [("order_id", "integer"), ("amount", "real")])],
             "foreign_keys": []}]
    (base / "databases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (base / "sources.yml").write_text("databases:\n  - type: schema_json\n    path: databases.jsonl\n")
    warehouse = base / "kb.duckdb"
    run_cli("build", "--sources", str(base / "sources.yml"), "--warehouse", str(warehouse))
    con = connect(warehouse, embedder="hash")
    yield con
    con.close()


def test_shards_are_one_logical_table(shard_kb):
    rows = shard_kb.execute("select table_name, shard_count, shard_pattern, first_shard, last_shard from kb_tables "
                            "where db_id = 'analytics' order by table_name").fetchall()
    assert rows == [
        ("events_20240130", 30, "events_*", "events_20240101", "events_20240130"),
        ("events_20240131", 1, None, None, None),
        ("report_2024", 1, None, None, None),
        ("report_2025", 1, None, None, None),
        ("sessions_2024_02", 2, "sessions_*", "sessions_2024_01", "sessions_2024_02"),
        ("users", 1, None, None, None),
    ]


def test_a_shard_group_is_documented_and_embedded_once(shard_kb):
    docs = shard_kb.execute("select doc_label, document_text from kb_documents where doc_kind = 'table' "
                            "and db_id = 'analytics' and doc_label like 'events%' order by 1").fetchall()
    assert [d[0] for d in docs] == ["events_20240130", "events_20240131"]
    assert "date-sharded: 30 shards events_20240101 .. events_20240130" in docs[0][1]
    assert "date-sharded" not in docs[1][1]
    n_columns = shard_kb.execute("select count(*) from kb_columns where db_id = 'analytics' "
                                 "and table_name like 'events_202401%'").fetchall()[0][0]
    assert n_columns == len(EVENTS) + len(EVENTS) + 1  # the kept shard and the differing table
    embedded = shard_kb.execute("select count(*) from kb_document_embeddings where db_id = 'analytics' "
                                "and doc_kind = 'column'").fetchall()[0][0]
    assert embedded == n_columns + 2 + 1 + 1 + 2  # sessions, report_2024, report_2025, users


def test_a_sharded_repository_still_routes(shard_kb):
    assert shard_kb.execute("select route_query_udf('which events did each user have')").fetchall()[0][0] == "analytics"
