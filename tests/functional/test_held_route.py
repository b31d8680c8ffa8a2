"""The routing query held per connection (dbrouter/kb/held.py) answers exactly as the query
planned for each question, under every access scope, and is in fact not planned again."""

from __future__ import annotations

import json
import re
import shutil

import duckdb
import pytest

import dbrouter
from dbrouter.access import scope_ddl
from dbrouter.kb import held
from dbrouter.kb.held import held_route_json
from dbrouter.routing.route import route

QUESTIONS = ["How many singers do we have?", "Show the name and country of every singer older than 40",
             "list the courses taught by each teacher", "What's O'Brien's flight number?",
             "¿Cuántos aeropuertos hay en Francia?", "", "   ", "weather tomorrow in Paris",
             "How many concerts were held in 2014? " * 20]
HIDDEN = ("concert_singer", "singer")


def _planned(con, question: str, k: int) -> str:
    return con.execute("select route_query_json_udf(?, ?)", [question, k]).fetchall()[0][0]


@pytest.fixture()
def con(built_kb):
    c = dbrouter.connect(built_kb["warehouse"], embedder="hash")
    yield c
    c.close()


def test_the_held_route_answers_exactly_as_the_planned_query(con):
    assert held_route_json(con, QUESTIONS[0], 3) is None  # the first question: nothing held yet
    for k in (1, 3, 10, 0, -2):  # k below 1 answers as 1, as the planned query does
        for q in QUESTIONS:
            got = held_route_json(con, q, k)
            assert got is not None, q
            assert got == _planned(con, q, k), (q, k)
    holder = held._HOLDERS[con]
    assert set(holder.tables) >= {"kb_databases", "kb_table_terms"}
    assert "kb_walk_edges" not in holder.tables  # read by dbrouter_join_paths in the UDF process
    assert "embedding" not in holder.tables.get("kb_document_embeddings").column_names  # vectors stay in the file
    assert sorted(holder.scopes[None].ks) == [f"dbrouter_route_query_json_udf_{k}" for k in (0, 1, 10, 3, "m2")]


def test_route_reads_the_held_plan_and_gets_the_same_result(con):
    first = route(con, QUESTIONS[1], k=5)
    second = route(con, QUESTIONS[1], k=5)
    assert held._HOLDERS[con].scopes  # the second call was held
    assert first == second


def test_a_scope_gets_its_own_held_rows_and_never_another_scopes(con):
    every = [r[0] for r in con.execute("select db_id from kb_databases").fetchall()]
    allowed = [d for d in every if d not in HIDDEN]
    held_route_json(con, QUESTIONS[0], 10)
    for _ in range(2):  # each scope twice: made once, then reused
        for scope in (allowed, None, [], ["flight_1"]):
            con.execute(scope_ddl(scope))
            got = held_route_json(con, QUESTIONS[0], 10)
            assert got == _planned(con, QUESTIONS[0], 10)
            ranked = {c["db_id"] for c in json.loads(got)["ranking"]}
            if scope is not None:
                assert ranked <= set(scope), scope
    assert len(held._HOLDERS[con].scopes) == 4
    con.execute(scope_ddl(None))


def test_a_question_asked_again_is_answered_from_the_kept_answers_of_its_scope_and_k(con):
    """The same question, scope and k again: the kept answer, equal to the planned query's, and the
    held statement does not run (its cursor is closed to prove it). Another scope or k is not it."""
    held_route_json(con, QUESTIONS[1], 5)  # the first call: planned, nothing held
    first = held_route_json(con, QUESTIONS[1], 5)
    holder = held._HOLDERS[con]
    assert len(holder.answers) == 1 and holder.answers.hits == 0
    holder.scopes[None].con.close()  # a kept answer reads nothing: running the statement would fail
    assert held_route_json(con, QUESTIONS[1], 5) == first == _planned(con, QUESTIONS[1], 5)
    assert holder.answers.hits == 1
    holder.scopes.clear()  # the closed cursor is made again on the next held call
    con.execute(scope_ddl(["flight_1"]))
    scoped = held_route_json(con, QUESTIONS[1], 5)
    assert scoped == _planned(con, QUESTIONS[1], 5) != first
    assert held_route_json(con, QUESTIONS[1], 3) == _planned(con, QUESTIONS[1], 3)
    assert holder.answers.hits == 1  # neither the other scope nor the other k was a kept answer
    con.execute(scope_ddl(None))


def test_with_dbrouter_kept_answers_0_a_question_asked_again_is_routed_again(built_kb, monkeypatch):
    monkeypatch.setenv("DBROUTER_KEPT_ANSWERS", "0")
    c = dbrouter.connect(built_kb["warehouse"], embedder="hash")
    try:
        held_route_json(c, QUESTIONS[1], 5)  # the first call: planned, nothing held
        first = held_route_json(c, QUESTIONS[1], 5)
        holder = held._HOLDERS[c]
        again = held_route_json(c, QUESTIONS[1], 5)
        assert again == first and len(holder.answers) == 0 and holder.answers.hits == 0
        holder.scopes[None].con.close()  # routed again, so the closed cursor is what answers: it fails
        with pytest.raises(duckdb.ConnectionException):
            held_route_json(c, QUESTIONS[1], 5)
    finally:
        c.close()


def test_scopes_beyond_the_bound_are_dropped_and_made_again(con, monkeypatch):
    monkeypatch.setattr(held, "MAX_SCOPES", 1)
    held_route_json(con, QUESTIONS[0], 5)
    for scope in (["flight_1"], None, ["flight_1"]):
        con.execute(scope_ddl(scope))
        assert held_route_json(con, QUESTIONS[0], 5) == _planned(con, QUESTIONS[0], 5)
        assert len(held._HOLDERS[con].scopes) == 1
    con.execute(scope_ddl(None))


def _profile(cursor, sql: str, out) -> dict:
    cursor.execute("PRAGMA enable_profiling='json'")
    cursor.execute(f"SET profiling_output='{out}'")
    cursor.execute(sql).fetchall()
    cursor.execute("PRAGMA disable_profiling")
    return json.loads(out.read_text())


def _operators(node: dict) -> list[dict]:
    return [node] + [op for child in node.get("children", []) for op in _operators(child)]


def test_the_held_statement_is_not_planned_again(con, tmp_path):
    """DuckDB's profiler: binding and optimising the held EXECUTE take a small fraction of what the
    same route planned for its question takes, and the held plan is not a correlated subquery (the
    question is no column DuckDB carries through the joins of a decorrelated plan)."""
    held_route_json(con, QUESTIONS[0], 5)
    cursor, sql = held.held_statement(con, held.ENTRY, QUESTIONS[2], 5)
    held_profile = _profile(cursor, sql, tmp_path / "held.json")
    q = QUESTIONS[2].replace("'", "''")
    planned = _profile(con, f"select route_query_json_udf('{q}', 5)", tmp_path / "planned.json")

    def planning(d: dict) -> float:
        return d["planner"]["total_time"] + d["optimizer"]["total_time"]

    assert planning(planned) > 0.005
    assert planning(held_profile) < planning(planned) / 10, (planning(held_profile), planning(planned))
    ops = [op for root in held_profile["operator"] for op in _operators(root)]
    assert len(ops) > 100  # the routing query's operators, profiled
    joined_on_question = [op for op in ops
                          if re.search(r"\bquestion\b", json.dumps(op.get("extra_info", {}).get("Conditions", "")))]
    assert not joined_on_question


def test_threads_sharing_a_connection_each_get_their_own_questions_answer(con):
    """The held statement reads its question from the cursor's slot (held.QUESTION_UDF): a question
    set by one thread is never answered for another."""
    import threading

    held_route_json(con, QUESTIONS[0], 3)
    asked = QUESTIONS[:5] + QUESTIONS[7:8]
    expected = {q: _planned(con, q, 3) for q in asked}
    got: list[tuple[str, str | None]] = []
    errors: list[BaseException] = []

    def ask(questions: list[str]) -> None:
        try:
            for q in questions * 3:
                got.append((q, held_route_json(con, q, 3)))
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=ask, args=(asked[i::2],)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(got) == 3 * len(asked)
    assert all(answer == expected[q] for q, answer in got), [q for q, answer in got if answer != expected[q]]


def test_a_connection_that_can_write_or_a_large_kb_is_not_held(built_kb, tmp_path, monkeypatch):
    copy = tmp_path / "kb.duckdb"
    shutil.copyfile(built_kb["warehouse"], copy)
    rw = dbrouter.connect(copy, embedder="hash", read_only=False)
    try:
        assert [held_route_json(rw, QUESTIONS[0], 3) for _ in range(3)] == [None] * 3
    finally:
        rw.close()
    monkeypatch.setattr(held, "MAX_HELD_ROWS", 10)
    ro = dbrouter.connect(copy, embedder="hash")
    try:
        assert [held_route_json(ro, QUESTIONS[0], 3) for _ in range(3)] == [None] * 3
        assert route(ro, QUESTIONS[0], k=3).best is not None  # planned as before
    finally:
        ro.close()


def test_a_route_the_copies_cannot_bind_is_planned_as_before_and_says_so(con, monkeypatch, capsys):
    held_route_json(con, QUESTIONS[0], 3)
    real = held._named_columns

    def missing_a_column(c, macros):
        columns = real(c, macros)
        columns["kb_table_terms"] = [x for x in columns["kb_table_terms"] if x != "weight"]
        return columns

    monkeypatch.setattr(held, "_named_columns", missing_a_column)
    assert held_route_json(con, QUESTIONS[0], 3) is None
    assert "could not be held" in capsys.readouterr().err
    assert held_route_json(con, QUESTIONS[0], 3) is None  # and stays planned
    assert route(con, QUESTIONS[0], k=3).candidates


def test_the_statements_per_k_are_bounded(con, monkeypatch):
    monkeypatch.setattr(held, "MAX_KS", 2)
    held_route_json(con, QUESTIONS[0], 1)
    for k in (1, 2, 3, 4, 2):
        assert held_route_json(con, QUESTIONS[0], k) == _planned(con, QUESTIONS[0], k)
        assert len(held._HOLDERS[con].scopes[None].ks) <= 2


def test_interrupting_the_connection_reaches_its_held_cursors(con):
    """A caller bounding a call's time (dbrouter mcp's tools) interrupts the connection; the held
    question runs on cursors of its own, which held.interrupt stops as well."""

    class Recorder:
        def __init__(self, real):
            self.real, self.interrupted = real, 0

        def interrupt(self):
            self.interrupted += 1

        def __getattr__(self, name):
            return getattr(self.real, name)

    held_route_json(con, QUESTIONS[0], 5)
    held_route_json(con, QUESTIONS[0], 5)
    scoped = held._HOLDERS[con].scopes[None]
    scoped.con = recorder = Recorder(scoped.con)
    held.interrupt(con)
    assert recorder.interrupted == 1
    scoped.con = recorder.real
    assert held_route_json(con, QUESTIONS[1], 5) == _planned(con, QUESTIONS[1], 5)  # nothing left interrupted


def test_the_endpoint_timeout_interrupts_through_held_and_holding_survives_it(built_kb, monkeypatch):
    """dbrouter mcp's tools run on KnowledgeBase.cursor, whose timer must stop a held route too: it
    calls held.interrupt (which reaches the held cursors, the test above). Interrupts that land
    during the held setup leave holding on. (Whether a 1 ms timer lands inside a statement or
    between two is timing, so the routes under it may answer or stop; either is fine here.)"""
    import time

    from dbrouter.serve import knowledge
    from dbrouter.serve.knowledge import KnowledgeBase

    fired = []
    monkeypatch.setattr(knowledge, "interrupt", lambda c: (fired.append(c), held.interrupt(c)))
    kb = KnowledgeBase(built_kb["warehouse"], timeout=0.001)
    try:
        with kb.cursor(shared=True) as con:
            time.sleep(0.05)
        assert fired == [con]
        for _ in range(3):
            try:
                with kb.cursor(shared=True) as con:
                    got = route(con, QUESTIONS[1], k=3)
                assert got.candidates
            except Exception as exc:  # noqa: BLE001 - stopped by the timer: it must say so
                assert "Interrupt" in type(exc).__name__, exc
        assert held._HOLDERS[con].usable is not False
        kb.timeout = 60
        with kb.cursor(shared=True) as con:
            route(con, QUESTIONS[1], k=3)
            assert route(con, QUESTIONS[2], k=3).candidates
            assert held._HOLDERS[con].scopes  # held now
    finally:
        kb.close()


@pytest.mark.parametrize("value", ["'flight_1'", "['flight_1', NULL]", "42", "[]::varchar[]"])
def test_a_malformed_scope_fails_or_answers_as_the_planned_query_and_holding_stays(con, value):
    held_route_json(con, QUESTIONS[0], 3)
    con.execute(f"set variable dbrouter_allowed_databases = {value}")

    def outcome(call):
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - the error's type is what is compared
            return type(exc).__name__

    held_answer = outcome(lambda: held_route_json(con, QUESTIONS[0], 3))
    assert held_answer == outcome(lambda: _planned(con, QUESTIONS[0], 3))
    con.execute(scope_ddl(None))
    assert held._HOLDERS[con].usable is True
    assert held_route_json(con, QUESTIONS[0], 3) == _planned(con, QUESTIONS[0], 3)


@pytest.mark.parametrize("sql, params", [
    ("select route_query('How many singers do we have?')", None),
    ("SELECT route_query_json($1, 3)", [QUESTIONS[1]]),
    ("select route_query_udf('What''s O''Brien''s flight number?');", None),
    ("-- Metabase:: userID: 1 queryType: native queryHash: 5f3a\nselect route_query($1)", [QUESTIONS[2]]),
])
def test_serve_answers_a_plain_routing_call_from_the_held_plan(built_kb, sql, params):
    """A SQL client's `select route_query('...')` on dbrouter serve: the endpoint's first call is
    planned, the next are held by the generation's pool, a new session's first call included (the
    same cursor, not prepared again), and a held answer is kept: the same call again is answered
    from the generation's kept answers; rows, column names and wire types are the planned call's."""
    from dbrouter.kb.answers import Answers
    from dbrouter.serve.knowledge import KnowledgeBase
    from dbrouter.serve.session import KBSession

    kb = KnowledgeBase(built_kb["warehouse"])
    try:
        first, second = KBSession(kb), KBSession(kb)
        tables = [kb.query(sql, params, first) for _ in range(3)]
        pool, kept = held._POOLS[kb._current.con], kb._current.answers
        assert pool.calls == 2 and len(pool.scopes[None]) == 1  # call 2 held, call 3 kept
        assert len(kept) == 1 and kept.hits == 1
        cursor = pool.scopes[None][0]
        assert all(t.equals(tables[0]) and t.schema.equals(tables[0].schema, check_metadata=True) for t in tables)
        assert tables[0].column_names[0].startswith("route_query")
        assert kb.query(sql, params, second).equals(tables[0])  # a new session: the kept answer
        assert pool.calls == 2 and kept.hits == 2
        kb._current.answers = Answers()  # forget it: a new session's first call is held
        assert kb.query(sql, params, second).equals(tables[0])
        assert pool.calls == 3 and pool.scopes[None] == [cursor] and len(cursor.ks) == 1
        assert not second.path  # it never needed the plain names' macros
        aliased = kb.query(sql.rstrip(";") + " as answer", params, first)  # not a plain call: planned
        assert aliased.column_names == ["answer"] and aliased.column(0).equals(tables[0].column(0))
    finally:
        kb.close()


def test_serve_pools_a_cursor_per_scope_and_never_lends_one_across_scopes(built_kb):
    """Sessions of other users (serve --access) get cursors of their own scope: each answers what the
    planned call answers under that scope, and a cursor goes back to its scope's idle list only."""
    from dbrouter.access import UserAccess
    from dbrouter.serve.knowledge import KnowledgeBase
    from dbrouter.serve.session import KBSession

    kb = KnowledgeBase(built_kb["warehouse"])
    sql = "select route_query_json('Which singers sang in a concert?', 10)"
    try:
        sessions = []
        for patterns in [("*",), ("*store*",), ("*",), ("*store*",)]:
            session = KBSession(kb)
            session.access = UserAccess("u", patterns, "PW")
            sessions.append(session)
        answers = [kb.query(sql, None, s).column(0)[0].as_py() for s in sessions for _ in range(2)]
        pool = held._POOLS[kb._current.con]
        assert len(pool.scopes) == 2 and all(len(idle) == 1 for idle in pool.scopes.values())
        for session, answer in zip(sessions, answers[::2]):
            planned = session.db_cursor.execute("select route_query_json_udf('Which singers sang in a concert?', 10)")
            assert answer == planned.fetchall()[0][0]
        stores = {c["db_id"] for c in json.loads(answers[2])["ranking"]}
        assert stores and all("store" in d for d in stores)
        assert answers[0] == answers[4] and answers[2] == answers[6] and answers[0] != answers[2]
    finally:
        kb.close()


def test_sessions_routing_at_once_each_get_their_own_questions_answer(built_kb):
    """Sessions of one scope asking at the same time check out cursors of their own (made as
    needed, at most MAX_IDLE kept idle): every answer is its own question's planned answer."""
    from concurrent.futures import ThreadPoolExecutor

    from dbrouter.serve.knowledge import KnowledgeBase
    from dbrouter.serve.session import KBSession

    kb = KnowledgeBase(built_kb["warehouse"])
    try:
        warm = KBSession(kb)
        expected = {q: kb.query("select route_query_json_udf($1, 3) as a", [q], warm).column(0)[0].as_py()
                    for q in QUESTIONS[:6]}

        def ask(i: int) -> list[tuple[str, str]]:
            session = KBSession(kb)
            return [(q, kb.query("select route_query_json($1, 3)", [q], session).column(0)[0].as_py())
                    for q in QUESTIONS[i % 3:6] + QUESTIONS[:i % 3]]

        with ThreadPoolExecutor(6) as pool:
            answers = [a for batch in pool.map(ask, range(6)) for a in batch]
        assert all(got == expected[q] for q, got in answers)
        idle = held._POOLS[kb._current.con].scopes[None]
        assert 1 <= len(idle) <= held.MAX_IDLE and len({id(c) for c in idle}) == len(idle)
    finally:
        kb.close()


def test_a_pooled_cursor_is_the_callers_alone_until_its_block_ends(con):
    """pooled_statement: inside the block the cursor is out (interrupt(caller) reaches it), after a
    clean block it is idle again, and a block that raises closes it rather than lend it again."""
    share = con
    caller = con.cursor()
    with held.pooled_statement(caller, held.ENTRY, QUESTIONS[0], 5, share) as first:
        assert first is None  # the pool's first call: not held
    with held.pooled_statement(caller, held.ENTRY, QUESTIONS[1], 5, share) as found:
        cursor, statement = found
        assert held._OUT[caller].con is cursor
        assert cursor.execute(statement).fetchall()[0][0] == _planned(con, QUESTIONS[1], 5)
    assert caller not in held._OUT and held._POOLS[share].scopes[None][0].con is cursor
    with pytest.raises(RuntimeError), held.pooled_statement(caller, held.ENTRY, QUESTIONS[2], 5, share) as found:
        assert found[0] is cursor  # the idle one, lent again
        raise RuntimeError("the client went away")
    assert held._POOLS[share].scopes[None] == []
    with pytest.raises(Exception, match="closed"):
        cursor.execute("select 1")
    with held.pooled_statement(caller, held.ENTRY, QUESTIONS[2], 5, share) as found:  # a new one
        assert found[0].execute(found[1]).fetchall()[0][0] == _planned(con, QUESTIONS[2], 5)


def test_serve_makes_a_sessions_plain_name_macros_only_when_a_statement_needs_them(built_kb, tmp_path):
    """Making the plain names' macros costs a session ~50 ms (DuckDB binds each body): a session
    whose statements never name one (`select 1`, a BI tool's catalog queries) does not make them;
    one that does gets the UDF path's answer; a view naming one (through another view) counts."""
    from dbrouter.kb.connect import route_path_ddl
    from dbrouter.serve.knowledge import KnowledgeBase, _path_names
    from dbrouter.serve.session import KBSession

    kb = KnowledgeBase(built_kb["warehouse"])
    try:
        session = KBSession(kb)
        kb.query("select 1", None, session)
        kb.query("select count(*) from kb_databases", None, session)
        assert not session.path
        ranked = kb.query("select db_id from route_query_ranked('How many singers do we have?', 3)", None, session)
        assert session.path
        udf = kb.query("select db_id from route_query_ranked_udf('How many singers do we have?', 3)", None, session)
        assert ranked.column(0).to_pylist() == udf.column(0).to_pylist()
    finally:
        kb.close()
    copy = tmp_path / "kb.duckdb"
    shutil.copy(built_kb["warehouse"], copy)
    import duckdb

    raw = duckdb.connect(str(copy))
    try:
        raw.execute("create view asks as select route_query('How many singers?') as db")
        raw.execute("create view asks_again as select * from asks")
        raw.execute("create view plain_rows as select * from kb_databases")
        names = _path_names(raw, route_path_ddl(raw, "udf"))
    finally:
        raw.close()
    assert {"route_query", "route_query_ranked", "asks", "asks_again"} <= names and "plain_rows" not in names


def test_a_serve_client_cannot_read_the_held_question_of_another_session(built_kb):
    """The held statement's question slot is a UDF of the database every session shares: a client
    calling it would read another session's question. dbrouter serve refuses it by name (its
    internal UDFs, which the sqlglot guard checks before the catalog's allow-list)."""
    from dbrouter.errors import QueryRefused
    from dbrouter.serve.knowledge import KnowledgeBase
    from dbrouter.serve.session import INTERNAL_UDFS, KBSession

    assert held.QUESTION_UDF in INTERNAL_UDFS
    kb = KnowledgeBase(built_kb["warehouse"])
    try:
        asker, snoop = KBSession(kb), KBSession(kb)
        for _ in range(2):  # the second call is held: the slot holds the question
            kb.query("select route_query('How many secret singers do we have?')", None, asker)
        assert "How many secret singers do we have?" in held._QUESTIONS.values()
        for key in held._QUESTIONS:
            for sql in (f"select {held.QUESTION_UDF}('{key}')", f"SELECT upper(DBROUTER_HELD_QUESTION('{key}')) AS q"):
                with pytest.raises(QueryRefused, match="(?i)dbrouter_held_question"):
                    kb.query(sql, None, snoop)
    finally:
        kb.close()


@pytest.mark.parametrize("sql", [
    "select dbrouter_term_postings('main.kb_vocabulary', 'term', null, null, ['singer'], null)",
    "select unnest(DBROUTER_TERM_POSTINGS('main.kb_table_terms', 'term', 'table_name', 'weight', ['age'], null))",
    "select dbrouter_document_hits('main.kb_document_embeddings', embed('singer'), 1, null, 3, 3)",
    "select dbrouter_best_text_sums('main.kb_table_terms', 'term', 'table_name', 'weight', ['singer'])",
])
def test_a_serve_client_cannot_read_the_kb_indexes_directly(built_kb, sql):
    """The indexes the routing macros read through UDFs hold every database's rows: a client calling
    them would learn of databases its access scope hides (and hold the GIL over a table). dbrouter
    serve refuses them by name (its internal UDFs, read from the UDFs' one list)."""
    from dbrouter.errors import QueryRefused
    from dbrouter.serve.knowledge import KnowledgeBase
    from dbrouter.serve.session import INTERNAL_UDFS, KBSession

    assert {"dbrouter_term_postings", "dbrouter_document_hits", "dbrouter_phrase_mappings",
            "dbrouter_best_text_sums"} <= INTERNAL_UDFS
    kb = KnowledgeBase(built_kb["warehouse"])
    try:
        with pytest.raises(QueryRefused, match="(?i)dbrouter_(term_postings|document_hits|best_text_sums)"):
            kb.query(sql, None, KBSession(kb))
    finally:
        kb.close()
