"""`dbrouter eval batch`: a table of questions routed in one SQL statement against one at a time.

The questions are the KB's own distinct example questions (up to ``n``), put in a temporary table;
per path (``udf``, ``sql``) they are routed one statement per question with
``route_query_ranked_<path>(?, k)``, then all at once with ``select ... from questions as q,
lateral route_query_ranked_<path>(q.text, k)``. Reported: both wall times, the throughput ratio,
and how many questions got the same top-``k`` (database and rank) both ways.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from dbrouter.errors import DbrouterError
from dbrouter.eval.publish import Report


@dataclass
class BatchResult:
    """One path: questions, seconds one at a time and batched, the ratio, identical rankings."""

    path: str
    n: int
    k: int
    one_at_a_time_s: float
    batched_s: float
    speedup: float
    identical: int


def run_batch(warehouse: Path, n: int = 1000, k: int = 3, paths: tuple[str, ...] = ("udf", "sql")) -> list[BatchResult]:
    """Route the KB's example questions one at a time and as one batch, per path.

    Args:
        warehouse: a built KB with example questions.
        n: questions (at most).
        k: candidates per question.
        paths: route paths to measure.

    Returns:
        One :class:`BatchResult` per path.
    """
    import duckdb

    from dbrouter.kb.connect import connect

    results = []
    for path in paths:
        con = connect(warehouse) if path == "udf" else duckdb.connect(str(warehouse), read_only=True)
        try:
            questions = [r[0] for r in con.execute("select distinct question from kb_examples "
                                                   "order by hash(question) limit ?", [n]).fetchall()]
            if not questions:
                raise DbrouterError(f"{warehouse} has no example questions to route: build a KB with examples")
            con.execute("create or replace temp table dbrouter_batch_questions as "
                        "select i as id, q as text from unnest(?) with ordinality as t(q, i)", [questions])
            fn = f"route_query_ranked_{path}"
            con.execute(f"select * from {fn}('warm up', {k})").fetchall()
            started = time.perf_counter()
            alone = [[tuple(r) for r in con.execute(f"select rank, db_id from {fn}(?, {k}) order by rank",
                                                    [q]).fetchall()] for q in questions]
            one_s = time.perf_counter() - started
            started = time.perf_counter()
            rows = con.execute(f"select q.id, r.rank, r.db_id from dbrouter_batch_questions as q, "
                               f"lateral {fn}(q.text, {k}) as r order by q.id, r.rank").fetchall()
            batch_s = time.perf_counter() - started
        finally:
            con.close()
        batched: dict[int, list[tuple]] = {}
        for qid, rank, db in rows:
            batched.setdefault(qid, []).append((rank, db))
        same = sum(batched.get(i, []) == a for i, a in enumerate(alone, 1))
        results.append(BatchResult(path, len(questions), k, round(one_s, 1), round(batch_s, 1),
                                   round(one_s / batch_s, 2) if batch_s else 0.0, same))
    return results


def batch_report(results: list[BatchResult], command: str) -> Report:
    """The results as a :class:`Report` (block ``eval batch``).

    Args:
        results: :func:`run_batch`'s.
        command: the command line to record.

    Returns:
        The report.
    """
    rows = "".join(f"| {r.path} | {r.n} | {r.one_at_a_time_s} | {r.batched_s} | {r.n / r.one_at_a_time_s:.1f} | "
                   f"{r.n / r.batched_s:.1f} | **{r.speedup}x** | {r.identical}/{r.n} |\n" for r in results)
    markdown = ("#### eval batch: a table of questions routed in one statement (`lateral route_query_ranked`)\n\n"
                "| path | questions | one at a time s | batched s | q/s alone | q/s batched | throughput ratio | "
                "same top-k |\n|---|---|---|---|---|---|---|---|\n" + rows + "\n")
    return Report(key="eval batch", command=command, data={"paths": [asdict(r) for r in results]},
                  markdown=markdown, text=json.dumps([asdict(r) for r in results]))
