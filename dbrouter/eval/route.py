"""`dbrouter eval ...`: accuracy and speed measured on whole benchmark splits.

Results are printed and written into BENCHMARKS.md (one block per benchmark/setting, replaced
on every run) together with the command, the machine and the date.
"""

from __future__ import annotations

import json
import os
import platform
import random
import re
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from dbrouter.eval.benchmark import Benchmark, Question, setting_split
from dbrouter.dbt_runner import run_dbt
from dbrouter.evidence import RouteEvidence
from dbrouter.ingest import ingest, print_issues
from dbrouter.sources import SourceSpec, SourcesConfig
from dbrouter.warehouse import connect

Log = Callable[[str], None]


def stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@dataclass
class RouteMetrics:
    benchmark: str
    setting: str
    n: int
    r1: float
    r2: float
    r3: float
    r10: float
    map: float
    p50_ms: float
    p95_ms: float
    seconds: float
    shortlist_k: int = 0
    shortlist_recall: float = 0.0
    shortlist_r1: float = 0.0
    shortlist_r2: float = 0.0
    shortlist_r3: float = 0.0
    shortlist_map: float = 0.0
    implied_edge_wins: int = 0
    reranked_changed: int = 0
    errors: dict[str, int] = field(default_factory=dict)


def machine() -> str:
    """One line describing this machine (cores, memory, CPU, Python)."""
    mem = ""
    try:
        kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
        mem = f", {kb / 1024 / 1024:.0f} GiB"
    except (OSError, AttributeError):
        pass
    cpu = platform.processor() or platform.machine()
    try:
        cpu = re.search(r"model name\s*:\s*(.+)", Path("/proc/cpuinfo").read_text()).group(1).strip()
    except (OSError, AttributeError):
        pass
    return f"{os.cpu_count()} cores{mem}, {cpu}, Python {platform.python_version()}"


def write_examples(questions: list[Question], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for q in questions:
            fh.write(json.dumps({"db_id": q.db_id, "question": q.question, "sql": q.sql}) + "\n")
    return path


def build_kb(databases: Path, examples: list[Question], warehouse: Path, embedder: str | None,
             log: Log = stderr, statements: Path | None = None) -> tuple[float, int]:
    """Ingest a schema-only benchmark repository plus examples and run ``dbt build``.

    Args:
        databases: a databases.jsonl file.
        examples: question/SQL examples to put in the KB.
        warehouse: the warehouse file (its embedding cache is reused between builds).
        embedder: embedder name.
        log: progress output.
        statements: a domain_statements.jsonl file to load too (optional).

    Returns:
        (wall seconds, number of documents embedded by this build)
    """
    started = time.time()
    ex_file = write_examples(examples, warehouse.parent / "examples.jsonl")
    config = SourcesConfig([SourceSpec("schema_json", databases)], examples=[ex_file],
                           statements=[statements] if statements else [])
    report = ingest(config, warehouse, progress=log)
    log(report.summary())
    print_issues(report, limit=5)
    out = run_dbt(["build", "--vars", "{dbrouter__use_seeds: false}"], warehouse, embedder, quiet=True)
    embedded = [int(m) for m in re.findall(r"dbrouter: embedded (\d+)", out)]
    log(f"dbt build done in {time.time() - started:.1f}s, embedded {sum(embedded)} documents")
    return time.time() - started, sum(embedded)


def rank_of(ranking: list[str], gold: str) -> int | None:
    """1-based rank of ``gold`` in ``ranking``, None when absent."""
    try:
        return ranking.index(gold) + 1
    except ValueError:
        return None


def route_metrics(ranks: list[int | None]) -> dict[str, float]:
    """R@1/2/3/10 and mAP (one relevant database per question, so AP = 1/rank).

    Args:
        ranks: gold rank per question (None = not ranked).

    Returns:
        Metric name -> value.
    """
    n = len(ranks) or 1
    hit = lambda k: sum(1 for r in ranks if r is not None and r <= k) / n  # noqa: E731
    return {"r1": hit(1), "r2": hit(2), "r3": hit(3), "r10": hit(10),
            "map": sum(1.0 / r for r in ranks if r) / n}


@dataclass
class RoutedRanks:
    """Gold ranks of a routed question set: after the re-rank and in the shortlist alone."""

    final: list[int | None]
    shortlist: list[int | None]
    implied_edge_wins: int = 0
    changed: int = 0
    errors: dict[str, int] = field(default_factory=dict)


def error_category(gold: RouteEvidence | None, top: RouteEvidence) -> str:
    """Why the gold database lost the top rank (error analysis of the re-rank).

    Args:
        gold: the gold database's evidence (None when it was not ranked at all).
        top: the winner's evidence.

    Returns:
        ``not_in_shortlist`` (the re-rank never saw it), ``gold_not_connected`` (its mapped tables
        are in different parts of its join graph: a missing edge or a wrong mapping),
        ``gold_more_na`` (more of its phrases unmapped: a mapping miss), ``tie_same_tables`` (same
        total and the winner maps phrases to same-named tables: an ambiguous question over
        overlapping schemas) or ``tie_semantic`` (same total, lost on the semantic tie-break).
    """
    if gold is None or not gold.reranked:
        return "not_in_shortlist"
    if (gold.connectivity or 0) < (top.connectivity or 0):
        return "gold_not_connected"
    if (gold.total_score or 0) < (top.total_score or 0):
        return "gold_more_na"
    tables = lambda ev: {t.lower() for t in ev.join_tables or []}  # noqa: E731
    return "tie_same_tables" if tables(gold) & tables(top) else "tie_semantic"


def route_one(con, q: Question, out: RoutedRanks) -> None:
    """Route one question through ``route_query_ranked`` and add its outcome to ``out``.

    Args:
        con: warehouse connection.
        q: the question with its gold database.
        out: updated with the gold ranks, the implied-edge count, the changed top-1 and the miss category.
    """
    rows = con.execute("select db_id, shortlist_rank, case when rank = 1 or db_id = ? then evidence end "
                       "from route_query_ranked(?, 100000) order by rank", [q.db_id, q.question]).fetchall()
    out.final.append(rank_of([r[0] for r in rows], q.db_id))
    out.shortlist.append(rank_of([r[0] for r in sorted(rows, key=lambda r: r[1])], q.db_id))
    if not rows:
        return
    top = RouteEvidence.from_json(rows[0][2])
    out.implied_edge_wins += bool(top.needs_implied_edges)
    out.changed += rows[0][1] != 1
    if rows[0][0] != q.db_id:
        gold = next((RouteEvidence.from_json(r[2]) for r in rows if r[0] == q.db_id and r[2]), None)
        cat = error_category(gold, top)
        out.errors[cat] = out.errors.get(cat, 0) + 1


def evaluate_routing(con, questions: list[Question], log: Log = stderr) -> RoutedRanks:
    """Route every question and collect the gold ranks.

    Args:
        con: warehouse connection.
        questions: questions with their gold database.
        log: progress output.

    Returns:
        Gold ranks after the re-rank and in the shortlist (first ranking), how many top-1
        decisions needed an implied join edge, how many top-1s the re-rank changed, and the misses.
    """
    out = RoutedRanks([], [])
    started = time.time()
    for i, q in enumerate(questions, 1):
        route_one(con, q, out)
        if i % 500 == 0 or i == len(questions):
            done, sl = route_metrics(out.final), route_metrics(out.shortlist)
            log(f"  routed {i}/{len(questions)} ({time.time() - started:.0f}s) R@1 so far {done['r1']:.4f} "
                f"(shortlist alone {sl['r1']:.4f})")
    return out


def latency(con, questions: list[str], n: int = 200, seed: int = 0) -> tuple[float, float]:
    """Warm p50/p95 (ms) of ``select route_query(?)`` over ``n`` sampled question texts."""
    sample = random.Random(seed).sample(questions, min(n, len(questions)))
    for q in sample[:5]:
        con.execute("select route_query(?)", [q]).fetchall()
    times = []
    for q in sample:
        t = time.perf_counter()
        con.execute("select route_query(?)", [q]).fetchall()
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return statistics.median(times), times[max(0, int(round(0.95 * len(times))) - 1)]


def eval_route(bench: Benchmark, setting: str, workdir: Path, embedder: str | None,
               limit: int | None = None, log: Log = stderr) -> RouteMetrics:
    """Build the KB for ``setting`` and route the setting's test questions.

    Args:
        bench: the benchmark.
        setting: in-domain / schema-only / cross-domain.
        workdir: where the evaluation warehouse lives (reused across settings).
        embedder: embedder name.
        limit: evaluate only the first ``limit`` questions (for smoke runs; not for reporting).
        log: progress output.

    Returns:
        The metrics.
    """
    examples, questions = setting_split(bench, setting)
    if limit:
        questions = questions[:limit]
    warehouse = workdir / "kb.duckdb"
    log(f"[{bench.name} / {setting}] building KB: {len(bench.db_ids)} databases, {len(examples)} examples")
    build_kb(bench.databases_file, examples, warehouse, embedder, log)
    con = connect(warehouse, embedder=embedder)
    try:
        started = time.time()
        log(f"[{bench.name} / {setting}] routing {len(questions)} test questions")
        ranks = evaluate_routing(con, questions, log)
        seconds = time.time() - started
        p50, p95 = latency(con, [q.question for q in questions])
        depth = int(con.execute("select route_shortlist_k()").fetchall()[0][0])
    finally:
        con.close()
    m, sl = route_metrics(ranks.final), route_metrics(ranks.shortlist)
    recall = sum(1 for r in ranks.shortlist if r is not None and r <= depth) / (len(ranks.shortlist) or 1)
    return RouteMetrics(bench.name, setting, len(questions), round(m["r1"], 4), round(m["r2"], 4),
                        round(m["r3"], 4), round(m["r10"], 4), round(m["map"], 4),
                        round(p50, 1), round(p95, 1), round(seconds, 1), depth, round(recall, 4),
                        round(sl["r1"], 4), round(sl["r2"], 4), round(sl["r3"], 4), round(sl["map"], 4),
                        ranks.implied_edge_wins, ranks.changed, dict(sorted(ranks.errors.items())))


def update_benchmarks_md(path: Path, key: str, body: str) -> None:
    """Replace (or append) the block ``key`` of BENCHMARKS.md.

    Args:
        path: the BENCHMARKS.md file.
        key: block identifier, e.g. ``eval route spider-route in-domain``.
        body: markdown of the block.
    """
    start, end = f"<!-- dbrouter:{key} -->", f"<!-- /dbrouter:{key} -->"
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    block = f"{start}\n{body.rstrip()}\n{end}"
    if start in text and end in text:
        text = text[:text.index(start)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)


def publish(result: dict, block: Callable[[dict, str], str], key: str, command: str, as_json: bool,
            write: Path | None, limit: int | None) -> None:
    """Print an eval's result (one JSON line, or its markdown block) and record it in BENCHMARKS.md.

    Args:
        result: the metrics.
        block: renders the markdown block from (result, command).
        key: BENCHMARKS.md block key.
        command: the command line to record.
        as_json: print JSON instead of markdown.
        write: BENCHMARKS.md path, or None not to record.
        limit: a smoke run's question limit; limited runs are never recorded.
    """
    print(json.dumps(result) if as_json else block(result, "").split("Command:")[0], flush=True)
    if write and not limit:
        update_benchmarks_md(write, key, block(result, command))


def route_block(m: RouteMetrics, command: str) -> str:
    return (f"#### eval route: {m.benchmark}, {m.setting}\n\n"
            f"| n | ranking | R@1 | R@2 | R@3 | R@10 | mAP | route_query p50 ms | p95 ms |\n"
            f"|---|---|---|---|---|---|---|---|---|\n"
            f"| {m.n} | shortlist alone | {m.shortlist_r1:.4f} | {m.shortlist_r2:.4f} | {m.shortlist_r3:.4f} | "
            f"{m.shortlist_recall:.4f} (R@{m.shortlist_k}) | {m.shortlist_map:.4f} | | |\n"
            f"| {m.n} | **after re-rank** | **{m.r1:.4f}** | {m.r2:.4f} | {m.r3:.4f} | {m.r10:.4f} | {m.map:.4f} | "
            f"{m.p50_ms} | {m.p95_ms} |\n\n"
            f"Gold database in the top-{m.shortlist_k} shortlist (the re-rank's ceiling): {m.shortlist_recall:.4f}. "
            f"The re-rank changed the top-1 for {m.reranked_changed} questions; {m.implied_edge_wins} top-1 "
            f"decisions needed an implied (non-declared) join edge for connectivity.\n\n"
            + (f"Why the gold database was not first ({sum(m.errors.values())} questions): "
               + ", ".join(f"{k} {v}" for k, v in m.errors.items()) + " (see `error_category`).\n\n"
               if m.errors else "") +
            f"Command: `{command}` - {time.strftime('%Y-%m-%d')}, {machine()}; "
            f"routing {m.n} questions took {m.seconds}s.\n")


def metrics_json(m: RouteMetrics) -> str:
    d = asdict(m)
    return json.dumps({k: d[k] for k in ("r1", "r2", "r3", "map", "n", "shortlist_recall", "p50_ms", "p95_ms",
                                         "shortlist_r1", "shortlist_r2", "shortlist_r3", "shortlist_map", "shortlist_k",
                                         "implied_edge_wins", "errors", "setting",
                                         "benchmark")})
