"""`dbrouter ask` through the entry point on the demo KB, with and without the fake LLM server."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from datetime import date, datetime
from decimal import Decimal

import pytest

from dbrouter.answer.ask import Answer, check_question, format_table, json_value
from dbrouter.errors import DbrouterError
from tests.conftest import run_cli
from tests.fake_llm import FakeLLM

QUESTION = "What are the names and ages of singers from France?"
SQL = "SELECT Name, Age FROM singer WHERE Country = 'France'"
EXAMPLE_Q = "List all song names by singers above the average age."
EXAMPLE_SQL = "SELECT song_name FROM singer WHERE age > (SELECT avg(age) FROM singer)"
JSON_KEYS = {"db_id", "sql", "columns", "rows", "linked_columns", "statements", "examples", "llm_calls",
             "prompt_tokens", "completion_tokens", "status", "source", "notes", "routed"}


def _rows(built_kb, sql: str, db: str = "concert_singer") -> list[list]:
    con = sqlite3.connect(built_kb["base"] / "databases" / f"{db}.sqlite")
    try:
        return [list(r) for r in con.execute(sql).fetchall()]
    finally:
        con.close()


def _sha(built_kb, db: str = "concert_singer") -> str:
    return hashlib.sha256((built_kb["base"] / "databases" / f"{db}.sqlite").read_bytes()).hexdigest()


def _ask(built_kb, *args, env=None):
    return run_cli("ask", "--warehouse", str(built_kb["warehouse"]), *args, env=env, check=False)


def _env(fake, tmp_path) -> dict:
    return {"DBROUTER_LLM_BASE_URL": fake.base_url, "DBROUTER_LLM_MODEL": "fake-sql",
            "DBROUTER_LLM_CACHE": str(tmp_path / "cache")}


NO_LLM = {"DBROUTER_LLM_BASE_URL": ""}


@pytest.mark.slow
def test_ask_with_llm_answers_with_rows_and_provenance(built_kb, tmp_path):
    prompts = []

    def responder(messages):
        prompts.append(messages[1]["content"])
        assert messages[1]["content"].endswith(f"QUESTION: {QUESTION}")
        return f"```sql\n{SQL}\n```"

    with FakeLLM(responder, conversation=True) as fake:
        proc = _ask(built_kb, "--db", "concert_singer", "--candidates", "3", "--json", QUESTION,
                    env=_env(fake, tmp_path))
        text = _ask(built_kb, "--db", "concert_singer", "--candidates", "3", QUESTION, env=_env(fake, tmp_path))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data) >= JSON_KEYS
    expected = _rows(built_kb, SQL)
    assert expected and sorted(data["rows"]) == sorted(expected) and data["columns"] == ["Name", "Age"]
    assert data["db_id"] == "concert_singer" and data["routed"] is False and data["sql"] == SQL
    assert data["status"] == "ok" and data["source"] == "llm" and data["decided_by"] == "single"
    assert data["llm_calls"] == 3 and data["prompt_tokens"] == 3 and data["completion_tokens"] == 3
    assert any(c.lower().startswith("singer.") for c in data["linked_columns"])
    assert all(isinstance(s["statement"], str) for s in data["statements"])
    assert "SQL DIALECT: SQLite" in prompts[0] and "singer" in prompts[0].split("DATABASE SCHEMA:")[1]
    # the text form: the SQL, the table and the provenance; the second run came from the cache
    assert text.returncode == 0 and SQL in text.stdout and "database: concert_singer (given with --db)" in text.stdout
    assert str(expected[0][0]) in text.stdout and "LLM: 3 calls answered" in text.stdout and len(prompts) == 3


@pytest.mark.slow
def test_ask_routes_when_no_db_is_given(built_kb, tmp_path):
    with FakeLLM(lambda messages: f"```sql\n{SQL}\n```", conversation=True) as fake:
        proc = _ask(built_kb, "--json", "--candidates", "1", QUESTION, env=_env(fake, tmp_path))
    data = json.loads(proc.stdout)
    assert data["routed"] is True and data["routing"] and data["db_id"] == data["routing"][0]


@pytest.mark.slow
def test_ask_with_the_agent_linker_counts_its_calls(built_kb, tmp_path):
    def responder(messages):
        if "SQL writer" in messages[0]["content"]:
            return f"```sql\n{SQL}\n```"
        return "<think>age and country are needed</think><actions>@add_schema(singer.Age; singer.Country) @stop()</actions>"

    with FakeLLM(responder, conversation=True) as fake:
        proc = _ask(built_kb, "--db", "concert_singer", "--linker", "agent", "--json", "--candidates", "2", QUESTION,
                    env=_env(fake, tmp_path))
        requests = len(fake.requests)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert {"singer.Age", "singer.Country"} <= set(data["linked_columns"])
    assert data["llm_calls"] == requests == 3 and data["prompt_tokens"] == 3
    assert sorted(data["rows"]) == sorted(_rows(built_kb, SQL))


@pytest.mark.slow
def test_ask_without_llm_needs_one_unless_an_example_matches(built_kb):
    proc = _ask(built_kb, "--db", "concert_singer", "--json", QUESTION, env=NO_LLM)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    for name in ("DBROUTER_LLM_BASE_URL", "DBROUTER_LLM_MODEL", "DBROUTER_LLM_API_KEY"):
        assert name in proc.stderr
    data = json.loads(proc.stdout)
    assert data["status"] == "needs_llm" and data["sql"] is None and data["linked_columns"]
    exact = _ask(built_kb, "--db", "concert_singer", "--linker", "agent", "--json", EXAMPLE_Q, env=NO_LLM)
    assert exact.returncode == 0, exact.stderr
    data = json.loads(exact.stdout)
    assert data["source"] == "example" and data["sql"] == EXAMPLE_SQL and data["llm_calls"] == 0
    assert sorted(data["rows"]) == sorted(_rows(built_kb, EXAMPLE_SQL)) and data["examples"][0]["stage"] == "exact"
    assert any("agent linker needs an LLM" in n for n in data["notes"])


def test_ask_max_columns_bounds_the_linked_schema(built_kb):
    proc = _ask(built_kb, "--db", "concert_singer", "--json", "--max-columns", "3", QUESTION, env=NO_LLM)
    data = json.loads(proc.stdout)
    assert data["status"] == "needs_llm" and 0 < len(data["linked_columns"]) <= 3
    bad = _ask(built_kb, "--db", "concert_singer", "--max-columns", "-2", QUESTION, env=NO_LLM)
    assert bad.returncode == 2 and "at least 1" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.slow
def test_hostile_llm_is_refused_and_the_database_is_untouched(built_kb, tmp_path):
    before = _sha(built_kb)
    hostile = ["DELETE FROM singer", "DROP TABLE singer", "ATTACH DATABASE '/tmp/x.db' AS x",
               "SELECT 1; DELETE FROM singer", "UPDATE singer SET Age = 0", "PRAGMA writable_schema = 1",
               "INSERT INTO singer (Name) VALUES ('x')", "WITH d AS (DELETE FROM singer RETURNING *) SELECT * FROM d",
               "CREATE TABLE t AS SELECT * FROM singer", "VACUUM INTO '/tmp/copy.db'", None]
    replies = iter(hostile * 3)

    def responder(messages):
        if len(messages) > 2:
            assert re.search(r"refused|failed|no ```sql fenced", messages[-1]["content"])
        reply = next(replies)
        return "Sure! I would delete the singers first." if reply is None else f"```sql\n{reply}\n```"

    with FakeLLM(responder, conversation=True) as fake:
        proc = _ask(built_kb, "--db", "concert_singer", "--json", "--candidates", "4", "--repair-turns", "2",
                    QUESTION, env=_env(fake, tmp_path))
        seen = len(fake.requests)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and "every one of the 4 candidates failed" in proc.stderr
    data = json.loads(proc.stdout)
    assert data["status"] == "no_sql" and data["sql"] is None and data["rows"] == [] and seen == 12
    assert _sha(built_kb) == before
    assert _rows(built_kb, "SELECT count(*) FROM singer")[0][0] > 0


@pytest.mark.slow
def test_schema_only_database_generates_without_running(built_kb, tmp_path):
    with FakeLLM(lambda messages: "```sql\nSELECT count(*) FROM course\n```", conversation=True) as fake:
        proc = _ask(built_kb, "--db", "college_3", "--json", "--candidates", "2", "How many courses are there?",
                    env=_env(fake, tmp_path))
    assert proc.returncode == 3, proc.stderr  # written, not run: not the exit code of an answer
    data = json.loads(proc.stdout)
    assert data["sql"] == "SELECT count(*) FROM course" and data["decided_by"] == "text" and data["rows"] == []
    assert data["status"] == "not_run" and data["dialect"] == "sqlite"
    assert any("not run" in n for n in data["notes"])


@pytest.mark.slow
@pytest.mark.parametrize("args, message", [
    (["   \t "], "the question is empty"),
    ([], "no question given"),
    (["x" * 2500], "questions are read up to 2,000"),
    (["--db", "concert_singr", QUESTION], "did you mean concert_singer"),
    (["--candidates", "0", QUESTION], "--candidates must be 1 to 20"),
    (["--repair-turns", "99", QUESTION], "--repair-turns 0 to 10"),
])
def test_bad_input_is_a_clear_error(built_kb, args, message):
    proc = _ask(built_kb, *args, env=NO_LLM)
    assert proc.returncode == 1 and message in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_unreachable_llm_is_a_clear_error(built_kb, tmp_path):
    env = {"DBROUTER_LLM_BASE_URL": "http://127.0.0.1:9/v1", "DBROUTER_LLM_CACHE": str(tmp_path / "c"),
           "DBROUTER_LLM_TIMEOUT": "2"}
    proc = _ask(built_kb, "--db", "concert_singer", "--json", QUESTION, env=env)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert re.search(r"LLM at http://127.0.0.1:9/v1 failed", proc.stderr)
    data = json.loads(proc.stdout)
    assert data["status"] == "error" and data["llm_calls"] == 0 and data["llm_failed_calls"] == 5
    text = _ask(built_kb, "--db", "concert_singer", QUESTION, env=env)
    assert text.returncode == 1 and "0 calls answered, 5 failed" in text.stdout


@pytest.mark.slow
def test_needs_llm_hint_is_printed_once(built_kb):
    proc = _ask(built_kb, "--db", "concert_singer", QUESTION, env=NO_LLM)
    assert proc.returncode == 2
    assert (proc.stdout + proc.stderr).count("DBROUTER_LLM_BASE_URL") == 1


def test_values_are_json_safe():
    row = (b"caf\xc3\xa9", b"\xff\x00", Decimal("2.50"), Decimal("7"), date(2024, 1, 2),
           datetime(2024, 1, 2, 3, 4, 5), float("nan"), None, True)
    answer = Answer("q", "db", False, columns=list("abcdefghi"), rows=[row], total_rows=1)
    data = json.loads(json.dumps(answer.to_json(), allow_nan=False))
    assert data["rows"] == [["café", "base64:/wA=", 2.5, 7, "2024-01-02", "2024-01-02T03:04:05", "nan", None, True]]
    assert json_value(Decimal("Infinity")) == "Infinity"


def test_check_question_and_table_format():
    assert check_question("  How many?\n") == "How many?"
    for bad in (None, "", " \u00a0\u2003", 42, "a\udcffb"):
        with pytest.raises(DbrouterError):
            check_question(bad)
    table = format_table(["n"], [(i,) for i in range(25)], 1200)
    assert table.splitlines()[2] == "0" and table.endswith("... 1180 more rows") and "\n19\n" in table
    assert format_table(["n"], [], 0) == "(no rows)"
