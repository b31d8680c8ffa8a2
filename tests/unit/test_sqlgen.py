"""LLMClient.chat (sampling, tokens, cache) and SQL generation with repair and voting."""

from __future__ import annotations

from dbrouter.llm import LLMClient
from tests.fake_llm import FakeLLM


def _client(url, tmp_path) -> LLMClient:
    return LLMClient(base_url=url, model="fake-model", timeout=5.0, cache_dir=tmp_path / "cache")


def test_chat_samples_are_distinct_cached_answers_with_tokens(tmp_path):
    counter = {"n": 0}

    def responder(messages):
        counter["n"] += 1
        return f"answer {counter['n']} to {messages[-1]['content']} after {len(messages)} messages"

    convo = [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}]
    with FakeLLM(responder, conversation=True) as fake:
        llm = _client(fake.base_url, tmp_path)
        first = [llm.chat(convo, temperature=1.0, sample=i) for i in range(3)]
        assert [c.text for c in first] == [f"answer {i} to q after 2 messages" for i in (1, 2, 3)]
        assert all(not c.cached and c.prompt_tokens == 1 and c.completion_tokens == 1 for c in first)
        assert llm.stats.calls == 3 and llm.stats.prompt_tokens == 3 and llm.stats.completion_tokens == 3
        assert [r["temperature"] for r in fake.requests] == [1.0, 1.0, 1.0]
        # a rerun (new client) replays the same candidates from the cache, counting no tokens
        again = _client(fake.base_url, tmp_path)
        replay = [again.chat(convo, temperature=1.0, sample=i) for i in range(3)]
        assert [c.text for c in replay] == [c.text for c in first] and all(c.cached for c in replay)
        assert replay[0].prompt_tokens == 1 and again.stats.prompt_tokens == 0 and again.stats.calls == 0
        # a different temperature or a longer conversation is a different answer
        assert not again.chat(convo, temperature=0.5, sample=0).cached
        longer = convo + [{"role": "assistant", "content": "x"}, {"role": "user", "content": "fix"}]
        assert again.chat(longer, temperature=1.0, sample=0).text == "answer 5 to fix after 4 messages"


def test_complete_is_chat_at_temperature_zero_and_shares_its_cache(tmp_path):
    with FakeLLM(lambda system, user: f"{system}|{user}") as fake:
        llm = _client(fake.base_url, tmp_path)
        assert llm.complete("sys", "hi") == "sys|hi"
        done = llm.chat([{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}])
        assert done.cached and done.text == "sys|hi" and len(fake.requests) == 1
        assert fake.requests[0]["temperature"] == 0


# --------------------------------------------------------------------------- SQL generation

import hashlib  # noqa: E402
import sqlite3  # noqa: E402
import time  # noqa: E402

import pytest  # noqa: E402

from dbrouter.answer.generate import generate_sql, parse_sql, transpile  # noqa: E402
from dbrouter.errors import DbrouterError  # noqa: E402
from dbrouter.sources.base import Target  # noqa: E402

SCHEMA = "# Table: pet\n[(pet_id:INTEGER, Primary Key), (species:TEXT), (age:INTEGER)]"
QUESTION = "How many dogs are there?"
GOOD = "SELECT count(*) FROM pet WHERE species = 'dog'"


def _pets(tmp_path) -> Target:
    path = tmp_path / "pets.sqlite"
    con = sqlite3.connect(path)
    con.executescript("create table pet (pet_id integer primary key, species text, age integer);"
                      "insert into pet values (1,'dog',3),(2,'cat',5),(3,'dog',8),(4,'bird',1),(5,'cat',2);")
    con.commit()
    con.close()
    return Target("pets", "sqlite", path)


def _fence(sql: str) -> str:
    return f"Here you go:\n```sql\n{sql}\n```"


def _generate(fake, tmp_path, target, **kw):
    llm = _client(fake.base_url, tmp_path)
    kw = {"n": 1, "repair_turns": 2, **kw}
    return llm, generate_sql(llm, target, QUESTION, SCHEMA, [], [], "sqlite", **kw)



def test_parse_sql_needs_exactly_one_sql_block():
    assert parse_sql(_fence(GOOD)) == (GOOD, None)
    assert parse_sql("```SQL\nselect 1;\n```") == ("select 1;", None)
    assert "no ```sql" in parse_sql("SELECT 1")[1]
    assert "2 ```sql blocks" in parse_sql(_fence("select 1") + _fence("select 2"))[1]
    assert "empty" in parse_sql("```sql\n\n```")[1]
    assert parse_sql(None)[0] is None


def test_broken_sql_is_repaired_with_the_database_error(tmp_path):
    target = _pets(tmp_path)

    def responder(messages):
        if len(messages) == 2:
            return _fence("SELECT count(*) FROM pets WHERE species = 'dog'")  # wrong table name
        assert "no such table: pets" in messages[-1]["content"] and messages[-2]["role"] == "assistant"
        return _fence(GOOD)

    with FakeLLM(responder, conversation=True) as fake:
        llm, gen = _generate(fake, tmp_path, target)
    assert gen.sql == GOOD and gen.result.rows == [(2,)] and gen.decided_by == "single"
    assert gen.candidates[0].turns == 2 and gen.repair_turns == 1
    assert gen.llm_calls == 2 and gen.prompt_tokens == 2 and gen.completion_tokens == 2


def test_malformed_reply_is_a_failed_turn_with_the_format_error_sent_back(tmp_path):
    target = _pets(tmp_path)

    def responder(messages):
        if len(messages) == 2:
            return "SELECT count(*) FROM pet"  # no fenced block
        assert "no ```sql fenced code block" in messages[-1]["content"]
        return _fence(GOOD)

    with FakeLLM(responder, conversation=True) as fake:
        _, gen = _generate(fake, tmp_path, target)
    assert gen.sql == GOOD and gen.candidates[0].turns == 2


def test_writes_are_refused_every_turn_and_the_file_is_untouched(tmp_path):
    target = _pets(tmp_path)
    before = hashlib.sha256(target.path.read_bytes()).hexdigest()
    hostile = iter(["DELETE FROM pet", "DROP TABLE pet", "SELECT 1; DELETE FROM pet"])

    def responder(messages):
        if len(messages) > 2:
            assert "refused to run this SQL" in messages[-1]["content"]
        return _fence(next(hostile))

    with FakeLLM(responder, conversation=True) as fake:
        _, gen = _generate(fake, tmp_path, target)
    assert gen.sql is None and gen.groups == [] and gen.decided_by == "none"
    assert gen.candidates[0].turns == 3 and "refused" in gen.candidates[0].error
    assert "every one of the 1 candidates failed" in gen.notes[0]
    assert hashlib.sha256(target.path.read_bytes()).hexdigest() == before


def test_majority_vote_by_execution_result(tmp_path):
    target = _pets(tmp_path)
    answers = [GOOD, "SELECT count(pet_id) FROM pet WHERE species = 'dog'", "SELECT count(*) FROM pet",
               "SELECT nonsense FROM pet"]
    seen = {"first": 0}

    def responder(messages):
        if len(messages) == 2:
            seen["first"] += 1
            return _fence(answers[seen["first"] - 1])
        return "I cannot fix it"  # the broken fourth candidate stays broken

    with FakeLLM(responder, conversation=True) as fake:
        _, gen = _generate(fake, tmp_path, target, n=4, repair_turns=1)
    assert gen.decided_by == "majority" and gen.groups == [[0, 1], [2]]
    assert gen.sql == GOOD and gen.result.rows == [(2,)]
    assert not gen.candidates[3].ok and gen.candidates[3].turns == 2


def test_two_two_tie_is_decided_by_pairwise_comparison(tmp_path):
    target = _pets(tmp_path)
    wrong = "SELECT count(*) FROM pet WHERE species = 'cat' OR species = 'bird'"
    answers = [wrong, GOOD, wrong + " AND 1 = 1", GOOD + " AND 1 = 1"]
    seen = {"first": 0, "compare": 0}

    def responder(messages):
        if "Reply with one letter" in messages[0]["content"]:
            seen["compare"] += 1
            user = messages[1]["content"]
            a = user.split("CANDIDATE A:")[1].split("CANDIDATE B:")[0]
            return "Answer: A" if "= 'dog'" in a else "B"
        seen["first"] += 1
        return _fence(answers[seen["first"] - 1])

    with FakeLLM(responder, conversation=True) as fake:
        _, gen = _generate(fake, tmp_path, target, n=4)
    assert seen["compare"] == 1 and gen.decided_by == "pairwise"
    assert gen.groups[0] == [1, 3] and gen.sql == GOOD and gen.result.rows == [(2,)]
    assert gen.llm_calls == 5


def test_without_a_target_the_vote_is_by_normalised_sql_text(tmp_path):
    answers = ["select count(*)  from pet", "SELECT COUNT(*) FROM pet", "SELECT age FROM pet", "DELETE FROM pet"]
    seen = {"first": 0}

    def responder(messages):
        if len(messages) == 2:
            seen["first"] += 1
            return _fence(answers[seen["first"] - 1])
        return _fence("UPDATE pet SET age = 0")

    with FakeLLM(responder, conversation=True) as fake:
        _, gen = _generate(fake, tmp_path, None, n=4, repair_turns=1)
    assert gen.decided_by == "text" and gen.groups == [[0, 1], [2]] and gen.result is None
    assert gen.sql == "select count(*)  from pet" and "not run" in gen.notes[0]
    assert "refused" in gen.candidates[3].error


def test_unreachable_llm_gives_a_generation_without_sql(tmp_path):
    llm = LLMClient(base_url="http://127.0.0.1:9/v1", model="m", timeout=2, cache_dir=tmp_path / "c")
    gen = generate_sql(llm, _pets(tmp_path), QUESTION, SCHEMA, [], [], "sqlite", n=3)
    assert gen.sql is None and all("LLM failed" in c.error for c in gen.candidates)
    assert llm.stats.calls == 1 and "every one of the 3 candidates failed" in gen.notes[0]


def test_prompt_carries_schema_statements_examples_and_dialect(tmp_path):
    captured = []

    def responder(messages):
        captured.append(messages)
        return _fence(GOOD)

    statements = [{"statement": "A senior pet is older than 7.", "expression": "senior pet", "snippet": "age > 7"}]
    examples = [{"question": "How many cats?", "sql": "SELECT count(*) FROM pet WHERE species = 'cat'"}]
    with FakeLLM(responder, conversation=True) as fake:
        llm = _client(fake.base_url, tmp_path)
        gen = generate_sql(llm, _pets(tmp_path), QUESTION, SCHEMA, statements, examples, "sqlite", n=1)
    system, user = captured[0][0]["content"], captured[0][1]["content"]
    assert "SQLite" in system and "exactly one ```sql" in system
    assert SCHEMA in user and "A senior pet is older than 7." in user and "'senior pet' means: age > 7" in user
    assert "Example question: How many cats?" in user and examples[0]["sql"] in user
    assert user.endswith(f"QUESTION: {QUESTION}") and gen.sql == GOOD


def test_transpile_between_dialects_and_bad_arguments(tmp_path):
    assert transpile("SELECT 1", "sqlite", "sqlite") == "SELECT 1"
    assert "LIMIT 5" in transpile("SELECT TOP 5 a FROM t", "tsql", "duckdb")
    with pytest.raises(ValueError, match="at least 1 candidate"):
        generate_sql(None, None, QUESTION, SCHEMA, [], [], "sqlite", n=0)
    with pytest.raises(ValueError, match="unsupported SQL dialect"):
        generate_sql(None, None, QUESTION, SCHEMA, [], [], "klingon")


def test_sql_written_for_another_dialect_is_transpiled_before_it_runs(tmp_path):
    def responder(messages):
        assert "Snowflake" in messages[0]["content"]
        return _fence("SELECT count(*) FROM pet WHERE species ILIKE 'DOG'")  # ILIKE: not SQLite

    with FakeLLM(responder, conversation=True) as fake:
        llm = _client(fake.base_url, tmp_path)
        gen = generate_sql(llm, _pets(tmp_path), QUESTION, SCHEMA, [], [], "snowflake", n=1)
    cand = gen.candidates[0]
    assert "ILIKE" in cand.sql and "ILIKE" not in cand.run_sql and gen.sql == cand.run_sql
    assert gen.result.rows == [(2,)] and cand.turns == 1


def test_three_way_tie_with_malformed_and_tied_comparisons(tmp_path):
    target = _pets(tmp_path)
    answers = ["SELECT count(*) FROM pet WHERE species = 'bird'", GOOD, "SELECT count(*) FROM pet"]
    seen = {"first": 0}
    comparisons = []

    def responder(messages):
        if "Reply with one letter" in messages[0]["content"]:
            user = messages[1]["content"]
            comparisons.append(user)
            if len(comparisons) == 1:
                return "Both look plausible to me."  # malformed: asked again without the cache
            return "B" if "= 'dog'" in user.split("CANDIDATE B:")[1] else "A"
        seen["first"] += 1
        return _fence(answers[seen["first"] - 1])

    with FakeLLM(responder, conversation=True) as fake:
        _, gen = _generate(fake, tmp_path, target, n=3)
    # pairs (0,1) asked twice (malformed first), (0,2), (1,2): candidate 1 wins both of its comparisons
    assert len(comparisons) == 4 and gen.decided_by == "pairwise"
    assert gen.sql == GOOD and gen.groups[0] == [1] and gen.llm_calls == 3 + 4


SLOW = ("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) "
        "SELECT count(*) FROM r JOIN pet ON pet.pet_id = r.i % 5")


def test_a_looping_llm_and_slow_sql_stop_at_the_question_budget(tmp_path, monkeypatch):
    """Issue 22 finding 6: 5 candidates x 4 turns x 30 s let one question run ~10 minutes."""
    monkeypatch.setenv("DBROUTER_ASK_SQL_BUDGET", "2.5")
    with FakeLLM(lambda messages: _fence(SLOW), conversation=True) as fake:
        started = time.monotonic()
        _, gen = _generate(fake, tmp_path, _pets(tmp_path), n=5, repair_turns=3, timeout=1.0)
        spent = time.monotonic() - started
    assert spent < 8, spent  # 20 executions of 1 s each without the budget
    assert gen.sql is None and len(gen.candidates) < 5
    assert any("SQL time budget of 2.5 s" in note for note in gen.notes), gen.notes
    monkeypatch.setenv("DBROUTER_ASK_SQL_BUDGET", "soon")
    with pytest.raises(DbrouterError, match="DBROUTER_ASK_SQL_BUDGET must be a positive number"):
        generate_sql(None, None, QUESTION, SCHEMA, [], [], "sqlite", n=1)
