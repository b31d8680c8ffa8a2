"""`dbrouter eval profile` through the entry point, on the shared demo KB (hash embedder)."""

from __future__ import annotations

import json

from tests.conftest import run_cli


def test_eval_profile_shows_the_held_plan_skips_planning_and_where_time_goes(built_kb, tmp_path):
    bench = tmp_path / "BENCHMARKS.md"
    runs = {}
    for path in ("held", "sql"):
        proc = run_cli("eval", "profile", "--warehouse", str(built_kb["warehouse"]), "--embedder", "hash",
                       "--path", path, "--n", "3", "--label", "demo", "--write", str(bench), "--json")
        runs[path] = json.loads(proc.stdout.strip().splitlines()[-1])
    held, sql = runs["held"], runs["sql"]
    assert held["path"] == "held" and held["questions"] == 3 and len(held["wall_ms"]) == 3
    # the question's vector and stage 1's document hits are parts of both plans
    assert {"q", "hits"} <= set(held["parts"]) and {"q", "hits"} <= set(sql["parts"])
    assert all(len(ms) == 3 for ms in held["parts"].values())
    assert held["operators"] > 100 and all(c > 0 for c in held["cpu_ms"])
    # the held statement is not planned again; the pure-SQL one is, per question
    assert max(held["planning_ms"]) < min(sql["planning_ms"])
    text = bench.read_text()
    for path in ("held", "sql"):
        assert f"<!-- dbrouter:eval profile demo {path} -->" in text
    assert "| **operators, all parts** |" in text and "Command: `dbrouter eval profile --warehouse" in text


def test_eval_profile_without_questions_says_what_to_give(tmp_path):
    import duckdb

    empty = tmp_path / "empty.duckdb"
    duckdb.connect(str(empty)).close()
    proc = run_cli("eval", "profile", "--warehouse", str(empty), "--embedder", "hash", "--write", "", check=False)
    assert proc.returncode == 2 and "no route functions: run `dbrouter build`" in proc.stderr


def test_eval_profile_with_too_few_questions_says_how_many_it_needs(built_kb, tmp_path):
    questions = tmp_path / "q.txt"
    questions.write_text("How many singers are there?\n\nHow many singers are there?\nList the stadiums.\n")
    proc = run_cli("eval", "profile", "--warehouse", str(built_kb["warehouse"]), "--embedder", "hash",
                   "--questions-file", str(questions), "--write", "", check=False)
    assert proc.returncode == 2 and "needs more than 3 distinct questions" in proc.stderr and "given 2" in proc.stderr
    missing = run_cli("eval", "profile", "--warehouse", str(built_kb["warehouse"]), "--questions-file",
                      str(tmp_path / "none.txt"), "--write", "", check=False)
    assert missing.returncode == 2 and "cannot read --questions-file" in missing.stderr
    zero = run_cli("eval", "profile", "--warehouse", str(built_kb["warehouse"]), "--n", "0", "--write", "", check=False)
    assert zero.returncode == 2 and "--n must be at least 1" in zero.stderr
