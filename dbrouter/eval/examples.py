"""`dbrouter eval examples`: how often each stage of the example cascade fires and how precise it is.

KB: every train question of the benchmark as an example (in-domain). Each test question goes
through ``retrieve_examples(question, NULL, 1)`` (all databases). Precision of a stage, over the
questions it answered: *database* = the top example comes from the gold database; *tables* = its
SQL uses every table of the gold SQL (parsed with sqlglot) and it is from the gold database.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from pathlib import Path

from dbrouter.eval.benchmark import Benchmark
from dbrouter.eval.route import build_kb, machine, publish
from dbrouter.warehouse import connect
from python_udfs.examples import parse_sql

STAGES = ("exact", "normalized", "main_clause", "expanded", "none")


def eval_examples(bench: Benchmark, workdir: Path, embedder: str | None, limit: int | None = None,
                  log=lambda m: print(m, file=sys.stderr, flush=True)) -> dict:
    """Route every test question through the cascade and score each stage.

    Args:
        bench: the benchmark.
        workdir: evaluation folder (its warehouse is reused).
        embedder: embedder name.
        limit: only the first N test questions (smoke runs).
        log: progress output.

    Returns:
        Metrics: thresholds, and per stage ``fires``, ``share``, ``db_precision``, ``table_precision``.
    """
    started = time.time()
    wh = workdir / "kb.duckdb"
    build_kb(bench.databases_file, bench.train, wh, embedder, log)
    con = connect(wh, embedder=embedder)
    thresholds = con.execute(
        "select normalized_threshold, main_clause_threshold, expanded_threshold from kb_example_thresholds").fetchall()[0]
    questions = bench.test[:limit] if limit else bench.test
    fires: dict[str, int] = defaultdict(int)
    db_ok: dict[str, int] = defaultdict(int)
    tab_ok: dict[str, int] = defaultdict(int)
    for i, q in enumerate(questions, 1):
        rows = con.execute("select stage, db_id, tables_used from retrieve_examples(?, NULL, 1)", [q.question]).fetchall()
        stage = rows[0][0] if rows else "none"
        fires[stage] += 1
        if rows:
            same_db = rows[0][1] == q.db_id
            gold_tables = {t.lower() for t in parse_sql(q.sql)[0]}
            used = {t.lower() for t in (rows[0][2] or [])}
            db_ok[stage] += same_db
            tab_ok[stage] += same_db and bool(gold_tables) and gold_tables <= used
        if i % 500 == 0:
            log(f"  {i}/{len(questions)} questions ({time.time() - started:.0f}s)")
    con.close()
    n = len(questions) or 1
    out: dict = {"benchmark": bench.name, "n": len(questions),
                 "thresholds": {"normalized": round(thresholds[0], 4), "main_clause": round(thresholds[1], 4),
                                "expanded": round(thresholds[2], 4)}}
    for s in STAGES:
        f = fires.get(s, 0)
        out[s] = {"fires": f, "share": round(f / n, 4),
                  "db_precision": round(db_ok[s] / f, 4) if f and s != "none" else None,
                  "table_precision": round(tab_ok[s] / f, 4) if f and s != "none" else None}
    answered = sum(fires[s] for s in STAGES if s != "none") or 1
    out["overall_db_precision"] = round(sum(db_ok.values()) / answered, 4)
    out["overall_table_precision"] = round(sum(tab_ok.values()) / answered, 4)
    out["seconds"] = round(time.time() - started, 1)
    return out


def examples_block(r: dict, command: str) -> str:
    rows = "\n".join(
        f"| {s} | {r[s]['fires']} | {r[s]['share']:.4f} | {r[s]['db_precision'] if r[s]['db_precision'] is not None else '-'} "
        f"| {r[s]['table_precision'] if r[s]['table_precision'] is not None else '-'} |" for s in STAGES)
    t = r["thresholds"]
    return (f"#### eval examples: {r['benchmark']}\n\n"
            f"{r['n']} test questions, all train questions as examples; thresholds calibrated by the build: "
            f"normalized >= {t['normalized']}, main clause >= {t['main_clause']}, expanded >= {t['expanded']}.\n\n"
            f"| stage | fires | share | precision: gold database | precision: gold database and tables |\n"
            f"|---|---|---|---|---|\n{rows}\n\n"
            f"Overall (answered questions): database precision {r['overall_db_precision']}, "
            f"tables precision {r['overall_table_precision']}.\n\n"
            f"Command: `{command}` - {time.strftime('%Y-%m-%d')}, {machine()}; {r['seconds']}s.\n")


def run(bench: Benchmark, workdir: Path, embedder: str | None, limit: int | None, as_json: bool,
        write: Path | None, bench_arg: str) -> dict:
    """CLI entry: evaluate, print, and record in BENCHMARKS.md (whole splits only)."""
    r = eval_examples(bench, workdir, embedder, limit)
    publish(r, examples_block, f"eval examples {bench.name}", f"dbrouter eval examples --benchmark {bench_arg}",
            as_json, write, limit)
    return r
