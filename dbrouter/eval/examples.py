"""`dbrouter eval examples`: how often each stage of the example cascade fires and how precise it is.

KB: every train question of the benchmark as an example (in-domain). Each test question goes
through ``retrieve_examples(question, NULL, 1)`` (all databases). Precision of a stage, over the
questions it answered: *database* = the top example comes from the gold database; *tables* = its
SQL uses every table of the gold SQL (parsed with sqlglot) and it is from the gold database.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from dbrouter.console import err
from dbrouter.eval.benchmark import Benchmark
from dbrouter.eval.kb import Log, build_kb
from dbrouter.eval.publish import Report
from dbrouter.kb.connect import connect
from python_udfs.examples import parse_sql

STAGES = ("exact", "normalized", "main_clause", "expanded", "none")


def eval_examples(bench: Benchmark, workdir: Path, embedder: str | None, limit: int | None = None,
                  log: Log = err) -> dict:
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
    questions = bench.test[:limit] if limit else bench.test
    counts = StageCounts()
    con = connect(wh, embedder=embedder)
    try:
        thresholds = con.execute("select normalized_threshold, main_clause_threshold, expanded_threshold "
                                 "from kb_example_thresholds").fetchall()[0]
        for i, q in enumerate(questions, 1):
            rows = con.execute("select stage, db_id, tables_used from retrieve_examples(?, NULL, 1)",
                               [q.question]).fetchall()
            counts.add(rows[0] if rows else None, q.db_id, q.sql)
            if i % 500 == 0:
                log(f"  {i}/{len(questions)} questions ({time.time() - started:.0f}s)")
    finally:
        con.close()
    out: dict = {"benchmark": bench.name, "n": len(questions),
                 "thresholds": {"normalized": round(thresholds[0], 4), "main_clause": round(thresholds[1], 4),
                                "expanded": round(thresholds[2], 4)}}
    return {**out, **counts.metrics(len(questions)), "seconds": round(time.time() - started, 1)}


@dataclass
class StageCounts:
    """Per stage: how often it answered, and how often its top example was right."""

    fires: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    db_ok: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    tab_ok: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def add(self, top: tuple | None, gold_db: str, gold_sql: str) -> None:
        """Count one question.

        Args:
            top: the cascade's first row (stage, db_id, tables_used), None when nothing was found.
            gold_db: the question's database.
            gold_sql: its gold SQL (the tables it uses are the table-precision target).
        """
        stage = top[0] if top else "none"
        self.fires[stage] += 1
        if top:
            same_db = top[1] == gold_db
            gold_tables = {t.lower() for t in parse_sql(gold_sql)[0]}
            used = {t.lower() for t in (top[2] or [])}
            self.db_ok[stage] += same_db
            self.tab_ok[stage] += same_db and bool(gold_tables) and gold_tables <= used

    def metrics(self, n_questions: int) -> dict:
        """Per stage ``fires``, ``share``, ``db_precision``, ``table_precision``, and the overall precisions.

        Args:
            n_questions: the number of questions counted.

        Returns:
            Stage name -> its metrics, plus ``overall_db_precision`` and ``overall_table_precision``.
        """
        n = n_questions or 1
        out: dict = {}
        for s in STAGES:
            f = self.fires.get(s, 0)
            out[s] = {"fires": f, "share": round(f / n, 4),
                      "db_precision": round(self.db_ok[s] / f, 4) if f and s != "none" else None,
                      "table_precision": round(self.tab_ok[s] / f, 4) if f and s != "none" else None}
        answered = sum(self.fires[s] for s in STAGES if s != "none") or 1
        out["overall_db_precision"] = round(sum(self.db_ok.values()) / answered, 4)
        out["overall_table_precision"] = round(sum(self.tab_ok.values()) / answered, 4)
        return out


def examples_report(r: dict, command: str) -> Report:
    """The metrics as a :class:`Report` (block ``eval examples <benchmark>``).

    Args:
        r: :func:`eval_examples`'s result.
        command: the command line to record.

    Returns:
        The report (JSON: ``r``; text: the markdown table).
    """
    rows = "\n".join(
        f"| {s} | {r[s]['fires']} | {r[s]['share']:.4f} | {r[s]['db_precision'] if r[s]['db_precision'] is not None else '-'} "
        f"| {r[s]['table_precision'] if r[s]['table_precision'] is not None else '-'} |" for s in STAGES)
    t = r["thresholds"]
    markdown = (
        f"#### eval examples: {r['benchmark']}\n\n"
        f"{r['n']} test questions, all train questions as examples; thresholds calibrated by the build: "
        f"normalized >= {t['normalized']}, main clause >= {t['main_clause']}, expanded >= {t['expanded']}.\n\n"
        f"| stage | fires | share | precision: gold database | precision: gold database and tables |\n"
        f"|---|---|---|---|---|\n{rows}\n\n"
        f"Overall (answered questions): database precision {r['overall_db_precision']}, "
        f"tables precision {r['overall_table_precision']}.\n\n")
    return Report(key=f"eval examples {r['benchmark']}", command=command, data=r, markdown=markdown,
                  note=f"{r['seconds']}s")
