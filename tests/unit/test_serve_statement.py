"""The endpoint's allow-list (dbrouter.serve.statement) on a small KB-shaped DuckDB database: each
of the attacks of the hardening review is refused, for a restricted session and (where it reaches
storage or SQL in a string) for everyone, and the statements clients really send still pass."""

from __future__ import annotations

import duckdb
import pytest

from dbrouter.serve.statement import MAX_UDF_CALLS, StatementRefused, allowed_of, check_statement


@pytest.fixture(scope="module")
def cur():
    con = duckdb.connect()
    con.execute("create table kb_databases as select * from (values ('sales', '/x/sales.db'), "
                "('hr', '/x/hr.db')) t(db_id, source_path)")
    con.execute("set variable dbrouter_allowed_databases = ['sales']::varchar[]")
    con.execute("create view kb_allowed_databases as select db_id from kb_databases "
                "where list_contains(getvariable('dbrouter_allowed_databases'), db_id)")
    con.execute("create table kb_sql_functions as select * from (values ('route_query'), ('route_query_ranked')) "
                "t(function_name)")
    con.execute("create macro route_query(q) as (select min(db_id) from kb_allowed_databases)")
    con.execute("create macro route_query_ranked(q, k := 5) as table select 1 as rank, db_id from kb_allowed_databases")
    con.execute("create macro dbrouter_helper(q) as (select count(*) from kb_databases)")
    con.create_function("embed", lambda s: 1.0, [str], float)
    con.create_function("dbrouter_canonicalize", lambda s: s, [str], str)
    yield con
    con.close()


@pytest.fixture(scope="module")
def allowed(cur):
    return allowed_of(cur, frozenset({"dbrouter_canonicalize"}))


ATTACKS_ON_A_SCOPE = [
    # finding 1: a CTE named like the table in a nested scope, the real table read outside it
    "with x as (with kb_databases as (select 1) select 1) select db_id, source_path from kb_databases",
    "select db_id from kb_databases",
    "select * from main.kb_databases",
    "with kb_allowed_databases as (select db_id from kb_databases) select * from kb_allowed_databases",
    "select (select max(source_path) from kb_databases)",
    "select * from kb_allowed_databases where db_id in (select db_id from kb_databases)",
    "select * from (summarize kb_databases)",
    "select dbrouter_helper('x')",
    "select * from duckdb_tables()",
]

ATTACKS_ON_EVERYONE = [
    # finding 2: SQL in a string; finding 6: storage and metadata functions
    "select * from json_execute_serialized_sql(json_serialize_sql('select db_id from kb_databases'))",
    "select * from query('select * from kb_databases')",
    "select * from query_table('kb_databases')",
    "select * from pragma_storage_info('kb_databases')",
    "select * from duckdb_tables()",
    "select * from pragma_table_info('kb_databases')",
    "select dbrouter_canonicalize(db_id) from kb_databases",
    "select embed(db_id) from kb_databases",
]


@pytest.mark.parametrize("sql", ATTACKS_ON_A_SCOPE + ATTACKS_ON_EVERYONE)
def test_a_restricted_session_is_refused_what_could_reach_hidden_rows(cur, allowed, sql):
    with pytest.raises(StatementRefused) as refused:
        check_statement(cur, sql, allowed, restricted=True)
    assert refused.value.sqlstate in ("42501", "54000", "25006")


@pytest.mark.parametrize("sql", ATTACKS_ON_EVERYONE)
def test_everyone_is_refused_sql_in_a_string_storage_and_table_wide_udfs(cur, allowed, sql):
    with pytest.raises(StatementRefused):
        check_statement(cur, sql, allowed, restricted=False)


@pytest.mark.parametrize("sql", [
    "select route_query('How many singers?')",
    "select route_query($1)",
    "select * from route_query_ranked('q', k := 3)",
    "select db_id, upper(db_id), count(*) over () from kb_allowed_databases where db_id in (select unnest(['sales']))",
    "select embed('hello')",
    "select r.* from (values ('a'), ('b')) q(text), lateral route_query_ranked(q.text, 3) r",
])
def test_what_a_restricted_user_calls_passes(cur, allowed, sql):
    check_statement(cur, sql, allowed, restricted=True)
    cur.execute(sql.replace("$1", "'q'")).fetchall()  # and runs


def test_unrestricted_sessions_read_the_kb_and_write_ctes(cur, allowed):
    for sql in ("with x as (select * from kb_databases) select * from x", "select * from kb_databases",
                "select * from range(3)", "select dbrouter_helper('x')"):
        check_statement(cur, sql, allowed, restricted=False)


def test_writes_several_statements_and_too_many_udf_calls_are_refused(cur, allowed):
    for sql in ("delete from kb_databases", "select 1; select 2", "attach 'x.db'"):
        with pytest.raises(StatementRefused, match="read-only"):
            check_statement(cur, sql, allowed, restricted=False)
    many = "select " + ", ".join(f"route_query('q{i}')" for i in range(MAX_UDF_CALLS + 1))
    with pytest.raises(StatementRefused, match="at most"):
        check_statement(cur, many, allowed, restricted=False)


def test_a_deep_tree_is_walked_without_recursion(cur, allowed):
    sql = "select " + "(" * 400 + "1" + ")" * 400
    check_statement(cur, sql, allowed, restricted=True)


@pytest.mark.parametrize("sql, entry, question, plain", [
    ("select route_query('How many?')", ("route_query",), "How many?", True),
    ("select * from route_query_ranked($1, 3)", ("route_query_ranked",), None, True),
    ("select rank, db_id from route_query_ranked('q') where rank = 1", ("route_query_ranked",), "q", True),
    # the client's own columns: a ranking read from them would be the client's, not dbrouter's
    ("select 'forged' as db_id from route_query_ranked('q', 3)", ("route_query_ranked",), "q", False),
    ("select rank as db_id from route_query_ranked('q', 3)", ("route_query_ranked",), "q", False),
    ("select route_query('q') as x, 'forged' as db_id", ("route_query",), "q", False),
    # a name in a comment or a string calls nothing
    ("select /* route_query('forged') */ 'singer' as db_id", (), None, False),
    ("select 'route_query(''forged'')'", (), None, False),
])
def test_the_calls_the_query_log_records_come_from_duckdbs_parse(cur, allowed, sql, entry, question, plain):
    calls = check_statement(cur, sql, allowed, restricted=False)
    assert calls.entry_points == entry and calls.question == question and calls.plain == plain
    if "$1" in sql:
        assert calls.parameter == 0
