"""`dbrouter eval sql` on the tiny benchmark tests/fixtures/sqlbench against the fake LLM server."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dbrouter.errors import DbrouterError
from dbrouter.eval.benchmark import load_benchmark
from dbrouter.eval.dumps import load_dumps
from dbrouter.eval.sql import evaluate
from dbrouter.llm import LLMClient
from tests.conftest import ROOT, run_cli
from tests.fake_llm import FakeLLM

pytestmark = pytest.mark.slow

BENCH = ROOT / "tests" / "fixtures" / "sqlbench"
TESTS = [json.loads(line) for line in (BENCH / "test.jsonl").read_text().splitlines() if line.strip()]
GOLD = {t["question"]: t["sql"] for t in TESTS}
WRONG = "SELECT 12345 AS wrong"
SCORED = 5  # no_dump_small has no dump: its question is skipped


def _question(messages: list[dict]) -> str:
    """The question of a generation or comparison conversation (its ``QUESTION:`` line)."""
    return re.findall(r"^QUESTION: (.*)$", messages[1]["content"], re.MULTILINE)[-1]


def _fence(sql: str) -> str:
    return f"```sql\n{sql}\n```"


def _is_comparison(messages: list[dict]) -> bool:
    return "Reply with one letter" in messages[0]["content"]


def _gold(messages):
    return _fence(GOLD[_question(messages)])


@pytest.fixture(scope="module")
def gold_run(tmp_path_factory):
    """One real `dbrouter eval sql` run with a fake that answers the gold SQL (builds the KB once)."""
    base = tmp_path_factory.mktemp("evalsql")
    with FakeLLM(_gold, conversation=True) as fake:
        env = {"DBROUTER_LLM_BASE_URL": fake.base_url, "DBROUTER_LLM_MODEL": "fake-sql",
               "DBROUTER_LLM_CACHE": str(base / "cache")}
        proc = run_cli("eval", "sql", "--benchmark", str(BENCH), "--workdir", str(base / "work"), "--json",
                       "--candidates", "2", "--write", str(base / "BENCHMARKS.md"), env=env)
        requests = len(fake.requests)
    return {"base": base, "proc": proc, "workdir": base / "work" / "sqlbench-sql", "requests": requests}


def _evaluate(gold_run, tmp_path, responder, n: int, repair_turns: int = 2):
    import dbrouter

    bench = load_benchmark(BENCH)
    dumps = load_dumps(BENCH, gold_run["workdir"] / "dumps", db_ids={t["db_id"] for t in TESTS}, log=lambda m: None)
    con = dbrouter.connect(gold_run["workdir"] / "kb.duckdb", embedder="hash")
    with FakeLLM(responder, conversation=True) as fake:
        llm = LLMClient(base_url=fake.base_url, model="fake-sql", timeout=10, cache_dir=tmp_path / "cache")
        try:
            result = evaluate(con, bench.name, bench.test, dumps, llm, n=n, repair_turns=repair_turns,
                              log=lambda m: None)
        finally:
            con.close()
        return result, fake.requests


def test_gold_answers_score_ex_1_and_are_recorded(gold_run):
    proc = gold_run["proc"]
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    assert data["ex"] == 1.0 and data["n"] == SCORED and data["correct"] == SCORED
    assert data["n_skipped"] == 1 and data["skipped"] == {"no sql/<db_id>.sql dump": 1}
    assert data["candidates"] == 2 and data["decided_by"] == {"single": SCORED} and data["repair_turns"] == 0
    assert data["avg_tokens"] == 4.0 and data["llm_calls"] == 2 * SCORED == gold_run["requests"]
    assert data["p50_ms"] > 0 and data["model"] == "fake-sql"
    assert "EX so far" in proc.stderr and "building KB" in proc.stderr
    block = (gold_run["base"] / "BENCHMARKS.md").read_text()
    assert "<!-- dbrouter:eval sql sqlbench -->" in block and "| 5 | **1.0000** |" in block


def test_wrong_sql_scores_0(gold_run, tmp_path):
    result, _ = _evaluate(gold_run, tmp_path, lambda messages: _fence(WRONG), n=1)
    assert result.ex == 0.0 and result.n == SCORED and result.correct == 0 and result.no_sql == 0


def test_order_matters_only_when_the_gold_sql_orders(gold_run, tmp_path):
    def responder(messages):
        q = _question(messages)
        if "ordered by name descending" in q:
            return _fence("SELECT name FROM owner ORDER BY name ASC")  # right rows, wrong order
        if "never returned" in q:
            return _fence(GOLD[q] + " ORDER BY T1.title DESC")  # gold has no ORDER BY: order is free
        return _fence(GOLD[q])

    result, _ = _evaluate(gold_run, tmp_path, responder, n=1)
    assert result.correct == SCORED - 1 and result.ex == 0.8


def test_broken_sql_is_repaired_from_the_error(gold_run, tmp_path):
    def responder(messages):
        if len(messages) == 2:
            return _fence("SELECT count(*) FROM no_such_table")
        assert "no such table: no_such_table" in messages[-1]["content"]
        return _gold(messages)

    result, requests = _evaluate(gold_run, tmp_path, responder, n=1)
    assert result.ex == 1.0 and result.repair_turns == SCORED and result.repaired == SCORED
    assert len(requests) == 2 * SCORED and result.avg_tokens == 4.0


def test_split_vote_is_decided_by_the_results(gold_run, tmp_path):
    seen: dict[str, int] = {}

    def responder(messages):
        q = _question(messages)
        seen[q] = seen.get(q, 0) + 1
        return _fence(WRONG if seen[q] == 1 else GOLD[q])  # sample 0 wrong, samples 1 and 2 right

    result, _ = _evaluate(gold_run, tmp_path, responder, n=3)
    assert result.ex == 1.0 and result.decided_by == {"majority": SCORED}
    assert all(count == 3 for count in seen.values())


def test_two_two_tie_is_decided_by_pairwise_comparison(gold_run, tmp_path):
    seen: dict[str, int] = {}
    compared = []

    def responder(messages):
        q = _question(messages)
        if _is_comparison(messages):
            compared.append(q)
            a = messages[1]["content"].split("CANDIDATE A:")[1].split("CANDIDATE B:")[0]
            return "A" if GOLD[q] in a else "B"
        seen[q] = seen.get(q, 0) + 1
        return _fence(WRONG if seen[q] % 2 == 1 else GOLD[q])  # samples 0, 2 wrong; 1, 3 right

    result, requests = _evaluate(gold_run, tmp_path, responder, n=4)
    # without the comparison the lowest index (sample 0, wrong) would win
    assert result.ex == 1.0 and result.decided_by == {"pairwise": SCORED}
    assert sorted(compared) == sorted(q for q in GOLD if "gadget" not in q)
    assert result.llm_calls == SCORED * 5 == len(requests)


def test_unreachable_llm_stops_the_run(gold_run, tmp_path):
    import dbrouter

    bench = load_benchmark(BENCH)
    dumps = load_dumps(BENCH, gold_run["workdir"] / "dumps", log=lambda m: None)
    con = dbrouter.connect(gold_run["workdir"] / "kb.duckdb", embedder="hash")
    llm = LLMClient(base_url="http://127.0.0.1:9/v1", model="m", timeout=2, cache_dir=tmp_path / "c")
    try:
        with pytest.raises(DbrouterError, match="LLM at http://127.0.0.1:9/v1 failed"):
            evaluate(con, bench.name, bench.test, dumps, llm, n=2, log=lambda m: None)
    finally:
        con.close()


def test_without_llm_exits_2_before_building_anything(tmp_path):
    work = tmp_path / "work"
    proc = run_cli("eval", "sql", "--benchmark", str(BENCH), "--workdir", str(work),
                   env={"DBROUTER_LLM_BASE_URL": ""}, check=False)
    assert proc.returncode == 2 and "eval sql needs an LLM" in proc.stderr
    assert "DBROUTER_LLM_BASE_URL" in proc.stderr and "Traceback" not in proc.stderr
    assert not work.exists() and proc.stdout == ""


def test_fixture_gold_sql_runs_on_the_dumps(gold_run):
    """The fixture itself: every gold SQL of a dumped database returns rows (EX would be vacuous otherwise)."""
    import sqlite3

    for t in TESTS:
        path = gold_run["workdir"] / "dumps" / f"{t['db_id']}.sqlite"
        if t["db_id"] == "no_dump_small":
            assert not path.exists()
            continue
        con = sqlite3.connect(path)
        assert con.execute(t["sql"]).fetchall(), t["sql"]
        con.close()


def test_benchmark_files_parse():
    bench = load_benchmark(Path(BENCH))
    assert len(bench.test) == 6 and len(bench.train) == 5 and len(bench.db_ids) == 3


def test_no_database_with_rows_is_an_error_before_the_build(tmp_path):
    bench = tmp_path / "emptybench"
    (bench / "sql").mkdir(parents=True)
    for name in ("databases.jsonl", "train.jsonl", "test.jsonl"):
        (bench / name).write_text((BENCH / name).read_text())
    (bench / "sql" / "pets_small.sql").write_text('CREATE TABLE "owner" ("owner_id" int, "name" text);\n')
    with FakeLLM(_gold, conversation=True) as fake:
        proc = run_cli("eval", "sql", "--benchmark", str(bench), "--workdir", str(tmp_path / "work"),
                       env={"DBROUTER_LLM_BASE_URL": fake.base_url}, check=False)
    assert proc.returncode == 2 and "no test question" in proc.stderr and "1 without rows" in proc.stderr
    assert not (tmp_path / "work" / "emptybench-sql" / "kb.duckdb").exists() and not fake.requests
