"""Statements end to end: structuring in dbt, CLI add/list, SbR in SQL, the LLM path on a fake server."""

from __future__ import annotations

import duckdb
import pytest

from tests.conftest import copy_built_kb, run_cli
from tests.fake_llm import FakeLLM

pytestmark = pytest.mark.slow


def test_demo_statements_are_structured_by_rules_and_validated(kb_con):
    rows = kb_con.execute(
        "select db_id, structured_by, structure_status, expression, snippet, referenced_columns "
        "from kb_domain_statements order by db_id").fetchall()
    by_db = {r[0]: r for r in rows}
    assert by_db["concert_singer"][1:] == ("rules", "structured", "male singers", "singer.Is_male = 'T'",
                                           ["singer.Is_male"])
    assert all(r[2] == "structured" for r in rows)


def test_retrieve_statements_sbr_in_sql(kb_con):
    rows = kb_con.execute(
        "select statement_text, matched_text, score from retrieve_statements("
        "'How many male singers are older than 30?', 'concert_singer', 3)").fetchall()
    assert rows[0][0].startswith("'male singers'") and rows[0][1] == "male singers" and rows[0][2] == 1.0
    assert kb_con.execute("select count(*) from retrieve_statements(NULL, 'concert_singer')").fetchall() == [(0,)]
    every_db = kb_con.execute("select db_id from retrieve_statements('big stores please', NULL, 1)").fetchall()
    assert every_db == [("store_product",)]


def test_add_statement_then_build_keeps_original_and_flags_unknown_columns(built_kb, tmp_path):
    kb = copy_built_kb(built_kb, tmp_path)
    sources, wh = kb["sources"], kb["warehouse"]
    run_cli("statements", "add", "--warehouse", str(wh), "--db", "orchestra",
            "veteran conductors refers to conductor.Age > 60")
    run_cli("statements", "add", "--warehouse", str(wh), "--db", "orchestra",
            "famous refers to orchestra.Fame_Level = 'high'")
    bad = run_cli("statements", "add", "--warehouse", str(wh), "--db", "orchestra", "   ", check=False)
    assert bad.returncode == 2 and "empty" in bad.stderr
    typo = run_cli("statements", "add", "--warehouse", str(wh), "--db", "orchestr", "x refers to y", check=False)
    assert typo.returncode == 2 and "'orchestr' is not in the knowledge base; did you mean orchestra" in typo.stderr
    second = run_cli("build", "--sources", str(sources), "--warehouse", str(wh))
    assert "dbrouter: embedded 2 new or changed documents" in second.stdout
    listing = run_cli("statements", "list", "--warehouse", str(wh), "--db", "orchestra").stdout
    assert "[orchestra] veteran conductors refers to conductor.Age > 60" in listing
    assert "-> 'veteran conductors' refers to conductor.Age > 100" not in listing  # snippet kept verbatim
    assert "unknown column 'orchestra.Fame_Level'" in listing
    # re-ingesting does not lose CLI statements
    run_cli("ingest", "--sources", str(sources), "--warehouse", str(wh))
    con = duckdb.connect(str(wh), read_only=True)
    assert con.execute("select count(*) from dbrouter_user.statements").fetchall() == [(2,)]
    con.close()


def test_structure_without_llm_says_so(built_kb):
    proc = run_cli("statements", "structure", "--warehouse", str(built_kb["warehouse"]),
                   env={"DBROUTER_LLM_BASE_URL": ""})
    assert "no LLM configured" in proc.stderr


def test_llm_structuring_with_fake_server_retries_validates_and_caches(built_kb, tmp_path):
    kb = copy_built_kb(built_kb, tmp_path)
    sources, wh = kb["sources"], kb["warehouse"]
    run_cli("statements", "add", "--warehouse", str(wh), "--db", "concert_singer",
            "Stadiums holding more than 10000 people are large")
    run_cli("build", "--sources", str(sources), "--warehouse", str(wh))
    answers = {"Stadiums holding": "'large stadiums' refers to stadium.Capacity > 100",
               "rich singers": "'rich singers' refers to singer.Wealth > 100",   # unknown column: rejected
               "record company": "I think this is about companies."}            # malformed twice
    calls = []

    def responder(system, user):
        calls.append(user)
        task = user.split("### Task")[-1]
        for needle, answer in answers.items():
            if needle in task:
                return answer
        return "'something' refers to nothing at all"  # malformed-ish: no known column -> rejected

    env = {"DBROUTER_LLM_CACHE": str(tmp_path / "cache"), "DBROUTER_LLM_MODEL": "fake-1"}
    with FakeLLM(responder) as fake:
        env["DBROUTER_LLM_BASE_URL"] = fake.base_url
        first = run_cli("statements", "structure", "--warehouse", str(wh), env=env)
        assert "malformed twice" in first.stderr and "1 malformed twice" in first.stderr
        n_first = len(fake.requests)
        assert "concert_singer" in fake.requests[0]["messages"][0]["content"]  # schema in the system prompt
        again = run_cli("statements", "structure", "--warehouse", str(wh), "--redo", env=env)
        # the second run is served from the cache except the malformed answer's retry
        assert len(fake.requests) - n_first <= 1, again.stderr
    con = duckdb.connect(str(wh), read_only=True)
    rows = dict((r[0], r[1:]) for r in con.execute(
        "select statement_text, structured_by, expression, snippet from kb_domain_statements").fetchall())
    con.close()
    assert rows["Stadiums holding more than 10000 people are large"] == (
        "llm:fake-1", "large stadiums", "stadium.Capacity > 100")
    assert rows["'rich singers' refers to singer.Net_Worth_Millions"][0] == "rules"  # LLM answer rejected


def test_unreachable_llm_falls_back_to_rules(built_kb, tmp_path):
    proc = run_cli("statements", "structure", "--warehouse", str(built_kb["warehouse"]),
                   env={"DBROUTER_LLM_BASE_URL": "http://127.0.0.1:9/v1", "DBROUTER_LLM_TIMEOUT": "2",
                        "DBROUTER_LLM_CACHE": str(tmp_path / "c")})
    assert proc.returncode == 0 and "5 LLM errors" in proc.stderr and "rule-based structure" in proc.stderr
