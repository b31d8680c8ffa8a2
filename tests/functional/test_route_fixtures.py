"""Fixture tests of the routing SQL on a 3-database mini KB built with the hash embedder
(tests/fixtures/mini_kb: seed -> `dbrouter build` -> expected CSVs, as dbt-utils tests its macros).

concerts has declared keys and a sample value; logistics is a 9-table chain of declared keys,
8 hops end to end (beyond dbrouter__max_hops = 6), with its alphabetically first table at one
end; school has keys implied by names only, plus a table joined to nothing. Only what the method
fixes by rule is expected here: exact name/value mappings, N/A counts, coverage, connectivity,
implied-edge need and join paths; hash-embedder cosines are not. The order is the learned
ranker's: it weighs mapped phrases above connectivity (fitted on train), so in
json_disconnected_parts the school database, which maps both phrases in two parts of its join
graph, ranks above databases that map neither.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from dbrouter.kb.connect import connect
from tests.conftest import run_cli

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mini_kb"

# case -> (question, phrase mappings for route_query_ranked_mapped, or None for the embedding mapper)
CASES = {
    "exact_names_declared_path": ("What is the capacity of the stadium of each concert?", None),
    "chain_ends_connected": ("Which area does the parcel with the largest weight come from?", None),
    "value_match": ("Singers from France", None),
    "json_disconnected_parts": ("Which dish does the student eat?", [
        {"db_id": "school", "phrase": "dish", "table_name": "canteen_dish", "column_name": "dish_name"},
        {"db_id": "school", "phrase": "student", "table_name": "student", "column_name": "student_name"}]),
    "json_implied_edges_unknown_column": ("Show the title of each course and the student name", [
        {"db_id": "school", "phrase": "title", "table_name": "course", "column_name": "title"},
        {"db_id": "school", "phrase": "student", "table_name": "Student", "column_name": "STUDENT_NAME"},
        {"db_id": "school", "phrase": "name", "table_name": "nosuch", "column_name": "x"},
        {"db_id": "concerts", "phrase": "name", "table_name": "singer", "column_name": "name"},
        {"db_id": "concerts", "phrase": "course", "table_name": None, "column_name": None}]),
}
EVIDENCE_COLUMNS = ["case", "rank", "db_id", "stage", "phrases", "na_phrases", "coverage", "connectivity",
                    "needs_implied_edges", "join_tables", "join_path", "total_score"]


def read_csv(name: str) -> list[dict[str, str]]:
    with open(FIXTURES / name, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def as_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return " ".join(value)
    return str(value)


@pytest.fixture(scope="module")
def mini_con(tmp_path_factory):
    warehouse = tmp_path_factory.mktemp("mini_kb") / "kb.duckdb"
    run_cli("build", "--sources", str(FIXTURES / "sources.yml"), "--warehouse", str(warehouse))
    con = connect(warehouse)
    yield con
    con.close()


def evidence_rows(con, case: str) -> list[dict[str, str]]:
    question, mappings = CASES[case]
    if mappings is None:
        rows = con.execute("select rank, db_id, evidence from route_query_ranked(?, 3)", [question]).fetchall()
    else:
        rows = con.execute("select rank, db_id, evidence from route_query_ranked_mapped(?, ?, 3)",
                           [question, json.dumps(mappings)]).fetchall()
    out = []
    for rank, db_id, evidence in rows:
        ev = json.loads(evidence)
        out.append({"case": case, "rank": str(rank), "db_id": db_id,
                    **{k: as_text(ev[k]) for k in EVIDENCE_COLUMNS[3:]}})
    return out


def test_components_do_not_depend_on_the_hop_limit(mini_con):
    got = mini_con.execute("select table_key, component, declared_component from kb_table_components "
                           "order by table_key").fetchall()
    assert [dict(zip(("table_key", "component", "declared_component"), r)) for r in got] == \
        read_csv("expected_table_components.csv")
    # the chain's ends are 8 hops apart: beyond max_hops for reachability, one part all the same
    assert mini_con.execute("select count(*) from kb_table_reachability where db_id = 'logistics' "
                            "and from_table = 'parcel' and to_table = 'area'").fetchall()[0][0] == 0
    parts = dict(mini_con.execute("select db_id, n_components from kb_database_connectivity").fetchall())
    assert parts == {"concerts": 1, "logistics": 1, "school": 2}


def test_join_edges_declared_and_implied(mini_con):
    got = mini_con.execute("select db_id, from_table, from_column, to_table, to_column, is_declared "
                           "from kb_join_edges order by all").fetchall()
    want = [(r["db_id"], r["from_table"], r["from_column"], r["to_table"], r["to_column"], r["is_declared"] == "true")
            for r in read_csv("expected_join_edges.csv")]
    assert got == sorted(want)


def test_exact_phrase_mappings(mini_con):
    """'singer' names the singer table (its key column represents it) and singer_in_concert's
    columns (its key column and singer_id, whose name holds the word) - not every column of the
    table; 'france' is a sample value of singer.country, a value match, not a name match."""
    rows = mini_con.execute(
        "select db_id, phrase, table_name, column_name, match_kind from route_phrase_mappings('Singers from France', 3) "
        "where match_kind in ('name', 'value') order by all").fetchall()
    want = [(r["db_id"], r["phrase"], r["table_name"], r["column_name"], r["match_kind"])
            for r in read_csv("expected_exact_mappings.csv")]
    assert rows == sorted(want)
    exact = mini_con.execute("select count(*) from route_phrase_mappings('Singers from France', 3) "
                             "where is_exact <> (match_kind = 'name')").fetchone()[0]
    assert exact == 0


def test_route_evidence_matches_expected(mini_con):
    got = [row for case in CASES for row in evidence_rows(mini_con, case)]
    want = read_csv("expected_evidence.csv")
    assert [{k: r[k] for k in EVIDENCE_COLUMNS} for r in got] == want


def test_evidence_is_the_same_on_every_run(mini_con):
    for question, _ in CASES.values():
        runs = {json.dumps(mini_con.execute("select * from route_query_ranked(?, 3)", [question]).fetchall())
                for _ in range(3)}
        assert len(runs) == 1, question


def test_a_phrase_without_known_tokens_maps_to_nothing_and_scores_zero(mini_con):
    """A zero phrase vector has a NaN cosine, and DuckDB orders NaN above every number."""
    mappings = [{"db_id": "school", "phrase": "%%%", "table_name": "student", "column_name": "student_name"}]
    rows = mini_con.execute("select db_id, evidence from route_query_ranked_mapped(?, ?, 3)",
                            ["%%% students", json.dumps(mappings)]).fetchall()
    school = json.loads(dict(rows)["school"])
    assert school["semantic_score"] == 0.0 and school["mappings"][0]["similarity"] == 0.0
    assert school["coverage"] == 1.0 and school["total_score"] == 1.0
