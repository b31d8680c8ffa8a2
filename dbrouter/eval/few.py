"""`dbrouter eval few`: do 1, 3 or 5 example questions per database help routing from the first one?

A team starts with a schema and teaches dbrouter a few questions per database. For each count k
(0 = schema only, then 1, 3, 5) the KB of every database of the benchmark is built with a seeded k
of each database's **train** questions as examples, and two kinds of question are routed on each
path (``udf``, ``sql``) through ``route_query_ranked`` (top 1, with the abstention flag):

- **test**: a seeded sample of the test split (the same sample for every k): R@1, and R@1 with
  abstention (a refused question counts as a miss). The target: never below schema-only (k = 0).
- **paraphrases**: for each stored example, the other train questions of its database with the
  same SQL (spider and BIRD give most SQL queries more than one wording) that were not stored
  themselves: the share routed to the example's database and not refused.

Evaluation only: nothing is chosen from these numbers.
"""

from __future__ import annotations

import random
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from dbrouter.console import err
from dbrouter.eval.abstain import route_top
from dbrouter.eval.benchmark import Benchmark, Question
from dbrouter.eval.kb import Log, build_kb
from dbrouter.eval.publish import Report
from dbrouter.kb.connect import connect

COUNTS = (0, 1, 3, 5)
"""Examples per database, in the order the KBs are built (one warehouse, its embedding cache reused)."""


@dataclass
class FewMetrics:
    """One count of examples per database on one path."""

    benchmark: str
    per_database: int
    path: str
    n_examples: int
    examples_trusted: bool
    n_test: int
    r1: float
    r1_with_abstention: float
    refused: float
    n_paraphrases: int
    paraphrases_routed: float | None
    seconds: float


def _sql_key(sql: str) -> str:
    return re.sub(r"\s+", " ", sql.strip().rstrip(";").lower())


def choose_examples(bench: Benchmark, k: int, seed: int = 0) -> list[Question]:
    """A seeded ``k`` train questions of each database (all of them when it has fewer).

    Args:
        bench: the benchmark.
        k: examples per database.
        seed: the random seed (one per count, so 3 is not a superset of 1 by construction).

    Returns:
        The examples, databases in the benchmark's order.
    """
    by_db: dict[str, list[Question]] = {}
    for q in bench.train:
        by_db.setdefault(q.db_id, []).append(q)
    rng = random.Random(seed)
    return [q for db in bench.db_ids for q in rng.sample(by_db.get(db, []), min(k, len(by_db.get(db, []))))]


def paraphrases_of(bench: Benchmark, examples: list[Question], limit: int, seed: int = 0) -> list[Question]:
    """Train questions with a stored example's database and SQL but other words, not stored themselves.

    Args:
        bench: the benchmark.
        examples: the stored examples.
        limit: at most this many (a seeded sample).
        seed: the sample's seed.

    Returns:
        The paraphrases, each with the example's database as its gold.
    """
    stored = {q.question.strip().lower() for q in examples}
    keys = {(q.db_id, _sql_key(q.sql)) for q in examples}
    found = [q for q in bench.train
             if (q.db_id, _sql_key(q.sql)) in keys and q.question.strip().lower() not in stored]
    return random.Random(seed).sample(found, min(limit, len(found)))


def eval_few(bench: Benchmark, workdir: Path, embedder: str | None, n_test: int = 500, n_paraphrases: int = 500,
             counts: tuple[int, ...] = COUNTS, paths: tuple[str, ...] = ("udf", "sql"), limit: int | None = None,
             log: Log = err) -> list[FewMetrics]:
    """Build the KB with each count of examples per database and route on each path.

    Args:
        bench: the benchmark.
        workdir: where the warehouse lives (rebuilt per count; its embedding cache is reused).
        embedder: embedder name.
        n_test: test questions routed per KB (a seeded sample, the same for every count).
        n_paraphrases: paraphrases of the stored examples routed per KB (at most; seeded).
        counts: examples per database, one KB each.
        paths: route paths measured.
        limit: route at most this many of each kind (smoke runs; not for reporting).
        log: progress output.

    Returns:
        One :class:`FewMetrics` per count and path.
    """
    test = random.Random(0).sample(bench.test, min(n_test, len(bench.test)))
    if limit:
        test = test[:limit]
    warehouse = workdir / "few" / "kb.duckdb"
    out = []
    for k in counts:
        examples = choose_examples(bench, k, seed=k)
        paraphrases = paraphrases_of(bench, examples, limit or n_paraphrases, seed=k)
        log(f"[{bench.name} / few] {k} per database: building with {len(examples)} examples")
        build_kb(bench.databases_file, examples, warehouse, embedder, log)
        for path in paths:
            log(f"[{bench.name} / few] {k} per database, {path} path: routing {len(test)} + {len(paraphrases)}")
            out.append(_measure(bench, warehouse, embedder, path, k, len(examples), test, paraphrases))
            log(f"  R@1 {out[-1].r1:.4f} -> {out[-1].r1_with_abstention:.4f} with abstention; paraphrases "
                f"{out[-1].paraphrases_routed}")
    return out


def _measure(bench: Benchmark, warehouse: Path, embedder: str | None, path: str, k: int, n_examples: int,
             test: list[Question], paraphrases: list[Question]) -> FewMetrics:
    con = connect(warehouse, embedder=embedder, route_path=path)
    started = time.time()
    try:
        prefix = "static_" if path == "sql" else ""
        trusted = con.execute(f"select {prefix}examples_trusted from kb_routing_calibration").fetchone()[0]
        tested = [(route_top(con, q.question)[:2], q.db_id) for q in test]
        para = [(route_top(con, q.question)[:2], q.db_id) for q in paraphrases]
    finally:
        con.close()
    n = max(len(tested), 1)
    return FewMetrics(
        benchmark=bench.name, per_database=k, path=path, n_examples=n_examples, examples_trusted=bool(trusted),
        n_test=len(tested), r1=round(sum(d == g for (d, _), g in tested) / n, 4),
        r1_with_abstention=round(sum(d == g and not a for (d, a), g in tested) / n, 4),
        refused=round(sum(a for (_, a), _ in tested) / n, 4), n_paraphrases=len(para),
        paraphrases_routed=round(sum(d == g and not a for (d, a), g in para) / len(para), 4) if para else None,
        seconds=round(time.time() - started, 1))


def few_report(levels: list[FewMetrics], command: str) -> Report:
    """The result as a :class:`Report` (block ``eval few <benchmark>``), a row per count and path.

    Args:
        levels: :func:`eval_few`'s metrics.
        command: the command line to record.

    Returns:
        The report.
    """
    base = {m.path: m.r1 for m in levels if m.per_database == 0}
    rows = "".join(
        f"| {m.per_database} | {m.path} | {m.n_examples} | {'yes' if m.examples_trusted else 'no'} | "
        f"**{m.r1:.4f}** ({m.r1 - base.get(m.path, m.r1):+.4f}) | {m.r1_with_abstention:.4f} | {m.refused:.4f} | "
        + (f"**{m.paraphrases_routed:.4f}** (n={m.n_paraphrases})" if m.paraphrases_routed is not None else "-")
        + " |\n" for m in levels)
    n = levels[0].n_test if levels else 0
    markdown = (
        f"#### eval few: {levels[0].benchmark if levels else ''}\n\n"
        "| examples per database | path | examples | trusted (leave-one-out) | R@1 (vs schema only) | "
        "R@1 with abstention | refused | stored questions' paraphrases routed there |\n"
        "|---|---|---|---|---|---|---|---|\n" + rows + "\n"
        f"A seeded k of each database's train questions are the KB's examples; {n} seeded test questions (the same "
        "for every k); paraphrases: the other train questions of a stored example's database with the same SQL, "
        "routed first and not refused.\n\n")
    text = "\n".join(
        f"{m.benchmark} few ({m.per_database} per database, {m.path}, {m.n_examples} examples, trusted "
        f"{m.examples_trusted}): R@1 {m.r1:.4f} -> {m.r1_with_abstention:.4f} with abstention (refused {m.refused:.4f}, "
        f"n={m.n_test}); paraphrases routed {m.paraphrases_routed} (n={m.n_paraphrases})" for m in levels)
    return Report(key=f"eval few {levels[0].benchmark if levels else ''}", command=command,
                  data={"levels": [asdict(m) for m in levels]}, markdown=markdown,
                  note=f"routing took {sum(m.seconds for m in levels):.1f}s", text=text)
