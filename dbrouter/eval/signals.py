"""`dbrouter eval signals`: where routing loses the gold database, per stage and per signal, beside
the baselines computed in the same run (issue 33).

The KB holds the benchmark's databases schema-only, plus the databases of ``distractors`` (other
benchmark directories: BEAVER is routed among spider-route's and bird-route-train's databases).
For every test question it reads the whole shortlist (``route_shortlist`` at full depth: every
database with its dense, lexical, stage-1 and fused ranks and its per-kind similarities) and the
routed ranking (``route_query_ranked_udf``, timed), and reports:

* R@1/3/10 and mAP of each single signal (database, top tables, top columns, lexical channel), of
  the dense ranking they fuse into, of the fused first ranking (the shortlist) and of the routed
  answer; and of two baselines: BM25 over one document per database (``rank_bm25``, the document of
  :func:`dbrouter.eval.wide.bm25_document`) and cosine to the database's mean table vector;
* where each miss of the routed answer happened: gold outside stage 1's top ``first_stage_k``,
  outside the re-rank depth (never re-ranked), or re-ranked below another database - and then
  which ranker signal outvoted it (the largest part of the winner's lead, weight x difference);
* the warm ``route_query_ranked`` p50 / p95.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from dbrouter.console import err
from dbrouter.eval.benchmark import Benchmark, load_benchmark
from dbrouter.eval.kb import Log, build_kb, percentiles_ms
from dbrouter.eval.publish import Report
from dbrouter.eval.route import RankMetrics, rank_of
from dbrouter.eval.wide import Baselines
from dbrouter.kb.connect import connect
from python_udfs.embeddings import get_embedder

SIGNALS = ("database", "table", "column", "dense", "lexical", "stage1", "shortlist", "routed")
"""The rankings measured, in the order the report lists them (baselines follow)."""

LABELS = {
    "database": "dense: database document alone",
    "table": "dense: top tables alone",
    "column": "dense: top columns alone (stage 2's databases)",
    "dense": "dense: the fused schema score",
    "lexical": "lexical: BM25 over each table's terms, best table",
    "stage1": "stage 1 (dense + lexical, reciprocal rank)",
    "shortlist": "first ranking (the re-rank's candidates)",
    "routed": "**dbrouter** (`route_query_ranked_udf`)",
    "bm25": "baseline: BM25, one document per database",
    "mean_table": "baseline: cosine to the mean table vector",
}


@dataclass
class SignalMetrics:
    """One benchmark's per-signal analysis."""

    benchmark: str
    distractors: list[str]
    n: int
    databases: int
    columns: int
    first_stage_k: int
    shortlist_k: int
    rankings: dict[str, RankMetrics]
    lost_in_stage1: int
    lost_before_rerank: int
    lost_in_rerank: int
    outvoted_by: dict[str, int]
    p50_ms: float
    p95_ms: float
    seconds: float


def repository(bench: Benchmark, distractors: list[Benchmark], path: Path) -> list[dict]:
    """Write the databases of ``bench`` and its distractors into one databases.jsonl.

    Args:
        bench: the benchmark whose questions are routed.
        distractors: benchmarks whose databases are routed among (their questions are not).
        path: the file to write.

    Returns:
        The database rows written.

    Raises:
        ValueError: two benchmarks hold a database of the same id.
    """
    rows: list[dict] = []
    seen: dict[str, str] = {}
    for b in [bench, *distractors]:
        for row in b.database_rows():
            if row["db_id"] in seen:
                raise ValueError(f"database {row['db_id']!r} is in both {seen[row['db_id']]} and {b.name}: "
                                 "distractors must not repeat the benchmark's databases")
            seen[row["db_id"]] = b.name
            rows.append(row)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return rows


def _ranks_by(rows: list[tuple], key: int, gold: str) -> int | None:
    """The gold database's rank when ``rows`` are ordered by column ``key`` (descending; NULLs last)."""
    scored = sorted((r for r in rows if r[key] is not None), key=lambda r: (-r[key], r[0]))
    return rank_of([r[0] for r in scored], gold)


def outvoting_signal(winner: dict[str, float], gold: dict[str, float], weights: dict[str, float]) -> str:
    """The ranker signal that gives the winner the largest part of its lead over the gold database.

    Args:
        winner: the routed first candidate's signals (evidence ``signals``).
        gold: the gold database's signals.
        weights: the ranker's weights (``route_ranker_weights()``).

    Returns:
        The signal's name.
    """
    return max(weights, key=lambda k: (weights[k] * ((winner.get(k) or 0.0) - (gold.get(k) or 0.0)), k))


def eval_signals(bench: Benchmark, workdir: Path, embedder: str | None, distractors: list[str] | None = None,
                 limit: int | None = None, log: Log = err) -> SignalMetrics:
    """Build the schema-only KB of ``bench`` (plus distractor databases) and measure every signal.

    Args:
        bench: the benchmark.
        workdir: folder of the repository file and the warehouse.
        embedder: embedder name.
        distractors: other benchmark directories whose databases are routed among.
        limit: only the first N test questions.
        log: progress output.

    Returns:
        The metrics.
    """
    others = [load_benchmark(d) for d in distractors or []]
    rows = repository(bench, others, workdir / "databases.jsonl")
    warehouse = workdir / "kb.duckdb"
    build_kb(workdir / "databases.jsonl", [], warehouse, embedder, log)
    questions = bench.test[:limit] if limit else bench.test
    q_vectors = np.asarray(get_embedder(embedder).encode([q.question for q in questions]), dtype=np.float32)
    ranks: dict[str, list[int | None]] = {k: [] for k in (*SIGNALS, "bm25", "mean_table")}
    lost = {"stage1": 0, "shortlist": 0, "rerank": 0}
    outvoted: dict[str, int] = {}
    millis: list[float] = []
    con = connect(warehouse, embedder=embedder)
    try:
        baselines = Baselines.of(rows, con)
        depth = con.execute("select route_shortlist_k()").fetchall()[0][0]
        weights = json.loads(con.execute("select cast(route_ranker_weights() as varchar)").fetchall()[0][0])
        first_k = min(con.execute("select route_first_stage_k()").fetchall()[0][0], len(rows))
        started = time.time()
        for i, q in enumerate(questions):
            t0 = time.perf_counter()
            routed = con.execute("select db_id, evidence from route_query_ranked_udf(?, 100000) order by rank",
                                 [q.question]).fetchall()
            millis.append((time.perf_counter() - t0) * 1000)
            ranks["routed"].append(rank_of([r[0] for r in routed], q.db_id))
            short = con.execute(
                "select db_id, database_similarity, table_similarity, column_similarity, score, lexical_score, "
                "shortlist_rank, first_stage_rank, dense_rank, lexical_rank from route_shortlist(?, 100000)",
                [q.question]).fetchall()
            for name, col in (("database", 1), ("table", 2), ("column", 3), ("lexical", 5)):
                ranks[name].append(_ranks_by(short, col, q.db_id))
            gold = next((r for r in short if r[0] == q.db_id), None)
            ranks["dense"].append(gold[8] if gold else None)
            ranks["shortlist"].append(gold[6] if gold else None)
            ranks["stage1"].append(gold[7] if gold else None)
            if ranks["routed"][-1] != 1:
                where = "stage1" if not gold or gold[7] > first_k else "shortlist" if gold[6] > depth else "rerank"
                lost[where] += 1
                if where == "rerank":
                    signals = {db: (json.loads(ev).get("signals") or {}) if ev else {} for db, ev in routed}
                    name = outvoting_signal(signals[routed[0][0]], signals.get(q.db_id, {}), weights)
                    outvoted[name] = outvoted.get(name, 0) + 1
            bm25_rank, mean_rank = baselines.ranks(q.question, q_vectors[i], q.db_id)
            ranks["bm25"].append(bm25_rank)
            ranks["mean_table"].append(mean_rank)
            if (i + 1) % 100 == 0 or i + 1 == len(questions):
                log(f"[{bench.name} signals] {i + 1}/{len(questions)} ({time.time() - started:.0f}s): R@1 "
                    + ", ".join(f"{k} {RankMetrics.of(ranks[k]).r1:.3f}" for k in ("routed", "shortlist", "bm25")))
    finally:
        con.close()
    p50, p95 = percentiles_ms(millis)
    return SignalMetrics(
        benchmark=bench.name, distractors=[b.name for b in others], n=len(questions), databases=len(rows),
        columns=sum(len(t["columns"]) for r in rows for t in r["tables"]), first_stage_k=first_k, shortlist_k=depth,
        rankings={k: RankMetrics.of(v) for k, v in ranks.items()},
        lost_in_stage1=lost["stage1"], lost_before_rerank=lost["shortlist"], lost_in_rerank=lost["rerank"],
        outvoted_by=dict(sorted(outvoted.items(), key=lambda kv: -kv[1])),
        p50_ms=p50, p95_ms=p95,
        seconds=round(time.time() - started, 1))


def signals_report(m: SignalMetrics, command: str) -> Report:
    """The metrics as a :class:`dbrouter.eval.publish.Report` (block ``eval signals <benchmark>``).

    Args:
        m: :func:`eval_signals`'s result.
        command: the command line to record.

    Returns:
        The report.
    """
    among = f" plus the {', '.join(m.distractors)} databases" if m.distractors else ""
    lines = [f"#### eval signals: {m.benchmark}{' among ' + ', '.join(m.distractors) if m.distractors else ''}\n",
             f"{m.n} test questions routed among {m.databases} databases ({m.benchmark}'s{among}; "
             f"{m.columns:,} columns), schema only.\n",
             "| ranking | R@1 | R@3 | R@10 | mAP |", "|---|---|---|---|---|"]
    for key in (*SIGNALS, "bm25", "mean_table"):
        r = m.rankings[key]
        lines.append(f"| {LABELS[key]} | {r.r1:.4f} | {r.r3:.4f} | {r.r10:.4f} | {r.map:.4f} |")
    best = max(m.rankings["bm25"].r1, m.rankings["mean_table"].r1)
    misses = m.lost_in_stage1 + m.lost_before_rerank + m.lost_in_rerank
    lines += ["", f"dbrouter R@1 minus the better baseline: {m.rankings['routed'].r1 - best:+.4f}. "
              f"Misses of the routed answer ({misses}): gold outside stage 1's top {m.first_stage_k} "
              f"{m.lost_in_stage1}, outside the re-rank's {m.shortlist_k} candidates {m.lost_before_rerank}, "
              f"re-ranked below another {m.lost_in_rerank}"
              + (" (the ranker signal giving the winner most of its lead: "
                 + ", ".join(f"{k} {v}" for k, v in m.outvoted_by.items()) + ")" if m.outvoted_by else "")
              + f". route_query_ranked p50 {m.p50_ms} ms, "
              f"p95 {m.p95_ms} ms.", "", ""]
    data = asdict(m)
    return Report(key=f"eval signals {m.benchmark}", command=command, data=data, markdown="\n".join(lines),
                  note=f"routing took {m.seconds}s", text=None)
