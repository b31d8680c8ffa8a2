"""The query log journal (dbrouter/feedback/log.py): appending, reading past bad lines, loading into
the warehouse table without duplicates, and the entries of SQL clients' routing calls."""

from __future__ import annotations

import json

import duckdb
import pyarrow as pa
import pytest

from dbrouter.errors import NoDatabase
from dbrouter.feedback.log import LOG_TABLE, LogEntry, append, from_sql_call, read, record
from dbrouter.kb.tables import ensure_tables
from dbrouter.kb.tables import load_query_log as load_into


def _con():
    con = duckdb.connect()
    ensure_tables(con)
    return con


def test_read_skips_torn_and_foreign_lines(tmp_path):
    log = tmp_path / "q.jsonl"
    append(log, LogEntry("cli", "route", "q1", ranking=["a", "b"], chosen="a"))
    with open(log, "a") as fh:
        fh.write('{"not": "an entry"}\n{"source": "cli", "tool": "route", "unknown_field": 1, "bad": \n')
        fh.write('{"source": "cli", "tool": "route", "abstained": true, "newer_field": 1}\n')
    entries = list(read(log))
    assert [(e.question, e.abstained) for e in entries] == [("q1", False), (None, True)]


def test_load_into_adds_each_line_once_and_keeps_rows_after_rotation(tmp_path):
    log = tmp_path / "q.jsonl"
    con = _con()
    assert load_into(con, log) == 0  # no journal yet
    append(log, LogEntry("cli", "route", "it's q1", user="ann", ranking=["a", "b"], chosen="a", seconds=0.5,
                         ts=1_700_000_000.25))
    append(log, LogEntry("mcp", "run_sql", None, sql="select 1", status="error", error="boom"))
    assert load_into(con, log) == 2
    assert load_into(con, log) == 0
    row = con.execute(f"select question, asked_by, ranking, chosen, seconds, cast(logged_at as varchar) from {LOG_TABLE} "
                      "where tool = 'route'").fetchone()
    assert row[:5] == ("it's q1", "ann", '["a", "b"]', "a", 0.5)
    assert row[5] == "2023-11-14 22:13:20.25"  # UTC, whatever the session's time zone
    log.rename(tmp_path / "q.1.jsonl")  # rotated: the rows stay, the new journal's lines are added
    append(log, LogEntry("cli", "ask", "q3"))
    assert load_into(con, log) == 1
    assert con.execute(f"select count(*) from {LOG_TABLE}").fetchone()[0] == 3


def test_load_into_resumes_after_the_last_complete_line_in_chunks(tmp_path, monkeypatch):
    import dbrouter.kb.tables as log_module

    monkeypatch.setattr(log_module, "LOAD_CHUNK", 2)
    log, con = tmp_path / "q.jsonl", _con()
    for i in range(5):
        append(log, LogEntry("cli", "route", f"q{i}"))

    def loaded_bytes():
        return con.execute("select loaded_bytes from dbrouter_user.query_log_journals").fetchall()[0][0]

    assert load_into(con, log) == 5 and loaded_bytes() == log.stat().st_size
    with open(log, "ab") as fh:  # a line still being written: not read, not skipped
        fh.write(b'{"source": "cli", "tool": "route", "question": "q5"')
    size = log.stat().st_size
    assert load_into(con, log) == 0 and loaded_bytes() == size - len(b'{"source": "cli", "tool": "route", "question": "q5"')
    with open(log, "ab") as fh:
        fh.write(b"}\n")
    assert load_into(con, log) == 1 and loaded_bytes() == log.stat().st_size
    log.write_text("")  # replaced by a shorter file: read from its start
    append(log, LogEntry("cli", "route", "q6"))
    assert load_into(con, log) == 1
    assert [r[0] for r in con.execute(f"select question from {LOG_TABLE} order by logged_at, question").fetchall()] == [
        "q0", "q1", "q2", "q3", "q4", "q5", "q6"]


def test_record_logs_each_call_by_its_result_or_its_error(tmp_path):
    from dbrouter.routing.evidence import RouteEvidence
    from dbrouter.routing.route import RouteCandidate, RouteResult
    from tests.unit.evidence_samples import RERANKED

    path = tmp_path / "q.jsonl"
    ev = RouteEvidence.from_json(RERANKED)
    ranked = RouteResult("q1", [RouteCandidate(1, "singer", 0.9, ev), RouteCandidate(2, "orchestra", 0.5, ev)])
    assert record(path, LogEntry("cli", "route", "q1", user="ann"), lambda: ranked, RouteResult.log_entry) is ranked
    refused = RouteResult("q2", [RouteCandidate(1, "singer", 0.1, ev)], "no database matches confidently", True)
    record(path, LogEntry("mcp", "route", "q2"), lambda: refused, RouteResult.log_entry)

    def no_database():
        raise NoDatabase("no database to answer from: ...")

    with pytest.raises(NoDatabase):
        record(path, LogEntry("cli", "ask", "q3", chosen="given"), no_database)
    with pytest.raises(ZeroDivisionError):
        record(path, LogEntry("mcp", "run_sql", None, sql="select 1/0"), lambda: 1 / 0)
    assert record(None, LogEntry("cli", "route", "q5"), lambda: 5) == 5  # logging off: the call still runs

    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        record(path, LogEntry("cli", "route", "q6"), interrupted)
    ok, abstained, failed, crashed, stopped = list(read(path))
    assert (stopped.status, stopped.error) == ("error", "KeyboardInterrupt")
    assert (ok.source, ok.user, ok.ranking, ok.chosen, ok.status, ok.error) == (
        "cli", "ann", ["singer", "orchestra"], "singer", "ok", None)
    assert (abstained.chosen, abstained.abstained, abstained.status) == (None, True, "abstained")
    assert abstained.error == "no database matches confidently" and abstained.ranking == ["singer"]
    assert (failed.status, failed.abstained, failed.chosen) == ("error", True, "given")
    assert (crashed.status, crashed.abstained, crashed.sql) == ("error", False, "select 1/0")
    assert "division" in crashed.error and all(e.seconds >= 0 for e in (ok, failed, crashed))


def test_sql_calls_are_logged_with_their_question_and_ranking():
    ranked = pa.table({"rank": [1, 2], "db_id": ["singer", "concert_singer"], "score": [0.9, 0.5]})
    e = from_sql_call("select * from route_query_ranked('Who''s singing?', 2)", None, ranked, None, 0.2, "ann")
    assert (e.source, e.tool, e.question, e.user) == ("serve", "route_query_ranked", "Who's singing?", "ann")
    assert e.ranking == ["singer", "concert_singer"] and e.chosen == "singer" and e.status == "ok"

    one = from_sql_call("SELECT route_query($1)", ["How many singers?"], pa.table({"r": [None]}), None, 0.1, None)
    assert one.question == "How many singers?" and one.abstained and one.status == "abstained" and one.chosen is None

    js = json.dumps({"ranking": [{"db_id": "x"}, {"db_id": "y"}], "abstained": False})
    e = from_sql_call("select route_query_json('q', 3)", None, pa.table({"j": [js]}), None, 0.1, None)
    assert e.ranking == ["x", "y"] and e.chosen == "x"

    e = from_sql_call("select route_query_json_sql('q')", None, pa.table({"j": [js]}), None, 0.1, None)
    assert e.tool == "route_query_json" and e.ranking == ["x", "y"]  # a path's own entry point
    e = from_sql_call("select route_query_json_mapped_udf('q', '[]')", None, pa.table({"j": [js]}), None, 0.1, None)
    assert e.tool == "route_query_json_mapped" and e.ranking == ["x", "y"] and e.question == "q"
    e = from_sql_call("select route_query_sql('q')", None, pa.table({"r": ["x"]}), None, 0.1, None)
    assert (e.tool, e.chosen) == ("route_query", "x")

    failed = from_sql_call("select route_query('q')", None, None, "the query was cancelled", 30.0, None)
    assert failed.status == "error" and failed.error == "the query was cancelled"


@pytest.mark.parametrize("sql", ["select * from kb_databases", "select version()", "select 'route_query(x)'"])
def test_statements_that_route_nothing_are_not_logged(sql):
    assert from_sql_call(sql, None, pa.table({"a": [1]}), None, 0.1, None) is None


def test_a_full_or_unwritable_log_warns_once_and_never_fails_the_call(tmp_path, monkeypatch, capsys, cli_handler):
    import dbrouter.feedback.log as log_module

    log = tmp_path / "q.jsonl"
    monkeypatch.setattr(log_module, "MAX_LOG_BYTES", 10)
    assert append(log, LogEntry("cli", "route", "first"))  # under the cap when written
    assert not append(log, LogEntry("cli", "route", "second")) and not append(log, LogEntry("cli", "route", "third"))
    assert capsys.readouterr().err.count("no longer appended to") == 1
    assert [e.question for e in read(log)] == ["first"]
    blocked = tmp_path / "dir_not_file"
    blocked.mkdir()
    assert not append(blocked, LogEntry("cli", "route", "q"))
    assert "cannot append to the query log" in capsys.readouterr().err


def test_report_counts_serve_routing_calls_and_reads_the_warehouse_table(tmp_path):
    from dbrouter.feedback.log import read_table
    from dbrouter.feedback.report import summarize

    log = tmp_path / "q.jsonl"
    for value in ("singer", None):
        append(log, from_sql_call("select route_query($1)", [f"q {value}"], pa.table({"r": [value]}), None, 0.1, "ann"))
    append(log, from_sql_call("select * from retrieve_examples('q', null, 3)", None, pa.table({"db_id": ["a"]}),
                              None, 0.1, "ann"))
    s = summarize(list(read(log)))
    assert s.abstention_rate == 0.5 and s.unanswered == [("q None", 1)]  # the retrieval is not routing
    con = _con()
    load_into(con, log)
    con.execute(f"create view kb_query_log as select entry_id, logged_at, source, tool, question, asked_by, "
                f"ranking as ranking_json, chosen as chosen_db_id, abstained, sql_text, status, error as error_message, "
                f"seconds from {LOG_TABLE}")
    assert [(e.tool, e.question, e.abstained, e.ranking) for e in read_table(con)] == [
        (e.tool, e.question, e.abstained, e.ranking) for e in read(log)]


def test_the_text_report_shows_a_clients_control_characters_escaped(tmp_path):
    """Hardening review: the text report printed newlines and ANSI escapes from questions raw."""
    from dbrouter.feedback.report import summarize, text_report

    log = tmp_path / "q.jsonl"
    hostile = "q\n  999999  fake line\x1b[2J\x1b[31m"
    append(log, from_sql_call("select route_query($1)", [hostile], pa.table({"r": [None]}), None, 0.1, "ann"))
    text = text_report(summarize(list(read(log))))
    assert "\x1b" not in text and "fake line" in text
    assert not any(line.lstrip().startswith("999999") for line in text.splitlines())
    assert "\\x1b[2J" in text


def test_one_client_cannot_fill_everyones_journal(tmp_path, capsys, cli_handler):
    """Hardening review: one serve client filled the journal's 256 MiB cap in 4 minutes and silenced
    everyone's log. Each client has a budget per hour; over it only its own entries are dropped."""
    from dbrouter.feedback.log import ClientBudget

    log = tmp_path / "q.jsonl"
    budget = ClientBudget(limit=20_000)
    entry = lambda q: from_sql_call("select route_query($1)", [q], pa.table({"r": ["a"]}), None, 0.1, "u")  # noqa: E731
    written = sum(append(log, entry("x" * 3000), budget, "10.0.0.9") for _ in range(100))
    assert 3 <= written < 10
    assert append(log, entry("an honest question"), budget, "127.0.0.1")
    assert "drops 10.0.0.9's entries" in capsys.readouterr().err
    assert [e.question for e in read(log)][-1] == "an honest question"


def test_unanswered_questions_become_candidate_examples_with_their_closest_database(tmp_path):
    from dbrouter.feedback.report import summarize, text_report

    log = tmp_path / "q.jsonl"
    append(log, LogEntry("cli", "route", "Who sings the most? it's late", ranking=["singer", "musical"],
                         abstained=True, status="abstained"))
    append(log, LogEntry("cli", "route", "How many singers?", ranking=["singer"], chosen="singer"))
    append(log, LogEntry("cli", "ask", "Nothing ranked", ranking=[], abstained=True, status="abstained"))
    s = summarize(list(read(log)))
    assert s.candidates == [("Who sings the most? it's late", "singer")]  # answered and unranked ones are not
    text = text_report(s)
    assert "dbrouter examples add --db singer --question 'Who sings the most? it'\"'\"'s late' --sql" in text
