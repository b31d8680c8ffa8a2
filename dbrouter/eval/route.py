"""`dbrouter eval route`: routing accuracy and speed on a benchmark's whole test split.

For a setting (in-domain / schema-only / cross-domain, see :mod:`dbrouter.eval.benchmark`) the
KB is built with that setting's examples and every test question goes through
``route_query_ranked_udf`` (path ``udf``: the connection of :func:`dbrouter.connect`) or
``route_query_ranked_sql`` (path ``sql``: a plain DuckDB connection that registered nothing): R@1/2/3/10 and mAP of the shortlist alone and after the re-rank, the
share of questions whose gold database is in the shortlist (the re-rank's ceiling), how many
top-1 decisions needed an implied join edge, and why each miss happened (:func:`error_category`).
Every routed question's re-ranked candidates and their signals are written beside the KB
(``<setting>.features.jsonl``) for the cross-benchmark check and the abstention analysis.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dbrouter.connection import Connection
from dbrouter.console import err
from dbrouter.eval import routed as routed_questions
from dbrouter.eval.benchmark import Benchmark, Question, setting_split
from dbrouter.eval.kb import Log, again_latency, build_kb, held_latency, latency, plain_latency
from dbrouter.eval.publish import Report
from dbrouter.kb.connect import ROUTE_PATHS, connect
from dbrouter.routing import ranker
from dbrouter.routing.evidence import RouteEvidence
from dbrouter.routing.route import default_shortlist_k

JSON_KEYS = ("r1", "r2", "r3", "map", "n", "shortlist_recall", "p50_ms", "p95_ms", "shortlist_r1", "shortlist_r2",
             "shortlist_r3", "shortlist_map", "shortlist_k", "implied_edge_wins", "errors", "setting", "benchmark", "path",
             "values", "held_p50_ms", "held_p95_ms", "held_same", "held_compared", "planned_p50_ms", "planned_p95_ms",
             "plain_same", "plain_compared", "again_p50_ms", "again_p95_ms")


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
        Metric name (``r1``, ``r2``, ``r3``, ``r10``, ``map``) -> value.
    """
    n = len(ranks) or 1
    hit = lambda k: sum(1 for r in ranks if r is not None and r <= k) / n  # noqa: E731
    return {"r1": hit(1), "r2": hit(2), "r3": hit(3), "r10": hit(10),
            "map": sum(1.0 / r for r in ranks if r) / n}


@dataclass(frozen=True)
class RankMetrics:
    """Recall at 1/2/3/10 and mAP of one ranking, rounded to 4 digits."""

    r1: float
    r2: float
    r3: float
    r10: float
    map: float

    @classmethod
    def of(cls, ranks: list[int | None]) -> RankMetrics:
        """The metrics of the gold ranks ``ranks`` (see :func:`route_metrics`)."""
        return cls(**{k: round(v, 4) for k, v in route_metrics(ranks).items()})


@dataclass
class RouteMetrics:
    """One setting's result: the final ranking, the shortlist alone, latency and the misses."""

    benchmark: str
    setting: str
    n: int
    final: RankMetrics
    shortlist: RankMetrics
    shortlist_k: int
    shortlist_recall: float
    p50_ms: float
    p95_ms: float
    seconds: float
    implied_edge_wins: int = 0
    reranked_changed: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    path: str = "udf"
    values: bool = False
    held_p50_ms: float | None = None
    held_p95_ms: float | None = None
    held_same: int = 0
    held_compared: int = 0
    planned_p50_ms: float | None = None  # route_query_udf, planned every question (UDF path only)
    planned_p95_ms: float | None = None
    plain_same: int = 0  # timed questions whose plain route_query answer equals the planned one
    plain_compared: int = 0
    again_p50_ms: float | None = None  # dbrouter.route() on the timed questions asked again (kept answers)
    again_p95_ms: float | None = None

    def to_json(self) -> dict:
        """The flat dict ``dbrouter eval route --json`` prints (keys :data:`JSON_KEYS`).

        Returns:
            ``r1`` ... ``map`` of the final ranking, ``shortlist_r1`` ... of the shortlist, and the rest.
        """
        flat = {**asdict(self), **asdict(self.final), **{f"shortlist_{k}": v for k, v in asdict(self.shortlist).items()}}
        return {k: flat[k] for k in JSON_KEYS}


@dataclass
class RoutedRanks:
    """Gold ranks of a routed question set: after the re-rank and in the shortlist alone."""

    final: list[int | None]
    shortlist: list[int | None]
    implied_edge_wins: int = 0
    changed: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    routed: list[routed_questions.RoutedQuestion] = field(default_factory=list)


def error_category(gold: RouteEvidence | None, top: RouteEvidence, weights: dict[str, float] | None = None) -> str:
    """Why the gold database lost the top rank (error analysis of the re-rank).

    Args:
        gold: the gold database's evidence (None when it was not ranked at all).
        top: the winner's evidence.
        weights: the ranker's weights (``route_ranker_weights()``); None reads the signals unweighted.

    Returns:
        ``not_in_shortlist`` (the re-rank never saw it) or ``lost_on_<signal>``: the signal whose
        weighted difference (winner minus gold) is largest, i.e. what decided the order.
    """
    if gold is None or not gold.reranked or not gold.signals or not top.signals:
        return "not_in_shortlist"
    w = weights or {}
    gap = {n: w.get(n, 1.0) * ((top.signals.get(n) or 0) - (gold.signals.get(n) or 0)) for n in top.signals}
    return "lost_on_" + max(sorted(gap), key=lambda n: gap[n])


def route_one(con: Connection, q: Question, out: RoutedRanks, path: str = "udf", depth: int = 10,
              weights: dict[str, float] | None = None) -> None:
    """Route one question through ``route_query_ranked_<path>`` and add its outcome to ``out``.

    Args:
        con: warehouse connection.
        q: the question with its gold database.
        out: updated with the gold ranks, the implied-edge count, the changed top-1, the miss
            category and the re-ranked candidates' signals (``out.routed``).
        path: ``udf`` or ``sql``.
        depth: the re-rank depth (candidates whose evidence carries signals).
        weights: the ranker's weights, for the miss category.
    """
    rows = con.execute("select db_id, shortlist_rank, case when rank = 1 or db_id = ? or shortlist_rank <= ? "
                       f"then evidence end from route_query_ranked_{_checked(path)}(?, 100000) order by rank",
                       [q.db_id, depth, q.question]).fetchall()
    out.final.append(rank_of([r[0] for r in rows], q.db_id))
    out.shortlist.append(rank_of([r[0] for r in sorted(rows, key=lambda r: r[1])], q.db_id))
    out.routed.append(routed_questions.RoutedQuestion(q.db_id, routed_questions.candidates_from_rows([r for r in rows if r[2]]),
                                            question=q.question))
    if not rows:
        return
    top = RouteEvidence.from_json(rows[0][2])
    out.implied_edge_wins += bool(top.needs_implied_edges)
    out.changed += rows[0][1] != 1
    if rows[0][0] != q.db_id:
        gold = next((RouteEvidence.from_json(r[2]) for r in rows if r[0] == q.db_id and r[2]), None)
        cat = error_category(gold, top, weights)
        out.errors[cat] = out.errors.get(cat, 0) + 1


def _checked(path: str) -> str:
    if path not in ROUTE_PATHS:
        raise ValueError(f"route path must be one of {', '.join(ROUTE_PATHS)}, got {path!r}")
    return path


def evaluate_routing(con: Connection, questions: list[Question], log: Log = err, path: str = "udf") -> RoutedRanks:
    """Route every question and collect the gold ranks.

    Args:
        con: warehouse connection.
        questions: questions with their gold database.
        log: progress output.
        path: ``udf`` or ``sql`` (which ``route_query_ranked_<path>`` answers).

    Returns:
        Gold ranks after the re-rank and in the shortlist (first ranking), how many top-1
        decisions needed an implied join edge, how many top-1s the re-rank changed, and the misses.
    """
    out = RoutedRanks([], [])
    started = time.time()
    depth = default_shortlist_k(con)
    weights = ranker.kb_weights(con)
    for i, q in enumerate(questions, 1):
        route_one(con, q, out, path, depth, weights)
        if i % 500 == 0 or i == len(questions):
            done, sl = route_metrics(out.final), route_metrics(out.shortlist)
            log(f"  routed {i}/{len(questions)} ({time.time() - started:.0f}s) R@1 so far {done['r1']:.4f} "
                f"(shortlist alone {sl['r1']:.4f})")
    return out


def open_for_path(warehouse: Path, embedder: str | None, path: str):
    """A connection that answers with ``path``: :func:`dbrouter.connect` for ``udf``, a plain
    read-only ``duckdb.connect`` that registered nothing for ``sql`` (what a DuckDB client gets).

    Args:
        warehouse: the KB file.
        embedder: embedder name (``udf`` only).
        path: ``udf`` or ``sql``.

    Returns:
        The open connection.
    """
    if _checked(path) == "udf":
        return connect(warehouse, embedder=embedder)
    import duckdb

    return duckdb.connect(str(warehouse), read_only=True)


def eval_route(bench: Benchmark, setting: str, workdir: Path, embedder: str | None,
               limit: int | None = None, log: Log = err, path: str = "udf", values: bool = False) -> RouteMetrics:
    """Build the KB for ``setting`` and route the setting's test questions.

    Args:
        bench: the benchmark.
        setting: in-domain / schema-only / cross-domain.
        workdir: where the evaluation warehouse lives (reused across settings).
        embedder: embedder name.
        limit: evaluate only the first ``limit`` questions (for smoke runs; not for reporting).
        log: progress output.
        path: ``udf`` (the UDF path) or ``sql`` (the pure-SQL path on a plain DuckDB connection).
        values: give the KB sample values read from the benchmark's SQL dumps (``sql/``).

    Returns:
        The metrics.
    """
    examples, questions = setting_split(bench, setting)
    databases = bench.databases_file
    if values:
        from dbrouter.eval.dumps import databases_with_samples

        databases, _ = databases_with_samples(bench.path, bench.databases_file, workdir / "databases_values.jsonl",
                                              workdir / "dumps", log=log)
    if limit:
        questions = questions[:limit]
    warehouse = workdir / "kb.duckdb"
    log(f"[{bench.name} / {setting}] building KB: {len(bench.db_ids)} databases, {len(examples)} examples")
    build_kb(databases, examples, warehouse, embedder, log)
    con = open_for_path(warehouse, embedder, path)
    try:
        started = time.time()
        log(f"[{bench.name} / {setting}] routing {len(questions)} test questions ({path} path)")
        ranks = evaluate_routing(con, questions, log, path)
        seconds = time.time() - started
        features = workdir / f"{setting}{'.sql' if path == 'sql' else ''}{'.values' if values else ''}.features.jsonl"
        routed_questions.save(ranks.routed, features)
        log(f"[{bench.name} / {setting}] candidates' signals written to {features}")
        texts = [q.question for q in questions]
        held, plain, again = (None, None, 0, 0), None, (None, None)
        if path == "udf":  # what a user's SQL gets: the plain name, held from its second question
            plain = plain_latency(con, texts)
            p50, p95 = plain.p50_ms, plain.p95_ms
            held = held_latency(con, texts)
            again = again_latency(con, texts) if held[3] else again
        else:
            p50, p95 = latency(con, texts, function="route_query_sql")
        depth = default_shortlist_k(con)
    finally:
        con.close()
    recall = sum(1 for r in ranks.shortlist if r is not None and r <= depth) / (len(ranks.shortlist) or 1)
    return RouteMetrics(
        benchmark=bench.name, setting=setting, n=len(questions),
        final=RankMetrics.of(ranks.final), shortlist=RankMetrics.of(ranks.shortlist),
        shortlist_k=depth, shortlist_recall=round(recall, 4), p50_ms=round(p50, 1), p95_ms=round(p95, 1),
        seconds=round(seconds, 1), implied_edge_wins=ranks.implied_edge_wins, reranked_changed=ranks.changed,
        errors=dict(sorted(ranks.errors.items())), path=path, values=values,
        held_p50_ms=None if held[0] is None else round(held[0], 1),
        held_p95_ms=None if held[1] is None else round(held[1], 1), held_same=held[2], held_compared=held[3],
        planned_p50_ms=None if plain is None else round(plain.planned_p50_ms, 1),
        planned_p95_ms=None if plain is None else round(plain.planned_p95_ms, 1),
        plain_same=0 if plain is None else plain.same, plain_compared=0 if plain is None else plain.compared,
        again_p50_ms=None if again[0] is None else round(again[0], 2),
        again_p95_ms=None if again[1] is None else round(again[1], 2))


def summary_line(m: RouteMetrics) -> str:
    """The one line ``dbrouter eval route`` prints per setting without ``--json``."""
    f, s = m.final, m.shortlist
    return (f"{m.benchmark} {m.setting}{' (pure-SQL path)' if m.path == 'sql' else ''}"
            f"{' (with sample values)' if m.values else ''}: n={m.n} R@1={f.r1:.4f} R@2={f.r2:.4f} R@3={f.r3:.4f} "
            f"R@10={f.r10:.4f} mAP={f.map:.4f} p50={m.p50_ms}ms p95={m.p95_ms}ms; shortlist alone "
            f"R@1={s.r1:.4f}, gold in top-{m.shortlist_k}={m.shortlist_recall:.4f}")


def held_line(m: RouteMetrics) -> str:
    """The sentence on :func:`dbrouter.route`'s latency with the routing query held (UDF path only).

    Args:
        m: the metrics.

    Returns:
        One paragraph, or "" for the pure-SQL path.
    """
    if m.held_p50_ms is None:
        return ""
    plain = ""
    if m.planned_p50_ms is not None:
        plain = (f"`select route_query(?)` on a `dbrouter.connect()` connection (the table's latency) is held from its "
                 f"second question: `route_query_udf`, planned for every question, p50 {m.planned_p50_ms} / p95 "
                 f"{m.planned_p95_ms} ms; the held answer equals the planned one for {m.plain_same} of "
                 f"{m.plain_compared} timed questions.\n\n")
    if not m.held_compared:
        return plain + (f"`dbrouter.route()` (the CLI, MCP and Python): p50 {m.held_p50_ms} / p95 {m.held_p95_ms} ms; "
                        "this KB is above the size the routing query is held at, so it is planned per question as "
                        "above.\n\n")
    again = ""
    if m.again_p50_ms is not None:
        again = (f" The same questions asked again on that connection, answered from the answers it kept: "
                 f"p50 {m.again_p50_ms} / p95 {m.again_p95_ms} ms.")
    return plain + (f"`dbrouter.route()` (the CLI, MCP and Python; the routing query held, planned once per connection): "
                    f"p50 {m.held_p50_ms} / p95 {m.held_p95_ms} ms; the held answer equals the planned query's for "
                    f"{m.held_same} of {m.held_compared} timed questions.{again}\n\n")


def route_report(m: RouteMetrics, command: str) -> Report:
    """The setting's result as a :class:`Report` (block ``eval route <benchmark> <setting>``).

    Args:
        m: the metrics.
        command: the command line to record.

    Returns:
        The report: JSON :meth:`RouteMetrics.to_json`, text :func:`summary_line`, the markdown table.
    """
    f, s = m.final, m.shortlist
    errors = (f"Why the gold database was not first ({sum(m.errors.values())} questions): "
              + ", ".join(f"{k} {v}" for k, v in m.errors.items()) + " (see `error_category`).\n\n"
              if m.errors else "")
    markdown = (
        f"#### eval route: {m.benchmark}, {m.setting}{', pure-SQL path' if m.path == 'sql' else ''}"
        f"{', with sample values from the SQL dumps' if m.values else ''}\n\n"
        f"| n | ranking | R@1 | R@2 | R@3 | R@10 | mAP | route_query p50 ms | p95 ms |\n"
        f"|---|---|---|---|---|---|---|---|---|\n"
        f"| {m.n} | shortlist alone | {s.r1:.4f} | {s.r2:.4f} | {s.r3:.4f} | "
        f"{m.shortlist_recall:.4f} (R@{m.shortlist_k}) | {s.map:.4f} | | |\n"
        f"| {m.n} | **after re-rank** | **{f.r1:.4f}** | {f.r2:.4f} | {f.r3:.4f} | {f.r10:.4f} | {f.map:.4f} | "
        f"{m.p50_ms} | {m.p95_ms} |\n\n"
        f"Gold database in the top-{m.shortlist_k} shortlist (the re-rank's ceiling): {m.shortlist_recall:.4f}. "
        f"The re-rank changed the top-1 for {m.reranked_changed} questions; {m.implied_edge_wins} top-1 "
        f"decisions needed an implied (non-declared) join edge for connectivity.\n\n{errors}")
    markdown += held_line(m)
    key = (f"eval route {m.benchmark} {m.setting}" + (" sql-path" if m.path == "sql" else "")
           + (" values" if m.values else ""))
    return Report(key=key, command=command, data=m.to_json(),
                  markdown=markdown, note=f"routing {m.n} questions took {m.seconds}s", text=summary_line(m))
