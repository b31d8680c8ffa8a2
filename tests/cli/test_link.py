"""`dbrouter link` and `dbrouter eval link` through the entry point."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import ROOT, run_cli


def test_link_prints_the_linked_schema_with_join_keys(built_kb):
    proc = run_cli("link", "Which singers performed in concerts of 2014?", "--db", "concert_singer",
                   "--warehouse", str(built_kb["warehouse"]), "--json")
    out = json.loads(proc.stdout)
    assert out["db_id"] == "concert_singer" and out["method"] == "retrieval"
    assert out["columns"] and all(c.count(".") == 1 for c in out["columns"])
    tables = set(out["tables"])
    if {"singer", "concert"} <= tables:  # linked through the bridge table, with its keys
        assert "singer_in_concert" in tables and "singer_in_concert.Singer_ID" in out["columns"]
    assert out["schema"].startswith("[DB_ID] concert_singer") and "# Table:" in out["schema"]


def test_link_max_columns_bounds_what_is_handed_on(built_kb):
    args = ("link", "Which singers performed in concerts of 2014?", "--db", "concert_singer",
            "--warehouse", str(built_kb["warehouse"]), "--json")
    full = json.loads(run_cli(*args).stdout)
    budget = len(full["columns"]) - 1
    out = json.loads(run_cli(*args, "--max-columns", str(budget)).stdout)
    assert 0 < len(out["columns"]) <= budget and any("tables chosen first" in n for n in out["notes"])
    bad = run_cli(*args, "--max-columns", "0", check=False)
    assert bad.returncode == 2 and "at least 1" in bad.stderr and "Traceback" not in bad.stderr


def test_link_routes_when_no_db_is_given(built_kb):
    proc = run_cli("link", "How many singers do we have?", "--warehouse", str(built_kb["warehouse"]))
    assert "routed to" in proc.stderr and proc.stdout.startswith("[DB_ID] ")


def test_link_and_ask_on_an_abstention_name_the_closest_and_how_to_force_one(built_kb):
    """Before: `TypeError: 'NoneType' object is not iterable` in retrieval.require_database, exit 1."""
    for command in ("link", "ask"):
        proc = run_cli(command, "asdf qwerty", "--warehouse", str(built_kb["warehouse"]), check=False,
                       env={"DBROUTER_LLM_BASE_URL": ""})
        assert proc.returncode in (1, 2) and "Traceback" not in proc.stderr, proc.stderr
        assert "no database here is about this" in proc.stderr and "Closest: " in proc.stderr  # the vocabulary test
        assert "pass it with --db " in proc.stderr


def test_link_bad_input_is_a_clear_error(built_kb):
    empty = run_cli("link", "   ", "--db", "concert_singer", "--warehouse", str(built_kb["warehouse"]), check=False)
    assert empty.returncode != 0 and "empty" in empty.stderr and "Traceback" not in empty.stderr
    typo = run_cli("link", "How many singers?", "--db", "concert_singr", "--warehouse", str(built_kb["warehouse"]),
                   check=False)
    assert typo.returncode != 0 and "concert_singer" in typo.stderr  # close-name hint


def test_link_agent_without_llm_says_so(built_kb):
    proc = run_cli("link", "How many singers?", "--db", "concert_singer", "--linker", "agent",
                   "--warehouse", str(built_kb["warehouse"]), env={"DBROUTER_LLM_BASE_URL": ""})
    assert "needs an LLM" in proc.stderr and proc.stdout.startswith("[DB_ID] concert_singer")


def test_eval_link_reports_srr_and_the_baseline(tmp_path: Path):
    bench = ROOT / "tests" / "fixtures" / "sqlbench"
    proc = run_cli("eval", "link", "--benchmark", str(bench), "--workdir", str(tmp_path), "--json",
                   "--write", str(tmp_path / "B.md"))
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    n_test = sum(1 for line in (bench / "test.jsonl").read_text().splitlines() if line.strip())
    assert data["n"] + data["n_unparsed"] == n_test
    assert 0.0 <= data["srr"] <= 1.0 and data["avg_columns"] > 0 and data["p50_ms"] > 0
    assert data["baseline"]["avg_columns"] == data["avg_columns"]  # same budget per question
    assert "eval link sqlbench" in (tmp_path / "B.md").read_text()


def test_eval_link_table_recall_from_gold_tables(tmp_path: Path):
    """A benchmark shipping gold_tables.jsonl gets table recall for every question with gold tables,
    published SQL or not, beside the two baselines at the linker's budgets."""
    import shutil

    from dbrouter.eval.benchmark import load_benchmark
    from dbrouter.eval.link import gold_for, load_schemas

    bench_dir = tmp_path / "tabbench"
    shutil.copytree(ROOT / "tests" / "fixtures" / "sqlbench", bench_dir)
    bench = load_benchmark(bench_dir)
    schemas = load_schemas(bench)
    gold = [{"id": q.id, "db_id": q.db_id, "tables": sorted(gold_for(q, schemas).tables)} for q in bench.test]
    (bench_dir / "gold_tables.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gold), encoding="utf-8")
    lines = (bench_dir / "test.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["sql"] = ""  # SQL not published: still counted for table recall, not for SRR
    (bench_dir / "test.jsonl").write_text("\n".join([json.dumps(first)] + lines[1:]) + "\n", encoding="utf-8")
    proc = run_cli("eval", "link", "--benchmark", str(bench_dir), "--workdir", str(tmp_path), "--json",
                   "--write", str(tmp_path / "B.md"))
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    recall = data["table_recall"]
    assert recall["linker"]["n"] == sum(1 for g in gold if g["tables"]) and data["n_unparsed"] >= 1
    assert 0.0 < recall["linker"]["recall"] <= 1.0
    assert recall["bm25_tables"]["avg_tables"] == recall["linker"]["avg_tables"]  # same number of tables
    assert recall["top_k_columns"]["avg_columns"] == recall["linker"]["avg_columns"]  # same number of columns
    assert "table recall" in (tmp_path / "B.md").read_text()
