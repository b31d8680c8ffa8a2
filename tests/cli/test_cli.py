"""The `dbrouter` entry point, run as a subprocess."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from dbrouter.routing.ranker import SIGNALS
from tests.conftest import run_cli

pytestmark = pytest.mark.slow


def test_route_prints_ranking_and_explain(built_kb):
    proc = run_cli("route", "--warehouse", str(built_kb["warehouse"]), "--k", "2", "--explain",
                   "Which orchestra has the most performances?")
    assert "1. orchestra" in proc.stdout and "  2. " in proc.stdout
    # every number that orders the candidates is printed: the score, and each signal x weight
    score = float(proc.stdout.split("1. orchestra")[1].split("score ")[1].split()[0])
    block = proc.stdout.split("1. orchestra")[1].split("  2. ")[0]
    parts = [float(m[1]) for m in re.finditer(r" x +-?[\d.]+ = ([+-][\d.]+)$", block, re.M)]
    assert len(parts) == len(SIGNALS) and abs(sum(parts) - score) < 0.01
    assert "question words in table names (idf-weighted)" in block and "tables of the mapped columns" in block
    assert "closest stored example" in block or "no stored example questions" in block


def test_route_json_and_empty_question(built_kb):
    proc = run_cli("route", "--warehouse", str(built_kb["warehouse"]), "--json", "--k", "3", "", "stadium capacity")
    empty, full = [json.loads(line) for line in proc.stdout.splitlines()]
    assert empty["ranking"] == [] and empty["reason"] == "question is empty"
    assert len(full["ranking"]) == 3 and full["reason"] is None


def test_route_reads_questions_from_stdin(built_kb):
    import os
    import subprocess

    from tests.conftest import DBROUTER

    proc = subprocess.run([DBROUTER, "route", "--warehouse", str(built_kb["warehouse"]), "--json"],
                          input="how many singers\nlist stadiums\n", capture_output=True, text=True,
                          env={**os.environ, "DBROUTER_EMBEDDER": "hash"})
    assert proc.returncode == 0 and len(proc.stdout.splitlines()) == 2


def test_missing_warehouse_is_a_clear_error(tmp_path):
    proc = run_cli("route", "--warehouse", str(tmp_path / "none.duckdb"), "q", check=False)
    assert proc.returncode == 2
    assert "not found: run `dbrouter build" in proc.stderr and "Traceback" not in proc.stderr


def _one_error_line(proc) -> str:
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("dbrouter: error: ")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_sql_failure_inside_duckdb_is_one_error_line(built_kb, tmp_path):
    import shutil

    import duckdb

    broken = tmp_path / "broken.duckdb"
    shutil.copyfile(built_kb["warehouse"], broken)
    con = duckdb.connect(str(broken))  # a function failing at query time, as a UDF that cannot load does
    # the CLI's connection routes through the UDF path (temp macros over route_query_json_udf)
    con.execute("create or replace macro route_query_json_udf(question, k := 5) as (select error('simulated failure'))")
    con.close()
    line = _one_error_line(run_cli("route", "--warehouse", str(broken), "q", check=False))
    assert "simulated failure" in line and "dbrouter build" in line and "--embedder" in line


def test_unknown_embedder_is_one_error_line(built_kb):
    proc = run_cli("route", "--warehouse", str(built_kb["warehouse"]), "q", env={"DBROUTER_EMBEDDER": "bert"},
                   check=False)
    assert "'bert'" in _one_error_line(proc)  # caught by connect() or, failing inside SQL, by main()


def test_statements_list(built_kb):
    proc = run_cli("statements", "list", "--warehouse", str(built_kb["warehouse"]), "--db", "concert_singer")
    assert "[concert_singer] 'male singers' refers to singer.Is_male = 'T'" in proc.stdout
    assert "-> 'male singers' refers to singer.Is_male = 'T'   (structured, rules)" in proc.stdout
    assert proc.stderr.strip().endswith("1 statements")


def test_bad_sources_file_is_a_clear_error(tmp_path):
    (tmp_path / "s.yml").write_text("databases: [{type: oracle, path: x}]")
    proc = run_cli("build", "--sources", str(tmp_path / "s.yml"), "--warehouse", str(tmp_path / "w.duckdb"),
                   check=False)
    assert proc.returncode == 2 and "type must be one of" in proc.stderr


def mini_benchmark(tmp_path):
    """Three tiny schema-only databases, the same two questions in train and test, with evidence."""
    bench = tmp_path / "mini-route"
    bench.mkdir()
    dbs = {
        "music": [("artist", ["artist id", "name", "country"]), ("song", ["song id", "title", "artist id"])],
        "school": [("student", ["student id", "name", "grade"]), ("course", ["course id", "title", "credits"])],
        "shop": [("product", ["product id", "name", "price"]), ("orders", ["order id", "product id", "quantity"])],
    }
    with open(bench / "databases.jsonl", "w") as fh:
        for db, tables in dbs.items():
            fh.write(json.dumps({"db_id": db, "tables": [
                {"name": t, "label": t, "columns": [{"name": c.replace(" ", "_"), "label": c, "type": "text",
                                                     "primary_key": i == 0} for i, c in enumerate(cols)]}
                for t, cols in tables], "foreign_keys": []}) + "\n")
    qs = {"music": [("which artist sang the song", "select name from artist", "sang refers to song.artist_id"),
                    ("list song titles by country of artist", "select title from song", "")],
          "school": [("what grade is each student in", "select grade from student", "grade refers to student.grade"),
                     ("how many credits does the course have", "select credits from course", "")],
          "shop": [("total quantity of orders per product", "select sum(quantity) from orders", ""),
                   ("which product has the highest price", "select name from product",
                    "highest price refers to MAX(product.price)")]}
    statements = [{"db_id": db, "statement": ev} for db, rows in qs.items() for _, _, ev in rows if ev]
    (bench / "domain_statements.jsonl").write_text("\n".join(json.dumps(x) for x in statements) + "\n")
    for split in ("train", "test"):
        with open(bench / f"{split}.jsonl", "w") as fh:
            for db, rows in qs.items():
                for i, (q, sql, ev) in enumerate(rows):
                    fh.write(json.dumps({"id": f"{split}-{db}-{i}", "question": q, "db_id": db, "sql": sql,
                                         "evidence": ev}) + "\n")
    return bench


@pytest.fixture(scope="module")
def route_eval(tmp_path_factory) -> dict:
    """One `dbrouter eval route` of the small benchmark (UDF path): its folder, benchmark and output."""
    base = tmp_path_factory.mktemp("route_eval")
    bench = mini_benchmark(base)
    md = base / "BENCH.md"
    proc = run_cli("eval", "route", "--benchmark", str(bench), "--setting", "in-domain", "--json",
                   "--workdir", str(base / "work"), "--write", str(md))
    return {"base": base, "bench": bench, "md": md, "out": json.loads(proc.stdout.strip().splitlines()[-1])}


def test_eval_route_on_a_small_benchmark(route_eval):
    out, md = route_eval["out"], route_eval["md"]
    assert {"r1", "r2", "r3", "map", "n", "shortlist_recall", "p50_ms", "p95_ms"} <= set(out)
    assert out["n"] == 6 and out["r1"] == 1.0  # in-domain: every test question is also a train example
    assert out["shortlist_recall"] == 1.0 and out["errors"] == {}
    # the plain route_query (held) timed beside route_query_udf (planned), every answer the same
    assert out["plain_compared"] == 6 and out["plain_same"] == 6 and out["planned_p50_ms"] > 0
    text = md.read_text()
    assert "eval route: mini-route, in-domain" in text and "shortlist alone" in text and "after re-rank" in text


def test_eval_route_sql_path_is_recorded_beside_the_udf_path(route_eval, tmp_path):
    """The pure-SQL path's run, in the UDF run's workdir, adds its own block beside the UDF path's."""
    md = tmp_path / "BENCH.md"
    shutil.copyfile(route_eval["md"], md)
    assert route_eval["out"]["path"] == "udf"
    proc = run_cli("eval", "route", "--benchmark", str(route_eval["bench"]), "--setting", "in-domain", "--json",
                   "--path", "sql", "--workdir", str(route_eval["base"] / "work"), "--write", str(md))
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["path"] == "sql" and out["n"] == 6 and out["planned_p50_ms"] is None
    assert out["r1"] >= 5 / 6  # in-domain: every test question is also a train example
    text = md.read_text()
    assert "<!-- dbrouter:eval route mini-route in-domain -->" in text
    assert "<!-- dbrouter:eval route mini-route in-domain sql-path -->" in text
    assert "eval route: mini-route, in-domain, pure-SQL path" in text and "--path sql" in text


def test_eval_statements_and_examples_on_a_small_benchmark(tmp_path):
    bench = mini_benchmark(tmp_path)
    md = tmp_path / "BENCH.md"
    common = ["--benchmark", str(bench), "--workdir", str(tmp_path / "work"), "--write", str(md)]
    st = json.loads(run_cli("eval", "statements", "--json", *common).stdout.strip().splitlines()[-1])
    assert st["n"] == 3 and {"sbr_f1", "cosine_f1", "bm25_f1", "sbr_recall_at_4", "sbr_recall_at_10"} <= set(st)
    assert st["sbr_recall_at_4"] == 1.0  # 3 questions, at most 1 statement per database
    ex = json.loads(run_cli("eval", "examples", "--json", *common).stdout.strip().splitlines()[-1])
    assert ex["n"] == 6 and ex["exact"]["fires"] == 6 and ex["exact"]["table_precision"] == 1.0
    text = md.read_text()
    assert "eval statements: mini-route" in text and "eval examples: mini-route" in text
    smoke = run_cli("eval", "examples", "--limit", "2", *common)
    assert "| exact | 2 |" in smoke.stdout and "| exact | 2 |" not in md.read_text()  # limited runs not recorded


def test_eval_scale_builds_and_routes_a_synthetic_repository(tmp_path):
    bench = mini_benchmark(tmp_path)
    md = tmp_path / "BENCH.md"
    proc = run_cli("eval", "scale", "--benchmark", str(bench), "--databases", "4", "--workdir",
                   str(tmp_path / "work"), "--write", str(md))
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["databases"] == 4 and out["documents"] > out["columns"] > 0
    assert out["p50_ms"] > 0 and out["build_peak_rss_mib"] > 0
    assert "eval scale: 4 synthetic databases" in md.read_text()


def test_eval_build_counts_what_each_build_embedded(tmp_path):
    bench = mini_benchmark(tmp_path)
    md = tmp_path / "BENCH.md"
    proc = run_cli("eval", "build", "--benchmark", str(bench), "--workdir", str(tmp_path / "work"), "--write", str(md))
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["full_build_embedded"] > 0 and out["noop_build_embedded"] == 0  # read from the cache, not the log
    assert 0 < out["change_build_embedded"] < out["full_build_embedded"] and out["changed_db"] == "music"
    text = md.read_text()
    assert "<!-- dbrouter:eval build mini-route -->" in text and f"| again, nothing changed | {out['noop_build_s']} | 0 |" in text
    assert f"Command: `dbrouter eval build --benchmark {bench}` - " in text


def test_route_echoes_terminal_escapes_as_text(built_kb):
    proc = run_cli("route", "--warehouse", str(built_kb["warehouse"]), "--k", "1", "\x1b[2J\x1b[31msingers\x07")
    assert "Q: \\x1b[2J\\x1b[31msingers\\x07" in proc.stdout and "\x1b" not in proc.stdout


def test_command_groups_are_what_each_group_registers():
    import argparse

    from dbrouter.cli.main import COMMAND_GROUPS, parser

    def commands(p: argparse.ArgumentParser) -> list[str]:
        return list(next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices)

    for group, names in COMMAND_GROUPS.items():
        assert commands(parser([group])) == list(names), group
    assert commands(parser()) == [n for names in COMMAND_GROUPS.values() for n in names]


def test_a_command_line_builds_its_group_alone():
    import subprocess
    import sys

    code = ("import sys\nfrom dbrouter.cli.main import main\ntry:\n    main(['route', '--help'])\n"
            "except SystemExit:\n    pass\nprint(sorted(m for m in sys.modules if m.startswith('dbrouter.cli.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "usage: dbrouter route" in out and "--no-llm" in out
    loaded = out.strip().splitlines()[-1]
    assert "dbrouter.cli.route" in loaded and "dbrouter.cli.eval" not in loaded and "dbrouter.cli.kb" not in loaded
    unknown = subprocess.run([sys.executable, "-m", "dbrouter.cli.main", "rout"], capture_output=True, text=True)
    assert unknown.returncode == 2 and "invalid choice: 'rout'" in unknown.stderr and "'eval'" in unknown.stderr
