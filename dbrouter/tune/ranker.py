"""Fit the re-rank's learned ranker (var dbrouter__ranker_weights) on the benchmarks' TRAIN splits only.

    python -m dbrouter.tune.ranker --benchmark ../shared/benchmarks/spider-route \
        --benchmark ../shared/benchmarks/bird-route-train [--workdir .dbrouter/ranker] [--n 600] [--write]

Nothing from a test split is read. Each database's train questions are split 50/50 (seeded):
half A may become stored examples, questions of half B are routed. Four train KBs per benchmark
mirror the evaluation settings plus the case a new user meets first:

  schema-only   no examples; B questions routed
  in-domain     examples = A; B questions routed
  cross-domain  examples = A of the databases the cross-domain split keeps; B questions of the
                withheld databases routed
  sparse        examples = 3 A questions of each of 10% of the databases (seeded); B questions
                routed: a KB where only a few databases have a few examples

Every routed question's shortlisted candidates and their signals (``route_query_ranked``'s
evidence) are cached as JSON lines under the workdir (``--reuse`` reads them back). The
conditional logit (dbrouter.tune.fitting.fit) is fitted on all settings of all given benchmarks
pooled, each setting weighing the same; the script prints train R@1 of the method's order
(coverage x connectivity, then semantic score) and of the ranker per setting, the same for a
fit on each benchmark alone applied to the other (the cross-benchmark check), and with
``--write`` writes the weights (and the threshold) into the generated macros/tuned/fitted_ranker.sql.

``--abstention`` builds one more train KB per benchmark without the cross-domain split's
withheld databases and routes B questions of both kinds: those of withheld databases have no
right answer in it. The abstention threshold (var dbrouter__abstain_below) is the highest
first-candidate ranker score whose refusals cost the in-repository train questions at most
``--abstention-cost`` R@1.
"""

from __future__ import annotations

import argparse
import random
import re
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the checkout: what --write updates

from dbrouter.eval import routed as routed_questions
from dbrouter.eval.abstain import databases_without_withheld
from dbrouter.eval.benchmark import is_withheld, load_benchmark, split_train
from dbrouter.eval.kb import build_kb
from dbrouter.kb.connect import connect
from dbrouter.tune import fitting

SPARSE_SHARE, SPARSE_EXAMPLES = 0.1, 3


def train_settings(bench, n: int, seed: int = 0) -> dict:
    """Setting -> (examples, routed questions), all from the train split."""
    a, b = split_train(bench, seed)
    rng = random.Random(seed + 1)
    sample = lambda qs: rng.sample(qs, min(n, len(qs)))  # noqa: E731
    dbs = sorted({q.db_id for q in bench.train})
    sparse_dbs = set(random.Random(seed + 2).sample(dbs, max(1, int(round(SPARSE_SHARE * len(dbs))))))
    sparse, seen = [], {}
    for q in a:
        if q.db_id in sparse_dbs and seen.get(q.db_id, 0) < SPARSE_EXAMPLES:
            sparse.append(q)
            seen[q.db_id] = seen.get(q.db_id, 0) + 1
    return {
        "schema-only": ([], sample(b)),
        "in-domain": (a, sample(b)),
        "cross-domain": ([q for q in a if not is_withheld(q.db_id)], sample([q for q in b if is_withheld(q.db_id)])),
        "sparse": (sparse, sample(b)),
    }


def augment(routed: list, examples, n_databases: int) -> list:
    """Fill the signals a cached features file predates (lex_example, shortlist, has_examples) the
    way route_signals_step computes them (:func:`dbrouter.tune.fitting.example_word_share`, the shortlist
    score, whether the database has examples; tests/functional/test_ranker_signals.py checks the
    SQL against it). Signals already present (files written by the current route functions) stay."""
    pairs = [(q.db_id, q.question) for q in examples]
    has = {db for db, _ in pairs}
    for q in routed:
        share = None
        for c in q.candidates:
            if "lex_example" not in c.signals:
                share = share if share is not None else fitting.example_word_share(q.question, pairs, n_databases)
                c.signals["lex_example"] = share.get(c.db_id, 0.0)
            c.signals.setdefault("shortlist", c.shortlist_score)
            c.signals.setdefault("has_examples", 1.0 if c.db_id in has else 0.0)
    return routed


def route_all(warehouse: Path, questions, setting: str, embedder: str | None) -> list[routed_questions.RoutedQuestion]:
    """Route ``questions`` and keep every re-ranked candidate's signals."""

    con = connect(warehouse, embedder=embedder)
    out, started = [], time.time()
    try:
        depth = con.execute("select route_shortlist_k()").fetchone()[0]
        for i, q in enumerate(questions, 1):
            rows = con.execute("select db_id, shortlist_rank, evidence from route_query_ranked(?, ?)",
                               [q.question, depth]).fetchall()
            out.append(routed_questions.RoutedQuestion(q.db_id, routed_questions.candidates_from_rows(rows), setting, q.question))
            if i % 200 == 0:
                print(f"    routed {i}/{len(questions)} ({time.time() - started:.0f}s)", flush=True)
    finally:
        con.close()
    return out


def collect(bench_path: str, workdir: Path, n: int, embedder: str | None, reuse: bool) -> dict[str, list]:
    """Routed train questions per setting of one benchmark (cached under ``workdir``)."""
    bench = load_benchmark(bench_path)
    out = {}
    for setting, (examples, questions) in train_settings(bench, n).items():
        cache = workdir / bench.name / f"{setting}.jsonl"
        if reuse and cache.is_file():
            out[setting] = augment(routed_questions.load(cache), examples, len(bench.db_ids))
            continue
        print(f"[{bench.name} / {setting}] train KB with {len(examples)} examples, routing {len(questions)}", flush=True)
        warehouse = workdir / bench.name / "kb.duckdb"
        build_kb(bench.databases_file, examples, warehouse, embedder, log=lambda m: None)
        out[setting] = route_all(warehouse, questions, setting, embedder)
        routed_questions.save(out[setting], cache)
    return out


def collect_abstention(bench_path: str, workdir: Path, n: int, embedder: str | None, reuse: bool) -> list:
    """Train questions routed against a train KB without the withheld databases: setting ``in``
    (a database of the KB) or ``out`` (a withheld database: no right answer exists)."""
    bench = load_benchmark(bench_path)
    cache = workdir / bench.name / "abstention.jsonl"
    a, b = split_train(bench)
    kept = [d for d in bench.db_ids if not is_withheld(d)]
    if reuse and cache.is_file():
        return augment(routed_questions.load(cache), [q for q in a if not is_withheld(q.db_id)], len(kept))
    rng = random.Random(3)
    inside = [q for q in b if not is_withheld(q.db_id)]
    outside = [q for q in b if is_withheld(q.db_id)]
    examples = [q for q in a if not is_withheld(q.db_id)]
    warehouse = workdir / bench.name / "holdout" / "kb.duckdb"
    print(f"[{bench.name} / abstention] train KB without the withheld databases, {len(examples)} examples", flush=True)
    build_kb(databases_without_withheld(bench, warehouse.parent / "databases.jsonl"), examples, warehouse, embedder,
             log=lambda m: None)
    routed = (route_all(warehouse, rng.sample(inside, min(n, len(inside))), "in", embedder)
              + route_all(warehouse, rng.sample(outside, min(n, len(outside))), "out", embedder))
    routed_questions.save(routed, cache)
    return routed


def choose_abstention(routed: list, weights: dict[str, float], max_cost: float) -> float | None:
    """The highest threshold on the first candidate's ranker score whose refusals cost the
    in-repository questions at most ``max_cost`` R@1; prints the curve."""
    import numpy as np

    inside = [q for q in routed if q.setting == "in" and q.candidates]
    outside = [q for q in routed if q.setting == "out" and q.candidates]
    top = lambda q: float(np.max(fitting.score(q, weights)))  # noqa: E731
    base = fitting.r_at_1(inside, weights)
    best = None
    for theta in sorted({round(top(q), 2) for q in inside + outside}):
        kept = sum(fitting.top1(q, weights) == q.gold and top(q) >= theta for q in inside) / max(len(inside), 1)
        refused = sum(top(q) < theta for q in outside) / max(len(outside), 1)
        if base - kept <= max_cost:
            best = (theta, kept, refused)
    if best:
        print(f"abstention on train: below {best[0]} -> out-of-repository refused {best[2]:.4f}, "
              f"in-repository R@1 {base:.4f} -> {best[1]:.4f} (cost <= {max_cost})")
    return best[0] if best else None


def balanced_fit(data: dict[str, dict[str, list]], l2: float, names: tuple[str, ...] | None = None) -> dict[str, float]:
    """Fit on every (benchmark, setting) pooled, each weighing the same in total."""
    qs, gw = [], []
    for per_setting in data.values():
        for routed in per_setting.values():
            qs += routed
            gw += [1.0 / max(len(routed), 1)] * len(routed)
    return fitting.fit(qs, l2=l2, group_weights=gw, names=names)


def report(data: dict[str, dict[str, list]], weights: dict[str, float], label: str) -> None:
    """Print train R@1 of the method's order and of ``weights`` per (benchmark, setting)."""
    for name, per_setting in data.items():
        for setting, routed in per_setting.items():
            print(f"  {label:<28} {name:<18} {setting:<13} n={len(routed):<5} method order "
                  f"{fitting.r_at_1(routed, None):.4f}  ranker {fitting.r_at_1(routed, weights):.4f}", flush=True)


FITTED = "macros/tuned/fitted_ranker.sql"
"""The generated file the fit is written to (the defaults of the two vars, through get_var)."""


def fitted_macro(weights: dict[str, float], theta: float | None) -> str:
    """The text of :data:`FITTED` for ``weights`` and the abstention threshold ``theta``.

    Args:
        weights: signal -> weight.
        theta: the abstention threshold (None: never abstain).

    Returns:
        The macro file, marked generated.
    """
    value = {"weights": weights, "abstain_below": theta}
    jinja = repr(value).replace("None", "none")
    return ("{#- GENERATED by `python -m dbrouter.tune.ranker --write` (fitted on benchmark TRAIN splits only,\n"
            "    docs/decisions/adr-0004-routing-round-2-issue-13.md): do not edit. The defaults of vars dbrouter__ranker_weights and\n"
            "    dbrouter__abstain_below (macro get_var); a project that sets either var overrides it. -#}\n"
            "{% macro fitted_ranker() -%}\n"
            f"{{{{ return({jinja}) }}}}\n"
            "{%- endmacro %}\n")


def current_threshold() -> float | None:
    """The abstention threshold the generated file holds now."""
    import ast

    text = (ROOT / FITTED).read_text()
    found = re.search(r"'abstain_below': ([^}]+)\}", text)
    return None if found is None or found[1].strip() == "none" else float(ast.literal_eval(found[1].strip()))


def write_weights(weights: dict[str, float], theta) -> None:
    """Write the weights (and the abstention threshold unless ``theta == 'keep'``) into :data:`FITTED`."""
    if theta == "keep":
        theta = current_threshold()
    (ROOT / FITTED).write_text(fitted_macro(weights, theta))
    print(f"weights and abstention threshold written to {FITTED}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--benchmark", action="append", required=True)
    ap.add_argument("--workdir", default=".dbrouter/ranker", type=Path)
    ap.add_argument("--n", type=int, default=600, help="routed train questions per setting")
    ap.add_argument("--l2", type=float, default=1e-3)
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--reuse", action="store_true", help="read cached routed questions")
    ap.add_argument("--write", action="store_true", help="write the pooled fit into the dbt vars")
    ap.add_argument("--test-features", type=Path,
                    help="folder holding (at any depth) the <benchmark>/<setting>.features.jsonl that `dbrouter eval "
                         "route` wrote: print each fit's test R@1 (the cross-benchmark check; nothing is fitted on them)")
    ap.add_argument("--abstention", action="store_true",
                    help="also fit dbrouter__abstain_below on train KBs without the withheld databases")
    ap.add_argument("--abstention-cost", type=float, default=0.01,
                    help="in-repository R@1 the abstention may cost on train (default 0.01)")
    args = ap.parse_args()
    data = {Path(b).name: collect(b, args.workdir, args.n, args.embedder, args.reuse) for b in args.benchmark}
    weights = balanced_fit(data, args.l2)
    print(f"pooled fit on train of {', '.join(data)}: {weights}")
    report(data, weights, "pooled fit")
    if len(data) > 1:
        for name in data:
            own = balanced_fit({name: data[name]}, args.l2)
            print(f"fit on {name} train only: {own}")
            report(data, own, f"fit on {name} only")
    if args.test_features:
        print("cross-benchmark check on TEST features written by `dbrouter eval route` (evaluation only):")
        fits = {"pooled": weights, **({f"{n} only": balanced_fit({n: data[n]}, args.l2) for n in data}
                                      if len(data) > 1 else {})}
        for name in data:
            for setting in ("in-domain", "schema-only", "cross-domain"):
                found = sorted(args.test_features.rglob(f"{name}/{setting}.features.jsonl"))
                if found:
                    test = routed_questions.load(found[0])
                    print(f"  test {name:<18} {setting:<13} n={len(test):<5} "
                          + "  ".join(f"{label} {fitting.r_at_1(test, w):.4f}" for label, w in fits.items()))
    theta = None
    if args.abstention:
        routed = [q for b in args.benchmark for q in collect_abstention(b, args.workdir, args.n, args.embedder,
                                                                          args.reuse)]
        theta = choose_abstention(routed, weights, args.abstention_cost)
    if args.write:
        write_weights(weights, theta if args.abstention else "keep")


if __name__ == "__main__":
    main()
