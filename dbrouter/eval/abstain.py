"""`dbrouter eval abstain`: how often ``route_query`` says "none of these" when no database of the
repository can answer, and what that costs on questions it can.

The KB is built without the cross-domain split's withheld databases (about 20%, fixed by
:func:`dbrouter.eval.benchmark.is_withheld`), with the train questions of the others as
examples. Test questions of withheld databases have no right answer in it (out of repository,
the near-domain test); test questions of the kept databases do (in repository); the off-topic
questions of :mod:`dbrouter.eval.offtopic` (a public corpus and gibberish, never the KB's own
probes) answer nothing in any repository. A second KB of the same databases without any example
(what a team has on its first build) is asked the off-topic questions and a sample of the
in-repository ones. Reported per KB and path: the shares refused of each kind, and in-repository
R@1 without and with abstention (a refused question counts as a miss).
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from dbrouter.connection import Connection
from dbrouter.console import err
from dbrouter.eval.benchmark import Benchmark, Question, is_withheld
from dbrouter.eval.kb import Log, build_kb
from dbrouter.eval.offtopic import offtopic_questions
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
    kb: str = "examples"
    n_off: int = 0
    off_refused: float | None = None
    offtopic_floor: float | None = None
    off_refused_by_vocabulary: float | None = None
    off_refused_by_intent: float | None = None


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


def route_top(con: Connection, question: str) -> tuple[str | None, bool, str | None]:
    """The first-ranked database of ``route_query_ranked``, whether it abstained, and the test that refused.

    Args:
        con: a KB connection on the path to measure.
        question: the question.

    Returns:
        ``(db_id, abstained, abstain_test)``; ``(None, True, None)`` when nothing is ranked.
    """
    row = con.execute("select db_id, cast(evidence->>'abstain' as boolean), evidence->>'abstain_test' "
                      "from route_query_ranked(?, 1)", [question]).fetchone()
    return (row[0], bool(row[1]), row[2]) if row else (None, True, None)


def _share(flags: list[bool]) -> float | None:
    return round(sum(flags) / len(flags), 4) if flags else None


def eval_abstain(bench: Benchmark, workdir: Path, embedder: str | None, n_in: int = 1000,
                 limit: int | None = None, log: Log = err, paths: tuple[str, ...] = ("udf", "sql"),
                 n_in_schema_only: int = 300) -> list[AbstainMetrics]:
    """Build the two KBs and route every kind of question on each path.

    Args:
        bench: the benchmark.
        workdir: where the evaluation warehouses live.
        embedder: embedder name.
        n_in: how many in-repository test questions to route on the KB with examples (a seeded sample).
        limit: route at most this many of each kind (smoke runs; not for reporting).
        log: progress output.
        paths: the route paths measured (``udf``: the embedder's vectors; ``sql``: the pure-SQL path).
        n_in_schema_only: how many of those the KB without examples routes.

    Returns:
        The metrics, one per KB and path.
    """
    examples = [q for q in bench.train if not is_withheld(q.db_id)]
    outside = [q for q in bench.test if is_withheld(q.db_id)]
    inside = random.Random(0).sample([q for q in bench.test if not is_withheld(q.db_id)],
                                     min(n_in, sum(1 for q in bench.test if not is_withheld(q.db_id))))
    offtopic = [text for _, text in offtopic_questions()]
    if limit:
        outside, inside, offtopic = outside[:limit], inside[:limit], offtopic[:limit]
    kbs = (("examples", examples, outside, inside), ("schema-only", [], [], inside[:n_in_schema_only]))
    for kb, kb_examples, _, _ in kbs:  # both built before any routing: a run is one code version
        warehouse = workdir / _KB_DIRS[kb] / "kb.duckdb"
        log(f"[{bench.name} / abstain] building KB without the withheld databases, {len(kb_examples)} examples")
        build_kb(databases_without_withheld(bench, warehouse.parent / "databases.jsonl"), kb_examples, warehouse,
                 embedder, log)
    return [_measure(bench, workdir / _KB_DIRS[kb] / "kb.duckdb", embedder, path, kb, kb_outside, kb_inside,
                     offtopic, log)
            for kb, _, kb_outside, kb_inside in kbs for path in paths]


_KB_DIRS = {"examples": "abstain", "schema-only": "abstain-schema-only"}


def _measure(bench: Benchmark, warehouse: Path, embedder: str | None, path: str, kb: str,
             outside: list[Question], inside: list[Question], offtopic: list[str], log: Log) -> AbstainMetrics:
    con = connect(warehouse, embedder=embedder, route_path=path)
    started = time.time()
    try:
        threshold = _threshold(con)
        prefix = calibration_prefix(path)
        floor, est_out, est_in, off_floor = con.execute(
            f"select {prefix}abstain_floor, {prefix}probes_out_refused, {prefix}probes_in_refused, "
            f"{prefix}offtopic_floor from kb_routing_calibration").fetchone()
        log(f"[{bench.name} / abstain, {kb}] routing {len(outside)} + {len(inside)} + {len(offtopic)} questions "
            f"({path} path)")
        out = [route_top(con, q.question) for q in outside]
        ins = [(route_top(con, q.question), q.db_id) for q in inside]
        off = [route_top(con, q) for q in offtopic]
    finally:
        con.close()
    n_i = max(len(ins), 1)
    return AbstainMetrics(
        benchmark=bench.name, n_out=len(out), n_in=len(ins),
        out_refused=_share([a for _, a, _ in out]) or 0.0,
        in_refused=round(sum(a for (_, a, _), _ in ins) / n_i, 4),
        in_r1=round(sum(d == g for (d, _, _), g in ins) / n_i, 4),
        in_r1_with_abstention=round(sum(d == g and not a for (d, a, _), g in ins) / n_i, 4),
        threshold=threshold, seconds=round(time.time() - started, 1), path=path,
        floor=None if floor is None else round(float(floor), 4),
        kb_estimate_out_refused=None if est_out is None else round(float(est_out), 4),
        kb_estimate_in_refused=None if est_in is None else round(float(est_in), 4),
        kb=kb, n_off=len(off), off_refused=_share([a for _, a, _ in off]),
        offtopic_floor=None if off_floor is None else round(float(off_floor), 4),
        off_refused_by_vocabulary=_share([t == "vocabulary" for _, _, t in off]),
        off_refused_by_intent=_share([t == "intent" for _, _, t in off]))


def _threshold(con: Connection) -> float | None:
    """The abstention threshold the route functions were built with (None: never abstain)."""
    text = con.execute("select route_abstain_below()").fetchone()[0]
    return None if text is None else float(text)


def abstain_report(levels: list[AbstainMetrics], command: str) -> Report:
    """The result as a :class:`Report` (block ``eval abstain <benchmark>``), a row per KB and route path."""
    m0 = levels[0]

    def floor(m: AbstainMetrics) -> str:
        if m.floor is not None:
            return f"examples {m.floor}"
        return f"off-topic {m.offtopic_floor}" if m.offtopic_floor is not None else f"ranker score < {m.threshold}"

    def cell(share: float | None, n: int) -> str:
        return f"**{share:.4f}** (n={n})" if share is not None and n else "-"

    rows = "".join(
        f"| {m.kb} | {m.path} | {floor(m)} | {cell(m.off_refused, m.n_off)} | "
        f"{m.off_refused_by_vocabulary if m.off_refused_by_vocabulary is not None else '-'} / "
        f"{m.off_refused_by_intent if m.off_refused_by_intent is not None else '-'} | "
        f"{cell(m.out_refused, m.n_out)} | {m.in_refused:.4f} (n={m.n_in}) | {m.in_r1:.4f} | "
        f"**{m.in_r1_with_abstention:.4f}** | {m.kb_estimate_out_refused} / {m.kb_estimate_in_refused} |\n"
        for m in levels)
    markdown = (
        f"#### eval abstain: {m0.benchmark}\n\n"
        "| KB | path | floor (first-ranking score) | off-topic refused | of them by vocabulary / intent | out-of-repository "
        "refused | in-repository refused | R@1 | R@1 with abstention | the KB's own estimate: out / in refused |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n" + rows + "\n"
        "Both KBs lack the cross-domain split's withheld databases (their test questions are out of repository); "
        "'examples' has the train questions of the others as examples, 'schema-only' none. Off-topic: "
        "dbrouter/eval/offtopic.py (chatterbot-corpus opening lines and gibberish, never the KB's probes). The "
        "floor is the KB's own calibration (kb_routing_calibration): with 50 or more examples the 0.02 quantile "
        "of its example questions' first-ranking scores for their own database (leave-one-out), otherwise the "
        "median best score of the seed offtopic_probes, which the intent probe replaces where it has weights for "
        "the embedder (MiniLM, the static model); every KB also refuses a question none of whose words its "
        "vocabulary knows. The estimate is the share of its example probes refused as if their database were "
        "missing / present.\n\n")
    text = "\n".join(
        f"{m.benchmark} abstain ({m.kb} KB, {m.path} path, {floor(m)}): off-topic refused {m.off_refused} "
        f"(n={m.n_off}); out-of-repository refused {m.out_refused:.4f} (n={m.n_out}); in-repository refused "
        f"{m.in_refused:.4f}, R@1 {m.in_r1:.4f} -> {m.in_r1_with_abstention:.4f} (n={m.n_in}); KB estimate "
        f"{m.kb_estimate_out_refused} / {m.kb_estimate_in_refused}" for m in levels)
    return Report(key=f"eval abstain {m0.benchmark}", command=command, data={"paths": [asdict(m) for m in levels]},
                  markdown=markdown, note=f"routing took {sum(m.seconds for m in levels):.1f}s", text=text)
