"""The agentic schema linker: action parsing and the loop on a fake environment (no KB needed)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest

from dbrouter.linking.agent import (
    MAX_ACTIONS_PER_TURN,
    Action,
    AgentConfigError,
    AgentEnvironment,
    parse_turn,
    run_agent,
    split_column_names,
)
from dbrouter.linking.columns import SchemaColumn
from dbrouter.linking.linker import LinkedSchema
from dbrouter.llm import Completion, LLMClient, LLMUnavailable
from dbrouter.query.guard import UnsafeSQL
from tests.fake_llm import Broken, FakeLLM

SCHEMA = {
    "singer": ["Singer_ID", "Name", "Country", "Age", "Is_male"],
    "concert": ["concert_ID", "concert_Name", "Year", "Stadium_ID"],
    "stadium": ["Stadium_ID", "Location", "Name", "Capacity"],
    "singer_in_concert": ["concert_ID", "Singer_ID"],
}


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower().replace("_", " ")))


@dataclass
class FakeEnv:
    """A deterministic environment: word-overlap retrieval, case-insensitive lookup, scripted SQL."""

    columns: list[SchemaColumn] = field(default_factory=lambda: [
        SchemaColumn(t, c, "text") for t, cols in SCHEMA.items() for c in cols])
    retrieve_calls: list[tuple[str, int, list[str]]] = field(default_factory=list)
    sql_calls: list[str] = field(default_factory=list)
    has_data: bool = True

    def retrieve(self, text, k, exclude):
        self.retrieve_calls.append((text, k, list(exclude)))
        skip = {e.lower() for e in exclude}
        pool = [c for c in self.columns if c.name.lower() not in skip]
        ranked = sorted(pool, key=lambda c: -len(_words(text) & _words(c.name)))  # stable: schema order on ties
        return ranked[:k]

    def lookup(self, names):
        by_name = {c.name.lower(): c for c in self.columns}
        found = [by_name[n.lower()] for n in names if n.lower() in by_name]
        return found, [n for n in names if n.lower() not in by_name]

    def run_sql(self, sql):
        self.sql_calls.append(sql)
        if not sql.lower().startswith(("select", "with")):
            raise UnsafeSQL(f"{sql.split()[0].upper()} is not a SELECT")
        return f"[Total rows: 1, Execution time: 0.00s]\nresult of: {sql}"

    def environment(self) -> AgentEnvironment:
        return AgentEnvironment(
            tables=lambda: list(SCHEMA), retrieve=self.retrieve, lookup=self.lookup,
            render=lambda cols: "\n".join(f"({c.name}: {c.data_type})" for c in cols),
            run_sql=self.run_sql if self.has_data else None,
            link_without_llm=lambda q: LinkedSchema("concert_singer", [self.columns[1], self.columns[3]], "retrieval",
                                                    ["retrieval linker note"]),
            dialect="sqlite")


class ScriptedLLM:
    """A fake chat model answering from a list; records every conversation it was sent."""

    def __init__(self, answers, fail_at=None):
        self.answers, self.fail_at, self.sent = list(answers), fail_at, []

    def chat(self, messages, temperature=0.0, sample=0, use_cache=True):
        self.sent.append([dict(m) for m in messages])
        if self.fail_at is not None and len(self.sent) == self.fail_at:
            raise LLMUnavailable("scripted outage")
        return Completion(self.answers[len(self.sent) - 1], prompt_tokens=10 * len(self.sent),
                          completion_tokens=3, cached=False)


def turn(*actions: str, think: str = "reasoning") -> str:
    return f"<think>{think}</think>\n<actions>\n" + "\n".join(actions) + "\n</actions>"


# ----------------------------------------------------------------------------------------------- parsing

def test_each_action_is_parsed_with_its_argument():
    parsed = parse_turn(turn("@explore_schema(SELECT name FROM pragma_table_info('singer'))",
                             "@retrieve_schema(age of the singer)", "@verify_schema(SELECT count(*) FROM singer)",
                             "@add_schema(singer.Age; singer.Name)", "@stop()"))
    assert parsed.problems == []
    assert parsed.actions == [Action("explore_schema", "SELECT name FROM pragma_table_info('singer')"),
                              Action("retrieve_schema", "age of the singer"),
                              Action("verify_schema", "SELECT count(*) FROM singer"),
                              Action("add_schema", "singer.Age; singer.Name"), Action("stop", "")]


def test_semicolon_separated_actions_on_one_line_and_stop_variants():
    parsed = parse_turn("<actions> @retrieve_schema(stadium capacity); @add_schema(stadium.Capacity); "
                        "@stop_action() </actions>")
    assert [a.name for a in parsed.actions] == ["retrieve_schema", "add_schema", "stop"]
    assert parse_turn("<actions>@stop</actions>").actions == [Action("stop", "")]
    assert parse_turn("<actions>@STOP_ACTION</actions>").actions == [Action("stop", "")]


def test_quotes_backticks_fences_and_keyword_arguments_are_unwrapped():
    sql = "SELECT Name FROM singer WHERE Country = 'France'"
    for wrapped in (f"`{sql}`", f'"{sql}"', f"```sql\n{sql}\n```", f"sql_query={sql}", f"  {sql};  "):
        parsed = parse_turn(turn(f"@explore_schema({wrapped})"))
        assert parsed.actions == [Action("explore_schema", sql)], wrapped
    parsed = parse_turn(turn("@retrieve_schema(`exam score, quiz score or final grade`)"))
    assert parsed.actions == [Action("retrieve_schema", "exam score, quiz score or final grade")]


def test_sql_with_parentheses_and_semicolons_in_strings_spanning_lines():
    sql = ("SELECT Name,\n  count(*) AS n\nFROM singer\nWHERE Name = 'a); @stop()' OR Country IN ('x;y', \"(z\")\n"
           "GROUP BY Name")
    parsed = parse_turn(turn(f"@verify_schema(\n{sql}\n)", "@add_schema(singer.Name)"))
    assert parsed.actions == [Action("verify_schema", sql), Action("add_schema", "singer.Name")]
    assert parsed.problems == []


def test_apostrophe_in_a_sql_line_comment_is_not_a_quote():
    sql = "-- the singer's country\nSELECT Country FROM singer WHERE Name = 'O''Neil (jr)'"
    parsed = parse_turn(turn(f"@explore_schema({sql})", "@stop()"))
    assert parsed.actions == [Action("explore_schema", sql), Action("stop")]
    # a comment that swallows the closing bracket: read by bracket depth instead
    assert parse_turn(turn("@explore_schema(SELECT 1 -- one)")).actions == [
        Action("explore_schema", "SELECT 1 -- one")]


def test_apostrophe_in_a_retrieval_query_does_not_swallow_the_next_action():
    parsed = parse_turn(turn("@retrieve_schema(singer's home country)", "@add_schema(singer.Country)"))
    assert parsed.actions == [Action("retrieve_schema", "singer's home country"),
                              Action("add_schema", "singer.Country")]


def test_actions_without_tags_and_unclosed_actions_block_are_read():
    assert parse_turn("I will stop now.\n@stop()").actions == [Action("stop")]
    parsed = parse_turn("<think>x</think><actions>@retrieve_schema(concert year)")  # answer cut off
    assert parsed.actions == [Action("retrieve_schema", "concert year")]
    # actions mentioned while thinking are not actions
    assert parse_turn("<think>maybe @stop() later</think><actions>@retrieve_schema(age)</actions>").actions == [
        Action("retrieve_schema", "age")]


def test_malformed_answers_report_problems():
    assert parse_turn("The answer is singer.Name").actions == []
    unknown = parse_turn(turn("@drop_table(singer)"))
    assert unknown.actions == [] and "unknown action @drop_table" in unknown.problems[0]
    empty = parse_turn(turn("@retrieve_schema()", "@explore_schema"))
    assert empty.actions == [] and len(empty.problems) == 2 and "needs an argument" in empty.problems[0]
    unclosed = parse_turn(turn("@explore_schema(SELECT count(* FROM singer"))
    assert unclosed.actions == [] and "no closing ')'" in unclosed.problems[0]


def test_split_column_names():
    names = split_column_names("`singer.Name`; \"singer\".\"Age\", concert_singer.stadium.Capacity\n"
                               "SINGER.NAME; [concert].[Year]; main.stadium.Name;", "concert_singer")
    assert names == ["singer.Name", "singer.Age", "stadium.Capacity", "concert.Year", "stadium.Name"]


# -------------------------------------------------------------------------------------------------- loop

def run(env, llm, **kw):
    kw.setdefault("n_initial", 4)
    return run_agent(env.environment(), llm, "How many singers from France?", "concert_singer", **kw)


def test_add_then_stop_links_initial_plus_added_columns():
    env = FakeEnv()
    llm = ScriptedLLM([turn("@retrieve_schema(stadium capacity)", "@add_schema(concert.Year; singer.Age)"),
                       turn("@add_schema(stadium.Capacity)", "@stop()")])
    linked = run(env, llm)
    initial = [c.name for c in env.retrieve(env.retrieve_calls[0][0], 4, [])]
    assert "singer.Age" in initial and "concert.Year" not in initial
    assert linked.names == [*initial, "concert.Year", "stadium.Capacity"]
    assert linked.method == "agent" and linked.db_id == "concert_singer"
    assert linked.notes[0] == "stopped by @stop at turn 2 of 10"
    assert "columns added by the agent: 2 (concert.Year, stadium.Capacity)" in linked.notes
    # H0: system + user with the question, every table and the initial schema; then the whole history
    first = llm.sent[0]
    assert [m["role"] for m in first] == ["system", "user"]
    assert "How many singers from France?" in first[1]["content"]
    assert all(t in first[1]["content"] for t in SCHEMA) and f"({initial[0]}: text)" in first[1]["content"]
    assert [m["role"] for m in llm.sent[1]] == ["system", "user", "assistant", "user"]
    assert llm.sent[1][2]["content"] == llm.answers[0]
    observation = llm.sent[1][3]["content"]
    assert "(stadium.Capacity: text)" in observation and "added 1 column(s): concert.Year" in observation
    assert "already linked: singer.Age" in observation


def test_retrieve_excludes_every_column_seen_so_far():
    env = FakeEnv()
    llm = ScriptedLLM([turn("@retrieve_schema(stadium name location capacity)"),
                       turn("@retrieve_schema(stadium name location capacity)"),
                       turn("@stop()")])
    run(env, llm, n_initial=2, m=2)
    (_, _, ex0), (_, k1, ex1), (_, k2, ex2) = env.retrieve_calls
    assert ex0 == [] and k1 == k2 == 2
    initial = ex1
    assert len(initial) == 2
    second_batch = [n for n in ex2 if n not in initial]
    assert len(second_batch) == 2 and ex2[:2] == initial
    # the third observation shows two more columns, none of them shown before
    shown = re.findall(r"\((\w+\.\w+): text\)", llm.sent[2][-1]["content"])
    assert len(shown) == 2 and not set(shown) & set(ex2)


def test_retrieve_when_every_column_was_seen_says_so():
    env = FakeEnv()
    llm = ScriptedLLM([turn("@retrieve_schema(anything)"), turn("@stop()")])
    run(env, llm, n_initial=len(env.columns))
    assert "[No more columns: every column of concert_singer has already been shown]" in llm.sent[1][-1]["content"]


def test_unknown_column_is_reported_and_not_added():
    env = FakeEnv()
    llm = ScriptedLLM([turn("@add_schema(singer.Nationality; stadium.capacity)", "@retrieve_schema(age)"),
                       turn("@stop()")])
    linked = run(env, llm)
    observation = llm.sent[1][-1]["content"]
    assert "unknown column(s), not added (no such table.column in concert_singer): singer.Nationality" in observation
    assert "added 1 column(s): stadium.Capacity" in observation
    assert "stadium.Capacity" in linked.names and "singer.Nationality" not in linked.names
    assert "turn 1: unknown column(s) not added: singer.Nationality" in linked.notes


def test_unsafe_explore_sql_is_refused_in_the_observation_and_loop_continues():
    env = FakeEnv()
    llm = ScriptedLLM([turn("@explore_schema(DROP TABLE singer)", "@verify_schema(SELECT count(*) FROM singer)"),
                       turn("@stop()")])
    linked = run(env, llm)
    observation = llm.sent[1][-1]["content"]
    assert "[ERROR: refused to run this SQL: DROP is not a SELECT." in observation
    assert "result of: SELECT count(*) FROM singer" in observation
    assert env.sql_calls == ["DROP TABLE singer", "SELECT count(*) FROM singer"]
    assert linked.notes[0].startswith("stopped by @stop")


def test_no_data_source_makes_exploration_unavailable():
    env = FakeEnv(has_data=False)
    llm = ScriptedLLM([turn("@explore_schema(SELECT 1)"), turn("@stop()")])
    run(env, llm)
    assert "exploration is unavailable" in llm.sent[1][-1]["content"]
    assert "NOT AVAILABLE" in llm.sent[0][0]["content"]


def test_max_turns_reached():
    env = FakeEnv()
    llm = ScriptedLLM([turn(f"@explore_schema(SELECT {i})") for i in range(3)])
    linked = run(env, llm, max_turns=3)
    assert len(llm.sent) == 3 and linked.llm_calls == 3
    assert linked.notes[0] == "stopped: max turns (3) reached without @stop"
    assert "(0 turn(s) left)" not in llm.sent[-1][-1]["content"] and "(1 turn(s) left)" in llm.sent[-1][-1]["content"]


def test_add_only_turn_is_rejected_and_malformed_turn_gets_format_help():
    env = FakeEnv()
    llm = ScriptedLLM([turn("@add_schema(stadium.Capacity)"), "I think singer.Name is enough.",
                       turn("@add_schema(concert.Year)", "@stop()")])
    linked = run(env, llm)
    rejected, malformed = llm.sent[1][-1]["content"], llm.sent[2][-1]["content"]
    assert "@add_schema cannot be the only action of a turn; the columns were NOT added" in rejected
    assert "no action could be read" in malformed and "<actions>" in malformed
    assert "stadium.Capacity" not in linked.names and "concert.Year" in linked.names
    assert "turns used: 3 (0 answer(s) from the LLM cache, 2 malformed)" in linked.notes


def test_stop_turn_does_not_run_feedback_actions_and_extra_actions_are_not_run():
    env = FakeEnv()
    many = [f"@explore_schema(SELECT {i})" for i in range(MAX_ACTIONS_PER_TURN + 2)]
    llm = ScriptedLLM([turn(*many), turn("@explore_schema(SELECT 99)", "@stop()")])
    linked = run(env, llm)
    assert env.sql_calls == [f"SELECT {i}" for i in range(MAX_ACTIONS_PER_TURN)]
    assert llm.sent[1][-1]["content"].count("[NOT RUN: at most") == 2
    assert "turn 2: @explore_schema not run (the turn stopped)" in linked.notes


def test_llm_failure_falls_back_to_llm_free_linker_plus_added_columns():
    env = FakeEnv()
    llm = ScriptedLLM([turn("@add_schema(stadium.Capacity)", "@retrieve_schema(x)")], fail_at=2)
    linked = run(env, llm)
    assert linked.names == ["singer.Name", "singer.Age", "stadium.Capacity"]
    assert linked.notes[0].startswith("fallback: the LLM failed at turn 2 (scripted outage)")
    assert "LLM-free linker: retrieval linker note" in linked.notes
    assert linked.llm_calls == 1 and linked.prompt_tokens == 10 and linked.completion_tokens == 3


def test_no_llm_configured_gives_the_llm_free_result_with_a_note():
    env = FakeEnv()
    linked = run(env, None)
    assert linked.names == ["singer.Name", "singer.Age"] and linked.llm_calls == 0
    assert linked.notes[0].startswith("fallback: no LLM is configured") and env.retrieve_calls == []


@pytest.mark.parametrize("kw", [{"m": 0}, {"max_turns": 0}, {"n_initial": -1}, {"m": 2.5}])
def test_out_of_range_limits_are_errors(kw):
    with pytest.raises(AgentConfigError, match="must be an integer >="):
        run(FakeEnv(), ScriptedLLM([]), **kw)


def test_token_and_call_accounting():
    env = FakeEnv()
    llm = ScriptedLLM([turn("@retrieve_schema(a)"), turn("@retrieve_schema(b)"), turn("@stop()")])
    linked = run(env, llm)
    assert (linked.llm_calls, linked.prompt_tokens, linked.completion_tokens) == (3, 10 + 20 + 30, 9)


# ------------------------------------------------------------------------ through the real client (HTTP)

def scripted_server(answers):
    calls = []

    def responder(system, user):
        calls.append(user)
        return answers[len(calls) - 1]

    return FakeLLM(responder)


def test_real_client_dialogue_accounting_and_cache(tmp_path):
    answers = [turn("@retrieve_schema(stadium capacity)", "@add_schema(stadium.Capacity)"), turn("@stop()")]
    with scripted_server(answers) as fake:
        llm = LLMClient(base_url=fake.base_url, model="fake", timeout=5, cache_dir=tmp_path / "cache")
        linked = run(FakeEnv(), llm)
        assert len(fake.requests) == 2 and [m["role"] for m in fake.requests[1]["messages"]] == [
            "system", "user", "assistant", "user"]
        assert (linked.llm_calls, linked.prompt_tokens, linked.completion_tokens) == (2, 2, 2)
        assert "stadium.Capacity" in linked.names
        # a second run replays the dialogue from the cache: same result, no request, cached in the notes
        again = run(FakeEnv(), LLMClient(base_url=fake.base_url, model="fake", timeout=5,
                                         cache_dir=tmp_path / "cache"))
        assert len(fake.requests) == 2 and again.names == linked.names
        assert "turns used: 2 (2 answer(s) from the LLM cache, 0 malformed)" in again.notes


def test_http_500_falls_back(tmp_path):
    def responder(system, user):
        raise Broken(500)

    with FakeLLM(responder) as fake:
        llm = LLMClient(base_url=fake.base_url, model="fake", timeout=5, cache_dir=tmp_path / "cache")
        linked = run(FakeEnv(), llm)
    assert linked.names == ["singer.Name", "singer.Age"] and linked.llm_calls == 0
    assert linked.notes[0].startswith("fallback: the LLM failed at turn 1 (LLM at")
    assert "columns added by the agent: 0 (none)" in linked.notes


@pytest.mark.parametrize("answer", ["", "<think>only thinking</think>", "<actions></actions>"])
def test_empty_answers_are_malformed_not_crashes(answer):
    env = FakeEnv()
    llm = ScriptedLLM([answer, turn("@stop()")])
    linked = run(env, llm)
    assert "no action could be read" in llm.sent[1][-1]["content"] and linked.llm_calls == 2
