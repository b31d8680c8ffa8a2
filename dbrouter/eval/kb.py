"""Evaluation knowledge bases: build one from a benchmark's schemas and examples, count what the
build embedded, and time ``route_query`` on it."""

from __future__ import annotations

import json
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np

from dbrouter.connection import Connection
from dbrouter.console import err
from dbrouter.errors import DbtRunError
from dbrouter.eval.benchmark import Question
from dbrouter.kb.build import build_atomically
from dbrouter.kb.dbt_runner import target_path
from dbrouter.kb.ingest import IngestReport, print_issues
from dbrouter.sources.base import SourcesConfig, SourceSpec

Log = Callable[[str], None]
T = TypeVar("T")


@dataclass(frozen=True)
class BuildStats:
    """One build of an evaluation KB."""

    seconds: float
    embedded: int


def write_examples(questions: list[Question], path: Path) -> Path:
    """Write questions as an examples.jsonl source file.

    Args:
        questions: the examples (db_id, question, sql).
        path: the file to write (parents created).

    Returns:
        ``path``.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for q in questions:
            fh.write(json.dumps({"db_id": q.db_id, "question": q.question, "sql": q.sql}) + "\n")
    return path


def build_kb(databases: Path, examples: list[Question], warehouse: Path, embedder: str | None,
             log: Log = err, statements: Path | None = None) -> BuildStats:
    """Build the KB of a schema-only benchmark repository plus examples the way users do: the
    atomic build (:func:`dbrouter.kb.build.build_atomically`: ingest and ``dbt build`` on a copy,
    checked, then swapped in).

    Args:
        databases: a databases.jsonl file.
        examples: question/SQL examples to put in the KB.
        warehouse: the warehouse file (its embedding cache is reused between builds).
        embedder: embedder name.
        log: progress output.
        statements: a domain_statements.jsonl file to load too (optional).

    Returns:
        Wall seconds (ingest + dbt build) and the number of documents this build embedded.
    """
    started = time.time()
    ex_file = write_examples(examples, warehouse.parent / "examples.jsonl")
    config = SourcesConfig([SourceSpec("schema_json", databases)], examples=[ex_file],
                           statements=[statements] if statements else [])

    def ingested(report: IngestReport) -> None:
        log(report.summary())
        print_issues(report, limit=5)

    result = build_atomically(config, warehouse, embedder, progress=log, on_ingested=ingested, quiet=True)
    seconds = time.time() - started
    if result.unchanged:  # no dbt ran: run_results.json is the last build's
        log(f"nothing changed since the build of {result.since}: no dbt run ({seconds:.1f}s)")
        return BuildStats(seconds, 0)
    embedded = embedded_by_last_build(warehouse)
    log(f"dbt build done in {seconds:.1f}s, embedded {embedded} documents")
    return BuildStats(seconds, embedded)


def embedded_by_last_build(warehouse: Path) -> int:
    """How many documents the last ``dbt build`` on ``warehouse`` embedded.

    Exact: dbt's own invocation id of that build is read from ``run_results.json`` in the target
    folder :func:`dbrouter.kb.dbt_runner.run_dbt` uses, and the embedding cache rows stamped with it
    are counted (``kb_embedding_cache.invocation_id``). A build that embedded nothing counts 0,
    unlike "the latest invocation in the cache", which would be an earlier build's.

    Args:
        warehouse: the warehouse file the build wrote.

    Returns:
        The number of cache rows the build appended (0 when it did not run ``kb_embedding_cache``).

    Raises:
        DbtRunError: no run_results.json (no build ran with this warehouse).
    """
    import duckdb

    path = target_path(warehouse) / "run_results.json"
    try:
        results = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise DbtRunError(f"cannot read {path} ({exc}): run `dbt build` on {warehouse} first") from exc
    relation = next((r.get("relation_name") for r in results.get("results", [])
                     if r.get("unique_id", "").endswith(".kb_embedding_cache")), None)
    if not relation:
        return 0
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return int(con.execute(f"select count(*) from {relation} where invocation_id = ?",
                               [results["metadata"]["invocation_id"]]).fetchall()[0][0])
    finally:
        con.close()


def latency(con: Connection, questions: list[str], n: int = 200, seed: int = 0,
            function: str = "route_query") -> tuple[float, float]:
    """Warm p50/p95 of ``select route_query(?)`` (or another scalar routing macro).

    Args:
        con: connection from :func:`dbrouter.connect`.
        questions: question texts to sample from.
        n: how many to time (after 5 warm-up calls).
        seed: sampling seed.
        function: the macro to time: ``route_query``, ``route_query_udf`` or ``route_query_sql``.

    Returns:
        (p50 ms, p95 ms).
    """
    if function not in ("route_query", "route_query_udf", "route_query_sql"):
        raise ValueError(f"latency times route_query, route_query_udf or route_query_sql, not {function!r}")
    return timed(lambda q: con.execute(f"select {function}(?)", [q]).fetchall(), questions, n, seed)


@dataclass(frozen=True)
class PlainLatency:
    """The plain ``select route_query(?)`` of a :func:`dbrouter.connect` connection (held from its
    second question, :mod:`dbrouter.kb.held_sql`) against ``route_query_udf``, planned every time."""

    p50_ms: float
    p95_ms: float
    planned_p50_ms: float
    planned_p95_ms: float
    same: int  # sampled questions whose plain answer equals the planned one
    compared: int


def plain_latency(con: Connection, questions: list[str], n: int = 200, seed: int = 0) -> PlainLatency:
    """Warm p50/p95 of ``select route_query(?)`` and of ``select route_query_udf(?)`` on one sample.

    Args:
        con: connection from :func:`dbrouter.connect` (UDF path, read-only: its plain names held).
        questions: question texts to sample from.
        n: how many to time (after 5 warm-up calls), the same sample as :func:`latency`'s.
        seed: sampling seed.

    Returns:
        Both latencies and how many of the sampled questions got the same answer from both.
    """
    plain: dict[str, object] = {}
    planned: dict[str, object] = {}
    p50, p95 = timed(lambda q: plain.__setitem__(q, con.execute("select route_query(?)", [q]).fetchall()),
                     questions, n, seed)
    planned_p50, planned_p95 = timed(
        lambda q: planned.__setitem__(q, con.execute("select route_query_udf(?)", [q]).fetchall()), questions, n, seed)
    sample = timed_sample(questions, n, seed)[0]
    same = sum(1 for q in sample if q in plain and planned.get(q) == plain[q])
    return PlainLatency(p50, p95, planned_p50, planned_p95, same, len(sample))


def held_latency(con: Connection, questions: list[str], n: int = 200, seed: int = 0) -> tuple[float, float, int, int]:
    """Warm p50/p95 of :func:`dbrouter.route` (k=5) on one connection, which holds the routing query
    from its second question on (:mod:`dbrouter.kb.held`), and whether the held answers are the
    planned query's.

    Args:
        con: connection from :func:`dbrouter.connect` (UDF path).
        questions: question texts to sample from.
        n: how many to time (after 5 warm-up calls), the same sample as :func:`latency`'s.
        seed: sampling seed.

    Returns:
        (p50 ms, p95 ms, sampled questions whose held JSON equals ``route_query_json_udf``'s, questions
        held): the last is 0 when this connection is not held (a KB above
        :data:`dbrouter.kb.held.MAX_HELD_ROWS`).
    """
    from dbrouter.kb.held import held_route_json
    from dbrouter.routing.route import route

    p50, p95 = timed(lambda q: route(con, q, k=5), questions, n, seed)
    same = compared = 0
    for q in timed_sample(questions, n, seed)[0]:
        got = held_route_json(con, q, 5)
        if got is None:
            continue
        compared += 1
        same += got == con.execute("select route_query_json_udf(?, 5)", [q]).fetchall()[0][0]
    return p50, p95, same, compared


def again_latency(con: Connection, questions: list[str], n: int = 200, seed: int = 0) -> tuple[float, float]:
    """Warm p50/p95 of :func:`dbrouter.route` (k=5) on :func:`held_latency`'s sample asked again on
    the same connection: what a repeated question costs with the answers the connection kept
    (:mod:`dbrouter.kb.answers`). Call it after :func:`held_latency`.

    Args:
        con: the connection :func:`held_latency` timed.
        questions: the same question texts.
        n: the same sample size.
        seed: the same sampling seed.

    Returns:
        (p50 ms, p95 ms).
    """
    from dbrouter.routing.route import route

    return timed(lambda q: route(con, q, k=5), questions, n, seed)


def percentiles_ms(millis: list[float]) -> tuple[float, float]:
    """(p50, p95) of per-question milliseconds, interpolated, rounded to 0.1 ms; (0, 0) for none."""
    if not millis:
        return 0.0, 0.0
    return round(float(np.percentile(millis, 50)), 1), round(float(np.percentile(millis, 95)), 1)


def timed_sample(items: list[T], n: int = 200, seed: int = 0) -> tuple[list[T], list[T]]:
    """The items :func:`timed` times and the ones it warms up on.

    The warm-up items are 5 drawn after the timed ones (``random.sample`` draws one at a time: on
    the benchmarks' sizes the timed items are the ones timed before adr-0038), not the first timed
    ones: a held connection keeps its answers (:mod:`dbrouter.kb.answers`), and an item warmed then
    timed would be timed as a question asked again. With no more items than ``n``, the first 5
    timed ones warm up.

    Args:
        items: the items to sample from.
        n: how many to time.
        seed: sampling seed.

    Returns:
        (timed items, warm-up items).
    """
    drawn = random.Random(seed).sample(items, min(n + 5, len(items)))
    return drawn[:n], drawn[n:] or drawn[:5]


def timed(call: Callable[[T], object], items: list[T], n: int = 200, seed: int = 0) -> tuple[float, float]:
    """Warm p50/p95 of ``call`` over a fixed random sample of ``items``.

    Args:
        call: what to time, called with one item.
        items: the items to sample from.
        n: how many to time (after 5 untimed warm-up calls on other items, when there are more).
        seed: sampling seed.

    Returns:
        (p50 ms, p95 ms).
    """
    sample, warm = timed_sample(items, n, seed)
    for item in warm:
        call(item)
    times = []
    for item in sample:
        t = time.perf_counter()
        call(item)
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return statistics.median(times), times[max(0, int(round(0.95 * len(times))) - 1)]
