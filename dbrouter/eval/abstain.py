"""`dbrouter eval abstain`: how often ``route_query`` says "none of these" when no database of the
repository can answer, and what that costs on questions it can.

The KB is built without the cross-domain split's withheld databases (about 20%, fixed by
:func:`dbrouter.eval.benchmark.is_withheld`), with the train questions of the others as
examples. Test questions of withheld databases have no right answer in it (out of repository);
test questions of the kept databases do (in repository). Reported: the share of out-of-repository
questions refused, the share of in-repository questions refused, and in-repository R@1 without
and with abstention (a refused question counts as a miss).
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from dbrouter.console import err
from dbrouter.eval.benchmark import Benchmark, Question, is_withheld
from dbrouter.eval.kb import Log, build_kb
from dbrouter.eval.publish import Report
from dbrouter.kb.connect import connect
from dbrouter.routing.ranker import calibration_prefix


@dataclass
class AbstainMetrics:
    """Abstention on one benchmark."""

    benchmark: str
    n_out: int
    n_in: int
    out_refused: float
    in_refused: float
    in_r1: float
    in_r1_with_abstention: float
    threshold: float | None
    seconds: float
    path: str = "udf"
    floor: float | None = None
    kb_estimate_out_refused: float | None = None
    kb_estimate_in_refused: float | None = None


def databases_without_withheld(bench: Benchmark, path: Path) -> Path:
    """Write ``bench``'s databases.jsonl without the withheld databases to ``path``.

    Args:
        bench: the benchmark.
        path: the file to write (parents created).

    Returns:
        ``path``.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [line for line in bench.databases_file.read_text(encoding="utf-8").splitlines()
             if line.strip() and not is_withheld(json.loads(line)["db_id"])]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _route(con, q: Question) -> tuple[str | None, bool]:
    row = con.execute("select db_id, cast(evidence->>'abstain' as boolean) from route_query_ranked(?, 1)",
                      [q.question]).fetchone()
    return (row[0], bool(row[1])) if row else (None, True)


def eval_abstain(bench: Benchmark, workdir: Path, embedder: str | None, n_in: int = 1000,
                 limit: int | None = None, log: Log = err, paths: tuple[str, ...] = ("udf", "sql")
                 ) -> list[AbstainMetrics]:
    """Build the KB without the withheld databases and route both kinds of test questions on each path.

    Args:
        bench: the benchmark.
        workdir: where the evaluation warehouse lives.
        embedder: embedder name.
        n_in: how many in-repository test questions to route (a seeded sample).
        limit: route at most this many of each kind (smoke runs; not for reporting).
        log: progress output.
        paths: the route paths measured (``udf``: the embedder's vectors; ``sql``: the pure-SQL path).

    Returns:
        The metrics, one per path.
    """
    examples = [q for q in bench.train if not is_withheld(q.db_id)]
    outside = [q for q in bench.test if is_withheld(q.db_id)]
    inside = random.Random(0).sample([q for q in bench.test if not is_withheld(q.db_id)],
                                     min(n_in, sum(1 for q in bench.test if not is_withheld(q.db_id))))
    if limit:
        outside, inside = outside[:limit], inside[:limit]
    warehouse = workdir / "abstain" / "kb.duckdb"
    log(f"[{bench.name} / abstain] building KB without the withheld databases, {len(examples)} examples")
    build_kb(databases_without_withheld(bench, warehouse.parent / "databases.jsonl"), examples, warehouse,
             embedder, log)
    out_metrics = []
    for path in paths:
        con = connect(warehouse, embedder=embedder, route_path=path)
        started = time.time()
        try:
            threshold = _threshold(con)
            prefix = calibration_prefix(path)
            floor, est_out, est_in = con.execute(
                f"select {prefix}abstain_floor, {prefix}probes_out_refused, {prefix}probes_in_refused "
                "from kb_routing_calibration").fetchone()
            log(f"[{bench.name} / abstain] routing {len(outside)} + {len(inside)} questions ({path} path)")
            out = [_route(con, q) for q in outside]
            ins = [(_route(con, q), q.db_id) for q in inside]
        finally:
            con.close()
        n_o, n_i = max(len(out), 1), max(len(ins), 1)
        out_metrics.append(AbstainMetrics(
            benchmark=bench.name, n_out=len(out), n_in=len(ins),
            out_refused=round(sum(a for _, a in out) / n_o, 4),
            in_refused=round(sum(a for (_, a), _ in ins) / n_i, 4),
            in_r1=round(sum(d == g for (d, _), g in ins) / n_i, 4),
            in_r1_with_abstention=round(sum(d == g and not a for (d, a), g in ins) / n_i, 4),
            threshold=threshold, seconds=round(time.time() - started, 1), path=path,
            floor=None if floor is None else round(float(floor), 4),
            kb_estimate_out_refused=None if est_out is None else round(float(est_out), 4),
            kb_estimate_in_refused=None if est_in is None else round(float(est_in), 4)))
    return out_metrics


def _threshold(con) -> float | None:
    """The abstention threshold the route functions were built with (None: never abstain)."""
    text = con.execute("select route_abstain_below()").fetchone()[0]
    return None if text is None else float(text)


def abstain_report(levels: list[AbstainMetrics], command: str) -> Report:
    """The result as a :class:`Report` (block ``eval abstain <benchmark>``), a row per route path."""
    m0 = levels[0]
    rows = "".join(
        f"| {m.path} | {m.floor if m.floor is not None else 'none: ranker score < ' + str(m.threshold)} | {m.n_out} | "
        f"**{m.out_refused:.4f}** | {m.n_in} | {m.in_refused:.4f} | {m.in_r1:.4f} | **{m.in_r1_with_abstention:.4f}** | "
        f"{m.kb_estimate_out_refused} / {m.kb_estimate_in_refused} |\n" for m in levels)
    markdown = (
        f"#### eval abstain: {m0.benchmark}\n\n"
        "| path | KB floor (first-ranking score) | out-of-repository questions | refused | in-repository questions | "
        "refused | R@1 | R@1 with abstention | the KB's own estimate: out / in refused |\n"
        "|---|---|---|---|---|---|---|---|---|\n" + rows + "\n"
        "KB without the cross-domain split's withheld databases (their test questions are out of repository), train "
        "questions of the others as examples. The floor is the KB's own calibration (kb_routing_calibration: the "
        "0.02 quantile of its example questions' first-ranking scores for their own database, leave-one-out); the "
        "estimate is the share of its probes refused as if their database were missing / present.\n\n")
    text = "\n".join(
        f"{m.benchmark} abstain ({m.path} path, floor {m.floor}): out-of-repository refused {m.out_refused:.4f} "
        f"(n={m.n_out}); in-repository refused {m.in_refused:.4f}, R@1 {m.in_r1:.4f} -> {m.in_r1_with_abstention:.4f} "
        f"(n={m.n_in}); KB estimate {m.kb_estimate_out_refused} / {m.kb_estimate_in_refused}" for m in levels)
    return Report(key=f"eval abstain {m0.benchmark}", command=command, data={"paths": [asdict(m) for m in levels]},
                  markdown=markdown, note=f"routing took {sum(m.seconds for m in levels):.1f}s", text=text)
