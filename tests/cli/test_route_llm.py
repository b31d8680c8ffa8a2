"""`dbrouter route` with the LLM phrase mapper against a local fake OpenAI-compatible server."""

from __future__ import annotations

import json
import time

import pytest

from tests.conftest import run_cli
from tests.fake_llm import FakeLLM, Slow

pytestmark = pytest.mark.slow

QUESTION = "How many singers performed in each concert?"


def _db_of(user: str) -> str:
    info = user.split("TABLE INFORMATION:")[-1]  # the database's DDL (kb_databases.database_ddl)
    if "create table singer_in_concert (" in info:
        return "concert_singer"
    if "create table song (" in info and "create table singer (" in info:
        return "singer"
    return "other"


def test_llm_mappings_rerank_retry_once_and_cache(built_kb, tmp_path):
    seen: dict[str, int] = {}

    def responder(system, user):
        assert "Schema Mapping" in system and f"QUERY: {QUESTION}" in user
        db = _db_of(user)
        seen[db] = seen.get(db, 0) + 1
        if db == "concert_singer":
            return "singers - singer.Name\nconcert - concert.concert_Name"
        if db == "singer":  # malformed first, well-formed on the retry
            return "Sure! Here are the mappings you asked for." if seen[db] == 1 else "singers - singer.Name\nconcert - N/A"
        return "singers - N/A\nconcert - N/A"

    env = {"DBROUTER_LLM_CACHE": str(tmp_path / "cache"), "DBROUTER_LLM_MODEL": "fake-1"}
    with FakeLLM(responder) as fake:
        env["DBROUTER_LLM_BASE_URL"] = fake.base_url
        proc = run_cli("route", "--warehouse", str(built_kb["warehouse"]), "--json", "--k", "3", QUESTION, env=env)
        ranking = json.loads(proc.stdout)["ranking"]
        assert [c["db_id"] for c in ranking[:2]] == ["concert_singer", "singer"]
        top, second = ranking[0]["evidence"], ranking[1]["evidence"]
        assert top["mapped_by"] == "llm" and top["coverage"] == 1 and top["connectivity"] == 1
        assert second["mapped_by"] == "llm" and second["na_phrases"] == 1
        assert "fell back" not in proc.stderr
        calls = len(fake.requests)
        assert seen["singer"] == 2 and calls == sum(seen.values())
        again = run_cli("route", "--warehouse", str(built_kb["warehouse"]), "--json", "--k", "3", QUESTION, env=env)
        assert len(fake.requests) == calls, "second run must be served from the prompt-hash cache"
        assert json.loads(again.stdout)["ranking"] == ranking
        explained = run_cli("route", "--warehouse", str(built_kb["warehouse"]), "--explain", "--k", "1", QUESTION,
                            env=env)
        assert "phrases [llm]: 2, 0 not mapped to any column" in explained.stdout
        assert "singers -> singer.Name" in explained.stdout and "given mapping" in explained.stdout


def test_malformed_twice_slow_and_unreachable_llm_fall_back_and_say_so(built_kb, tmp_path):
    def responder(system, user):
        if _db_of(user) == "concert_singer":
            return "the singers are in singer.Name I believe"  # not the line format, twice
        raise Slow(5, "singers - N/A")  # slower than the client timeout

    env = {"DBROUTER_LLM_CACHE": str(tmp_path / "cache"), "DBROUTER_LLM_TIMEOUT": "1"}
    with FakeLLM(responder) as fake:
        env["DBROUTER_LLM_BASE_URL"] = fake.base_url
        proc = run_cli("route", "--warehouse", str(built_kb["warehouse"]), "--json", "--k", "10", QUESTION, env=env)
    ranking = json.loads(proc.stdout)["ranking"]
    assert "fell back to the embedding mapper" in proc.stderr and "concert_singer" in proc.stderr
    assert all(c["evidence"].get("mapped_by") == "embedding (LLM fallback)" for c in ranking
               if c["evidence"]["stage"] == "reranked")
    no_llm = run_cli("route", "--warehouse", str(built_kb["warehouse"]), "--json", "--k", "10", QUESTION,
                     env={"DBROUTER_LLM_BASE_URL": ""})
    assert "no LLM configured" in no_llm.stderr
    assert [c["db_id"] for c in json.loads(no_llm.stdout)["ranking"]] == [c["db_id"] for c in ranking]
    # every database fell back: exactly the --no-llm ranking, scores and evidence (issue 9, item 6)
    strip = lambda c: {**c, "evidence": {k: v for k, v in c["evidence"].items() if k != "mapped_by"}}  # noqa: E731
    assert [strip(c) for c in ranking] == json.loads(no_llm.stdout)["ranking"]
    down = run_cli("route", "--warehouse", str(built_kb["warehouse"]), "--k", "2", QUESTION,
                   env={"DBROUTER_LLM_BASE_URL": "http://127.0.0.1:9/v1", "DBROUTER_LLM_TIMEOUT": "1",
                        "DBROUTER_LLM_CACHE": str(tmp_path / "c2")})
    assert "fell back" in down.stderr and "  1. " in down.stdout


def test_llm_flag_without_configuration_is_a_clear_error(built_kb):
    proc = run_cli("route", "--warehouse", str(built_kb["warehouse"]), "--llm", QUESTION,
                   env={"DBROUTER_LLM_BASE_URL": ""}, check=False)
    assert proc.returncode != 0 and "DBROUTER_LLM_BASE_URL" in proc.stderr


def test_a_hanging_llm_is_bounded_by_the_time_budget(built_kb, tmp_path):
    """Was: one sequential call per shortlisted database, each waiting for its timeout (317 s)."""
    def responder(system, user):
        raise Slow(20, "singers - N/A")  # hangs far longer than the budget

    env = {"DBROUTER_LLM_CACHE": str(tmp_path / "cache"), "DBROUTER_LLM_TIMEOUT": "30", "DBROUTER_LLM_BUDGET": "2"}
    with FakeLLM(responder) as fake:
        env["DBROUTER_LLM_BASE_URL"] = fake.base_url
        started = time.monotonic()
        proc = run_cli("route", "--warehouse", str(built_kb["warehouse"]), "--json", "--k", "5", QUESTION, env=env)
        elapsed = time.monotonic() - started
        asked = len(fake.requests)
    assert elapsed < 15, f"routing took {elapsed:.1f}s with a 2 s LLM budget"
    assert asked <= 4  # the first concurrent batch; the rest were refused by the spent budget
    assert "time budget of 2 s" in proc.stderr
    no_llm = run_cli("route", "--warehouse", str(built_kb["warehouse"]), "--json", "--k", "5", QUESTION,
                     env={"DBROUTER_LLM_BASE_URL": ""})
    strip = lambda c: {**c, "evidence": {k: v for k, v in c["evidence"].items() if k != "mapped_by"}}  # noqa: E731
    assert [strip(c) for c in json.loads(proc.stdout)["ranking"]] == json.loads(no_llm.stdout)["ranking"]


def test_route_ask_link_and_mcp_choose_the_same_database_with_an_llm(built_kb, tmp_path, monkeypatch):
    """One routing call (``dbrouter.routing.route.route``) behind every client: with an LLM
    configured, `route`, `ask`, `link` and the MCP tools all rank with its phrase mapping. Before,
    `ask`, `link` and MCP ignored the LLM and could answer from another database than `route` named."""
    from dbrouter.llm import LLMClient
    from dbrouter.serve.mcp import Tools

    question = "How many singers do we have?"

    def responder(system, user):
        if "Schema Mapping" in system:  # only concert_singer's schema covers the question, says the LLM
            return "singers - singer.Name" if _db_of(user) == "concert_singer" else "singers - N/A"
        return "```sql\nSELECT count(*) FROM singer\n```"

    warehouse = str(built_kb["warehouse"])
    plain = json.loads(run_cli("route", "--warehouse", warehouse, "--json", "--k", "3", question,
                               env={"DBROUTER_LLM_BASE_URL": ""}).stdout)["ranking"][0]["db_id"]
    env = {"DBROUTER_LLM_CACHE": str(tmp_path / "cache"), "DBROUTER_LLM_MODEL": "fake-1"}
    with FakeLLM(responder) as fake:
        env["DBROUTER_LLM_BASE_URL"] = fake.base_url
        routed = json.loads(run_cli("route", "--warehouse", warehouse, "--json", "--k", "3", question,
                                    env=env).stdout)["ranking"][0]["db_id"]
        asked = json.loads(run_cli("ask", "--warehouse", warehouse, "--json", question, env=env,
                                   check=False).stdout)
        linked = json.loads(run_cli("link", "--warehouse", warehouse, "--json", question, env=env).stdout)["db_id"]
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        tools = Tools(built_kb["warehouse"], LLMClient.from_env(), log=False)
        try:
            by_mcp = (tools.route(question)["best"], tools.link(question)["db_id"], tools.ask(question)["db_id"])
        finally:
            tools.close()
    assert plain != "concert_singer"  # without the LLM another database wins: the mapping decided
    assert routed == asked["db_id"] == linked == "concert_singer" and by_mcp == ("concert_singer",) * 3
    assert asked["llm_calls"] > 1  # the mapping's answers are counted with the SQL's
