"""`dbrouter eval first-stage`: what the two-stage shortlist costs (route_shortlist_step).

Stage 1 scores every database without its column documents; only its top
``dbrouter__first_stage_k`` have their columns read. For each test question this reads the whole
shortlist at full depth (every database column-scored: the one-stage ranking) and reports:

* the gold database's stage-1 rank: recall of stage 1's top N for N in :data:`DEPTHS`;
* whether the one-stage ranking's top ``dbrouter__shortlist_k`` (the re-rank depth) all lie in
  stage 1's top ``first_stage_k``. When they do, the two-stage shortlist hands the re-rank exactly
  the one-stage candidates, scores and order, so the routed answer cannot differ; the share of
  questions where they do not bounds the questions whose answer can change.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from dbrouter.connection import Connection
from dbrouter.console import err
from dbrouter.eval.benchmark import Benchmark
from dbrouter.eval.kb import Log, build_kb
from dbrouter.eval.publish import Report
from dbrouter.kb.connect import connect

DEPTHS = (10, 20, 50, 100)
"""Stage-1 depths whose recall is reported."""


@dataclass
class FirstStageMetrics:
    """The first stage's cost on one benchmark's test split."""

    benchmark: str
    n: int
    databases: int
    first_stage_k: int
    shortlist_k: int
    recall: dict[str, float]
    exact_candidates_kept: float
    seconds: float


def first_stage_ranks(con: Connection, question: str, gold: str, depth: int) -> tuple[int | None, list[int]]:
    """The gold database's stage-1 rank and the stage-1 ranks of the one-stage top ``depth``.

    Args:
        con: connection from :func:`dbrouter.connect`.
        question: the question.
        gold: its gold database.
        depth: the re-rank depth (``route_shortlist_k()``).

    Returns:
        (gold's first_stage_rank or None when the KB does not hold it, the first_stage_rank of
        each of the one-stage shortlist's top ``depth``).
    """
    rows = con.execute("select db_id, shortlist_rank, first_stage_rank from route_shortlist(?, 1000000)",
                       [question]).fetchall()
    gold_rank = next((r[2] for r in rows if r[0] == gold), None)
    return gold_rank, [r[2] for r in rows if r[1] <= depth]


def eval_first_stage(bench: Benchmark, workdir: Path, embedder: str | None, limit: int | None = None,
                     log: Log = err) -> FirstStageMetrics:
    """Build the benchmark's KB (databases + train examples, as `eval route --setting in-domain`)
    and measure its first stage on the test questions.

    Args:
        bench: the benchmark.
        workdir: folder of the warehouse (shared with `eval route` in-domain).
        embedder: embedder name.
        limit: only the first N test questions.
        log: progress output.

    Returns:
        The metrics.
    """
    warehouse = workdir / "kb.duckdb"
    build_kb(bench.databases_file, bench.train, warehouse, embedder, log)
    questions = bench.test[:limit] if limit else bench.test
    con = connect(warehouse, embedder=embedder)
    try:
        depth = con.execute("select route_shortlist_k()").fetchall()[0][0]
        n_db = con.execute("select count(*) from kb_databases").fetchall()[0][0]
        first_k = min(con.execute("select route_first_stage_k()").fetchall()[0][0], n_db)
        started = time.time()
        gold_ranks, kept = [], 0
        for i, q in enumerate(questions, 1):
            gold_rank, top = first_stage_ranks(con, q.question, q.db_id, depth)
            gold_ranks.append(gold_rank)
            kept += all(r <= first_k for r in top)
            if i % 500 == 0:
                log(f"[{bench.name}] first stage: {i}/{len(questions)} questions")
    finally:
        con.close()
    n = len(questions) or 1
    recall = {str(d): round(sum(1 for r in gold_ranks if r is not None and r <= d) / n, 4) for d in DEPTHS}
    return FirstStageMetrics(bench.name, len(questions), n_db, first_k, depth, recall, round(kept / n, 4),
                             round(time.time() - started, 1))


def first_stage_report(m: FirstStageMetrics, command: str) -> Report:
    """The metrics as a :class:`dbrouter.eval.publish.Report` (block ``eval first-stage <benchmark>``).

    Args:
        m: :func:`eval_first_stage`'s result.
        command: the command line to record.

    Returns:
        The report.
    """
    depths = " | ".join(f"top {d}" for d in DEPTHS)
    markdown = (
        f"#### eval first-stage: {m.benchmark}\n\n"
        f"| questions | databases | first_stage_k | gold in stage 1's {depths} | one-stage top {m.shortlist_k} "
        f"within stage 1's top {m.first_stage_k} |\n"
        f"|---|---|---|{'---|' * len(DEPTHS)}---|\n"
        f"| {m.n} | {m.databases} | {m.first_stage_k} | "
        + " | ".join(f"{m.recall[str(d)]:.4f}" for d in DEPTHS) + f" | {m.exact_candidates_kept:.4f} |\n\n")
    return Report(key=f"eval first-stage {m.benchmark}", command=command, data=asdict(m), markdown=markdown,
                  note=f"{m.seconds}s", text=json.dumps(asdict(m)))
