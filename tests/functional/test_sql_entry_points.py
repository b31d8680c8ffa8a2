"""The SQL entry points are declared once (macro sql_entry_points): the DuckDB KB creates exactly
those names, parameters and result columns on both paths and as plain names, kb_sql_functions
lists them, and docs/reference.md's table is that list. (The Snowflake DDL is checked against the same
declaration in test_snowflake_dbt.py.)"""

from __future__ import annotations

import re

from tests.conftest import ROOT

BEGIN, END = "<!-- sql-entry-points:begin (generated from kb_sql_functions; test_sql_entry_points.py) -->", \
    "<!-- sql-entry-points:end -->"


def readme_table(rows: list[tuple]) -> str:
    """The docs/reference.md block for kb_sql_functions rows (function_name, kind, signature, returns, description)."""
    lines = ["| entry point | kind | returns | what it answers |", "|---|---|---|---|"]
    for _name, kind, signature, returns, description in rows:
        lines.append(f"| `{signature}` | {kind} | {returns} | {description} |")
    return "\n".join(lines)


def _declared(kb_con) -> list[tuple]:
    return kb_con.execute("select function_name, function_kind, signature, returns, description "
                          "from kb_sql_functions").fetchall()


def test_readme_lists_exactly_the_declared_entry_points(kb_con):
    text = (ROOT / "docs" / "reference.md").read_text()
    assert BEGIN in text and END in text, "docs/reference.md lost its generated entry-point table"
    block = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert block == readme_table(_declared(kb_con)), (
        "docs/reference.md's entry-point table is stale; replace the block between the markers with:\n"
        + readme_table(_declared(kb_con)))


def test_duckdb_creates_every_declared_entry_point_with_its_parameters_and_columns(kb_con):
    functions = {}
    for name, params in kb_con.execute(
            "select function_name, parameters from duckdb_functions() where database_name = current_database() "
            "and function_type in ('macro', 'table_macro')").fetchall():
        functions[name] = params
    for name, kind, signature, returns, _ in _declared(kb_con):
        params = [p.split(" := ")[0] for p in re.search(r"\((.*)\)", signature)[1].split(", ") if p]
        paths = ["", "_udf", "_sql"] if name not in ("route_shortlist_k", "route_first_stage_k", "route_ranker_weights",
                                                       "route_abstain_below") else [""]
        if name == "route_query_json_mapped":  # plain: false: the paths only, no wrapper a connection binds
            assert name not in functions
            paths = ["_udf", "_sql"]
        for suffix in paths:
            assert functions.get(name + suffix) == params, (name + suffix, functions.get(name + suffix), params)
            if kind == "table":
                args = ", ".join("'x'" if p in ("question", "db") else "'[]'" if p == "mappings" else "[]"
                                 if p == "exclude" else "1" for p in params)
                cols = [d[0] for d in kb_con.execute(f"select * from {name}{suffix}({args}) limit 0").description]
                assert ", ".join(cols) == returns, (name + suffix, cols)
