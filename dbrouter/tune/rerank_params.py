"""Choose the re-rank's constants on TRAIN questions only (how the dbt vars were set).

Usage:
    python -m dbrouter.tune.rerank_params --benchmark ../shared/benchmarks/spider-route \
        [--workdir .dbrouter/tune] [--n 800] [--thresholds 0.4,0.5,0.6]

Since issue 13 the re-rank orders candidates with a learned ranker (python -m dbrouter.tune.ranker);
this sweep still chose dbrouter__phrase_threshold and dbrouter__coverage_penalty, and its "alpha"
(the old tie-break's shortlist weight) has no var any more: it is kept to reproduce the issue-4
table of BENCHMARKS.md (it orders by the evidence's coverage, connectivity and semantic score).

Nothing from the test split is read. The train questions of every database are split 50/50
(seeded): half A goes into the knowledge base as examples, a sample of half B is routed. Two
KBs are built: *schema-only* (no examples) and *in-domain* (examples = A). For each phrase
threshold (a dbt var: the route functions are rebuilt with it) every routed question's top
`dbrouter__shortlist_k` candidates are scored by ``route_query_ranked``; the coverage penalty n
and the tie-break's shortlist weight are then varied offline from the returned evidence
(coverage = exp(-n * N_NA / N) is recomputed from the phrase counts). Prints R@1 per setting
and their mean for every combination; the vars in dbt_project.yml are the best mean.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path

from dbrouter.eval.benchmark import load_benchmark, split_train
from dbrouter.eval.kb import build_kb
from dbrouter.kb.connect import connect
from dbrouter.kb.dbt_runner import run_dbt
from dbrouter.routing.evidence import RouteEvidence

Candidate = tuple[str, float, RouteEvidence]  # db_id, shortlist score, evidence


def candidates(warehouse: Path, questions, depth: int) -> list[tuple[str, list[Candidate]]]:
    """Per question: its gold db_id and the top ``depth`` candidates of ``route_query_ranked``."""
    con = connect(warehouse)
    out = []
    try:
        for q in questions:
            rows = con.execute("select db_id, score, evidence from route_query_ranked(?, ?)",
                               [q.question, depth]).fetchall()
            out.append((q.db_id, [(d, s, RouteEvidence.from_json(e)) for d, s, e in rows]))
    finally:
        con.close()
    return out


def r_at_1(data, n: float, alpha: float) -> float:
    """R@1 when coverage uses penalty ``n`` and the tie-break weighs the shortlist score by ``alpha``."""
    def key(c: Candidate):
        _, score, ev = c
        phrases, na = ev.phrases or 0, ev.na_phrases or 0
        cov = 1.0 if not phrases else math.exp(-n * na / phrases)
        return (round(cov * (ev.connectivity or 0), 6), (ev.semantic_score or 0) + alpha * score)

    hits = 0
    for gold, cands in data:
        best = max(cands, key=key) if cands else None
        hits += bool(best) and best[0] == gold
    return hits / max(len(data), 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--benchmark", required=True)
    ap.add_argument("--workdir", default=".dbrouter/tune")
    ap.add_argument("--n", type=int, default=800, help="routed train questions")
    ap.add_argument("--thresholds", default="0.4,0.5,0.6")
    ap.add_argument("--depth", type=int, default=10)
    ap.add_argument("--embedder", default="minilm")
    args = ap.parse_args()
    bench = load_benchmark(args.benchmark)
    examples, held = split_train(bench)
    routed = random.Random(1).sample(held, min(args.n, len(held)))
    work = Path(args.workdir) / bench.name
    kbs = {"schema-only": (work / "schema" / "kb.duckdb", []), "in-domain": (work / "indomain" / "kb.duckdb", examples)}
    for wh, ex in kbs.values():
        wh.parent.mkdir(parents=True, exist_ok=True)
        build_kb(bench.databases_file, ex, wh, args.embedder)
    results = []
    for tau in [float(t) for t in args.thresholds.split(",")]:
        data = {}
        for setting, (wh, _) in kbs.items():
            run_dbt(["build", "--select", "kb_column_phrases", "--vars",
                     json.dumps({"dbrouter__phrase_threshold": tau,
                                 "dbrouter__shortlist_k": args.depth})], wh, args.embedder, quiet=True)
            data[setting] = candidates(wh, routed, args.depth)
        for n in (1, 2, 4):
            for alpha in (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 1000.0):
                r = {s: r_at_1(d, n, alpha) for s, d in data.items()}
                results.append((sum(r.values()) / len(r), tau, n, alpha, r))
                print(f"tau {tau} n {n} alpha {alpha:>6}: " + "  ".join(f"{s} {v:.4f}" for s, v in r.items())
                      + f"  mean {results[-1][0]:.4f}", flush=True)
    best = max(results, key=lambda x: x[0])
    print(f"best (mean R@1 {best[0]:.4f}): dbrouter__phrase_threshold {best[1]}, dbrouter__coverage_penalty "
          f"{best[2]}, tie-break shortlist weight {best[3]} -> {best[4]}")
    shortlist = {s: sum(bool(c) and max(c, key=lambda x: x[1])[0] == g for g, c in d) / max(len(d), 1)
                 for s, d in data.items()}
    print(f"shortlist alone on the same questions: {shortlist}")


if __name__ == "__main__":
    main()
