"""The agentic linker with the real environment on the demo KB and a scripted LLM over HTTP."""

from __future__ import annotations

import hashlib
import re
import time

import pytest

from dbrouter.execute import runners as execution
from dbrouter.linking.agent import link_schema_agent
from dbrouter.linking.columns import retrieve_columns
from dbrouter.llm import LLMClient
from dbrouter.query.results import format_observation
from dbrouter.sources.base import NoDataSource
from tests.fake_llm import Broken, FakeLLM

QUESTION = "What is the average capacity of the stadiums that hosted a concert in 2014?"


def turn(*actions: str) -> str:
    return "<think>scripted</think>\n<actions>\n" + "\n".join(actions) + "\n</actions>"


SCRIPT = [
    turn("@explore_schema(SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%stad%')",
         "@retrieve_schema(`stadium capacity; highest and lowest attendance`)"),
    turn("@add_schema(stadium.capacity; Concert.Year; concert.Stadium_ID; singer.Nationality)",
         "@verify_schema(SELECT avg(s.Capacity) FROM stadium AS s JOIN concert AS c ON c.Stadium_ID = s.Stadium_ID "
         "WHERE c.Year = '2014';)"),
    turn("@explore_schema(DELETE FROM singer WHERE Name = 'x')", "@explore_schema(SELECT no_such FROM stadium)"),
    turn("@add_schema(stadium.Stadium_ID)", "@stop()"),
]


def scripted(script):
    def responder(system, user):
        return script[len(fake.requests) - 1]  # the request is recorded before the responder runs

    fake = FakeLLM(responder)
    return fake


def rendered_names(schema: str) -> list[str]:
    """``table.column`` of every column in a rendered schema (``# Table: t`` then ``(column: ...)``)."""
    names, table = [], None
    for line in schema.splitlines():
        if line.startswith("# Table: "):
            table = line[len("# Table: "):].strip()
        elif (col := re.match(r"\((\w+):", line)) and table:
            names.append(f"{table}.{col.group(1)}")
    return names


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_agent_links_on_the_demo_kb_and_leaves_the_database_untouched(kb_con, tmp_path):
    target = execution.target_for(kb_con, "concert_singer")
    before = sha256(target.path)
    initial = [s.column.name for s in retrieve_columns(kb_con, QUESTION, "concert_singer", k=6)]
    with scripted(SCRIPT) as fake:
        llm = LLMClient(base_url=fake.base_url, model="fake", timeout=10, cache_dir=tmp_path / "cache")
        linked = link_schema_agent(kb_con, llm, target, QUESTION, "concert_singer", n_initial=6, m=3)
        observations = [r["messages"][-1]["content"] for r in fake.requests[1:]]
    assert sha256(target.path) == before

    added = [n for n in ("stadium.Capacity", "concert.Year", "concert.Stadium_ID", "stadium.Stadium_ID")
             if n not in initial]
    assert linked.names == initial + added
    assert linked.method == "agent" and linked.notes[0] == "stopped by @stop at turn 4 of 10"
    assert (linked.llm_calls, linked.prompt_tokens, linked.completion_tokens) == (4, 4, 4)

    # H0 names every table and shows the initial schema
    first = fake.requests[0]["messages"][1]["content"]
    assert all(t in first for t in ("singer", "stadium", "concert", "singer_in_concert"))
    assert sorted(rendered_names(first)) == sorted(initial)
    # turn 1: real exploration result, and retrieval of columns not in the initial schema
    assert "[Total rows: 1," in observations[0] and "stadium" in observations[0]
    retrieved = rendered_names(observations[0].split("@retrieve_schema")[1].split("\n", 1)[1])
    assert len(retrieved) == 3 and not set(retrieved) & set(initial)
    # turn 2: case-insensitive names, an unknown one reported; the verification ran
    assert "singer.Nationality" in observations[1] and "unknown column(s), not added" in observations[1]
    assert "[Total rows: 1," in observations[1]
    # turn 3: the DELETE is refused before running; a database error comes back verbatim
    assert "refused to run this SQL" in observations[2]
    assert "no such column: no_such" in observations[2]


def test_database_without_data_cannot_be_explored(kb_con, tmp_path):
    with pytest.raises(NoDataSource):
        execution.target_for(kb_con, "college_3")
    script = [turn("@explore_schema(SELECT * FROM course)", "@retrieve_schema(department name)"),
              turn("@stop()")]
    with scripted(script) as fake:
        llm = LLMClient(base_url=fake.base_url, model="fake", timeout=10, cache_dir=tmp_path / "cache")
        linked = link_schema_agent(kb_con, llm, None, "Which courses does the history department offer?",
                                   "college_3", n_initial=5)
        observation = fake.requests[1]["messages"][-1]["content"]
    assert "exploration is unavailable: database college_3 has no data source" in observation
    assert "NOT AVAILABLE" in fake.requests[0]["messages"][0]["content"]
    assert len(linked.names) == 5 and linked.notes[0] == "stopped by @stop at turn 2 of 10"


def test_llm_failure_mid_dialogue_falls_back_to_the_llm_free_linker(kb_con, tmp_path):
    from dbrouter.linking.linker import link_schema

    def responder(system, user):
        if len(fake.requests) == 1:
            return turn("@add_schema(stadium.Highest)", "@retrieve_schema(stadium location)")
        raise Broken(500)

    base = link_schema(kb_con, QUESTION, "concert_singer")
    assert base.method == "retrieval" and base.names
    fake = FakeLLM(responder)
    target = execution.target_for(kb_con, "concert_singer")
    with fake:
        llm = LLMClient(base_url=fake.base_url, model="fake", timeout=10, cache_dir=tmp_path / "cache")
        linked = link_schema_agent(kb_con, llm, target, QUESTION, "concert_singer", n_initial=3)
    assert linked.names == base.names + [n for n in ["stadium.Highest"] if n not in base.names]
    assert linked.notes[0].startswith("fallback: the LLM failed at turn 2")
    assert "columns added by the agent: 1 (stadium.Highest)" in linked.notes
    assert linked.method == "agent" and linked.llm_calls == 1 + base.llm_calls


@pytest.mark.parametrize("db, table, column", [("concert_singer", "stadium", "Location"),
                                               ("headphone_store", "store", "Neighborhood")])
def test_the_prompt_example_queries_run_on_each_dialect(kb_con, db, table, column):
    from dbrouter.linking.prompts import EXPLORE_EXAMPLES

    target = execution.target_for(kb_con, db)
    for sql in EXPLORE_EXAMPLES[target.dialect]:
        real = sql.replace("orders", table).replace("status", column)
        observation = format_observation(execution.execute(target, real, timeout=10))
        assert "ERROR" not in observation, (real, observation)


def test_exploration_honours_sql_timeout(kb_con):
    from dbrouter.linking.agent import kb_environment

    env = kb_environment(kb_con, execution.target_for(kb_con, "concert_singer"), "concert_singer", sql_timeout=0.5)
    started = time.monotonic()
    observation = env.run_sql("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c")
    assert "ERROR" in observation and "timed out" in observation
    assert time.monotonic() - started < 10
