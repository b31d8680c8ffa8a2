"""The plain route_query / route_query_json of a read-only dbrouter.connect() connection
(dbrouter/kb/held_sql.py) answer exactly as the planned UDF-path names, under the caller's scope,
held from the second question on; a writable connection keeps the planned macros."""

from __future__ import annotations

import json

import duckdb
import pytest

import dbrouter
from dbrouter.access import scope_ddl
from dbrouter.kb import held, held_sql

QUESTIONS = ["How many singers do we have?", "Show the name and country of every singer older than 40",
             "What's O'Brien's flight number?", "¿Cuántos aeropuertos hay en Francia?", "", "weather in Paris",
             "How many concerts were held in 2014? " * 20]


@pytest.fixture()
def con(built_kb):
    c = dbrouter.connect(built_kb["warehouse"], embedder="hash")
    yield c
    c.close()


def _hold_key(con) -> str:
    macro = con.execute("select macro_definition from duckdb_functions() where function_name = 'route_query' "
                        "and database_name = 'temp'").fetchall()[0][0]
    return macro.split("'")[1]


def _hold(con) -> held_sql._Hold:
    return held_sql._STATES[_hold_key(con)]


def _planned(con, sql: str, params: list) -> list:
    cursor = con.cursor()  # a cursor has no temp macros: the file's planned _udf names
    try:
        variable = con.execute(f"select getvariable('{held_sql.SCOPE_VARIABLE}')").fetchall()[0][0]
        if variable is not None:
            cursor.execute(scope_ddl(variable))
        return cursor.execute(sql, params).fetchall()
    finally:
        cursor.close()


def test_plain_names_answer_as_the_planned_udf_path_and_are_held(con):
    for q in QUESTIONS + [None]:
        for k in (1, 5):
            got = con.execute("select route_query(?), route_query_json(?, ?)", [q, q, k]).fetchall()
            assert got == _planned(con, "select route_query_udf(?), route_query_json_udf(?, ?)", [q, q, k]), (q, k)
    for k in (2.6, 0.5, -3, None, 1e300, float("nan")):  # k as the macro compares it, never rounded
        assert con.execute("select route_query_json(?, ?)", [QUESTIONS[0], k]).fetchall() == \
            _planned(con, "select route_query_json_udf(?, ?)", [QUESTIONS[0], k]), k
    assert con.execute("select route_query_json(?)", [QUESTIONS[0]]).fetchall() == \
        _planned(con, "select route_query_json_udf(?)", [QUESTIONS[0]])  # the KB's default k
    holder = held._HOLDERS[_hold(con).base]
    assert holder.calls > 1  # answered on the hold's cursor, held from its second call
    assert holder.scopes[None].ks == {"dbrouter_route_query_json_udf_1", "dbrouter_route_query_json_udf_5",
                                      "dbrouter_route_query_json_udf_2", "dbrouter_route_query_json_udf_0",
                                      "dbrouter_route_query_json_udf_m3", "dbrouter_route_query_udf"}


def test_dbrouter_route_and_the_plain_names_share_one_set_of_copies(con):
    from dbrouter.kb.held import held_route_json

    for _ in range(2):
        held_route_json(con, QUESTIONS[0], 3)
        con.execute("select route_query(?)", [QUESTIONS[0]]).fetchall()
    assert held._HOLDERS[_hold(con).base].tables is held._HOLDERS[con].tables is held._COPIES[con]


def test_a_column_of_questions_is_answered_row_by_row(con):
    rows = con.execute("select q, route_query(q) from (values (?), (?), (null), (?)) t(q) order by all",
                       QUESTIONS[:3]).fetchall()
    assert rows == _planned(con, "select q, route_query_udf(q) from (values (?), (?), (null), (?)) t(q) order by all",
                            QUESTIONS[:3])


def test_the_callers_scope_holds_on_the_held_answer(con):
    every = [r[0] for r in con.execute("select db_id from kb_databases order by 1").fetchall()]
    con.execute("select route_query(?)", [QUESTIONS[0]]).fetchall()
    for scope in (["flight_1"], every[:3], [], None, ["flight_1"]):
        con.execute(scope_ddl(scope))
        got = con.execute("select route_query_json(?, 10)", [QUESTIONS[0]]).fetchall()
        assert got == _planned(con, "select route_query_json_udf(?, 10)", [QUESTIONS[0]]), scope
        ranked = {c["db_id"] for c in json.loads(got[0][0])["ranking"]}
        assert ranked <= set(every if scope is None else scope), scope
    assert held._HOLDERS[_hold(con).base].answers.hits == 1  # the second ["flight_1"]: its scope's kept answer
    con.execute(scope_ddl(None))


def test_a_scope_that_is_not_a_list_of_names_is_a_clear_error(con):
    con.execute(f"set variable {held_sql.SCOPE_VARIABLE} = 42")
    with pytest.raises(duckdb.Error, match="must be a list of database names"):
        con.execute("select route_query(?)", [QUESTIONS[0]]).fetchall()
    con.execute(scope_ddl(None))


def test_the_udf_answers_only_a_connections_own_key(con):
    with pytest.raises(duckdb.Error, match="call those instead"):
        con.execute(f"select {held_sql.SQL_UDF}('sql-nope', 'route_query_udf', 'x', null, null)").fetchall()
    with pytest.raises(duckdb.Error, match="call those instead"):
        con.execute(f"select {held_sql.SQL_UDF}(?, 'kb_databases', 'x', null, null)",
                    [_hold_key(con)]).fetchall()


def test_a_writable_connection_keeps_the_planned_macros(built_kb, tmp_path):
    import shutil

    copy = tmp_path / "kb.duckdb"
    shutil.copy(built_kb["warehouse"], copy)
    c = dbrouter.connect(copy, read_only=False, embedder="hash")
    try:
        macro = c.execute("select macro_definition from duckdb_functions() where function_name = 'route_query' "
                          "and database_name = 'temp'").fetchall()[0][0]
        assert held_sql.SQL_UDF not in macro and "route_query_udf" in macro
    finally:
        c.close()


def test_a_ddl_without_the_known_bodies_is_left_as_it_is(con):
    ddl = "create or replace temp macro route_query(question) as (route_query_udf(question, 1));"
    assert held_sql.held_ddl(con, ddl) == ddl
