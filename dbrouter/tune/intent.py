"""Fit the intent probe (var dbrouter__intent_probe): is this a question one asks a database at all?

    python -m dbrouter.tune.intent --benchmark ../shared/benchmarks/spider-route \
        --benchmark ../shared/benchmarks/bird-route-train [--n 1500] [--write]
    python -m dbrouter.tune.intent --held-out ../shared/benchmarks/spider2-lite-dev ...   (check, no fit)

A logistic regression over the question's unit vector, one per embedder whose space is fixed by
the package (``minilm``: the UDF path's encoder; ``m2v``: the static model distilled from it, which
the pure-SQL path computes in SQL): positives are a seeded ``--n`` **train** questions of each
benchmark (nothing from a test split is read), negatives the package's off-topic questions (seed
``offtopic_probes`` and ``dbrouter/tune/offtopic_negatives.txt``: general knowledge, chit-chat,
requests, how-to, gibberish; written for this, never the public corpus ``dbrouter eval abstain``
measures with). Classes weigh the same. The refusal threshold is the 1% quantile of the positives'
out-of-fold scores (5-fold): the probe refuses about one train question in a hundred by itself.

The script prints the out-of-fold refusal of both classes per embedder and, with ``--write``, writes
the weights into the generated ``macros/tuned/fitted_intent.sql`` (the var's default). In SQL the
probe's score is ``cosine(v, w) * |w| + bias`` (``w . v`` for a unit ``v``): ``cosine_similarity``
exists on every adapter and normalises the pure-SQL path's summed piece vectors.
"""

from __future__ import annotations

import argparse
import csv
import random
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the checkout: what --write updates
FITTED = "macros/tuned/fitted_intent.sql"
NEGATIVES = Path(__file__).with_name("offtopic_negatives.txt")
SEED = ROOT / "seeds" / "offtopic_probes.csv"
EMBEDDERS = ("minilm", "m2v")
"""The embedders with a probe: their vector spaces ship with the package (MiniLM and its distillate)."""
REFUSE_QUANTILE = 0.01


@dataclass
class IntentProbe:
    """One embedder's probe: ``score = w . unit(v) + bias``; refused below ``threshold``."""

    embedder: str
    weights: list[float]
    bias: float
    threshold: float
    positives_refused: float
    negatives_refused: float
    n_positives: int
    n_negatives: int

    @property
    def norm(self) -> float:
        """``|w|``, so that the SQL score is ``cosine(v, w) * norm + bias``."""
        return float(sum(x * x for x in self.weights) ** 0.5)


def negative_questions() -> list[str]:
    """The off-topic questions the probe learns from: the seed probes and the tune file, deduplicated."""
    with SEED.open(encoding="utf-8") as f:
        seed = [row["question"].strip() for row in csv.DictReader(f)]
    extra = [line.strip() for line in NEGATIVES.read_text(encoding="utf-8").splitlines() if line.strip()]
    return sorted({q for q in seed + extra if q})


def fit_probe(embedder: str, positives: list[str], negatives: list[str], folds: int = 5) -> IntentProbe:
    """Fit one embedder's probe and its threshold.

    Args:
        embedder: ``minilm`` or ``m2v``.
        positives: questions asked of databases (train splits).
        negatives: off-topic questions.
        folds: cross-validation folds for the threshold and the printed refusals.

    Returns:
        The probe.
    """
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    from python_udfs.embeddings import embed_texts, get_embedder

    model = get_embedder(embedder)
    pairs = [(i, v) for i, v in enumerate(embed_texts(positives + negatives, model)) if v is not None]
    x = np.array([v / np.linalg.norm(v) for _, v in pairs])
    y = np.array([1 if i < len(positives) else 0 for i, _ in pairs])
    scores = np.zeros(len(y))
    for train, test in StratifiedKFold(folds, shuffle=True, random_state=0).split(x, y):
        clf = LogisticRegression(max_iter=5000, class_weight="balanced").fit(x[train], y[train])
        scores[test] = clf.decision_function(x[test])
    threshold = float(np.quantile(scores[y == 1], REFUSE_QUANTILE))
    clf = LogisticRegression(max_iter=5000, class_weight="balanced").fit(x, y)
    return IntentProbe(embedder, [round(float(w), 5) for w in clf.coef_[0]], round(float(clf.intercept_[0]), 5),
                       round(threshold, 5), round(float(np.mean(scores[y == 1] < threshold)), 4),
                       round(float(np.mean(scores[y == 0] < threshold)), 4), int(sum(y)), int(len(y) - sum(y)))


def fitted_macro(probes: list[IntentProbe]) -> str:
    """The text of :data:`FITTED` for ``probes``.

    Args:
        probes: one per embedder.

    Returns:
        The macro file, marked generated.
    """
    value = {p.embedder: {"weights": p.weights, "norm": round(p.norm, 5), "bias": p.bias, "threshold": p.threshold}
             for p in probes}
    return ("{#- GENERATED by `python -m dbrouter.tune.intent --write` (fitted on benchmark TRAIN questions and the\n"
            "    package's off-topic questions; docs/reference.md \"Abstention\"): do not edit. The default of var\n"
            "    dbrouter__intent_probe (macro get_var): per embedder, score = cosine(v, w) * norm + bias. -#}\n"
            "{% macro fitted_intent() -%}\n"
            f"{{{{ return({value!r}) }}}}\n"
            "{%- endmacro %}\n")


def parse_fitted(text: str) -> dict[str, dict]:
    """The probes a :func:`fitted_macro` text holds (embedder -> weights, norm, bias, threshold); {} for none."""
    import ast
    import re

    found = re.search(r"return\((\{.*\})\)", text, re.S)
    return ast.literal_eval(found[1]) if found else {}


def shipped_probes() -> dict[str, dict]:
    """The probes :data:`FITTED` holds now."""
    return parse_fitted((ROOT / FITTED).read_text(encoding="utf-8"))


def refused_share(embedder: str, probe: dict, questions: list[str]) -> float:
    """The share of ``questions`` the probe refuses (score below its threshold), as the routing SQL scores.

    Args:
        embedder: the embedder whose space the probe was fitted in.
        probe: one entry of :func:`shipped_probes`.
        questions: the questions.

    Returns:
        The share refused (a question with no vector counts as refused).
    """
    import numpy as np

    from python_udfs.embeddings import embed_texts, get_embedder

    w = np.array(probe["weights"])
    refused = 0
    for v in embed_texts(questions, get_embedder(embedder)):
        refused += v is None or float(w @ (v / np.linalg.norm(v)) + probe["bias"]) < probe["threshold"]
    return refused / max(len(questions), 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--benchmark", action="append", default=[], help="benchmark directory (train split read)")
    ap.add_argument("--n", type=int, default=1500, help="train questions per benchmark (seeded; default 1500)")
    ap.add_argument("--write", action="store_true", help=f"write {FITTED}")
    ap.add_argument("--held-out", action="append", default=[],
                    help="benchmark directory whose TEST questions the shipped probes are checked on (no fit)")
    args = ap.parse_args()
    from dbrouter.eval.benchmark import load_benchmark

    if args.held_out:
        for embedder, probe in shipped_probes().items():
            for path in args.held_out:
                bench = load_benchmark(path)
                print(f"{embedder}: {bench.name} test questions refused "
                      f"{refused_share(embedder, probe, [q.question for q in bench.test]):.4f} (n={len(bench.test)})",
                      flush=True)
        return

    if not args.benchmark:
        ap.error("give --benchmark DIR (train questions to fit on) or --held-out DIR (check the shipped probes)")
    rng = random.Random(0)
    positives = []
    for path in args.benchmark:
        train = [q.question for q in load_benchmark(path).train]
        positives += rng.sample(train, min(args.n, len(train)))
    negatives = negative_questions()
    probes = []
    for embedder in EMBEDDERS:
        probe = fit_probe(embedder, positives, negatives)
        probes.append(probe)
        print(f"{embedder}: {probe.n_positives} train questions, {probe.n_negatives} off-topic; out of fold "
              f"refused {probe.positives_refused:.4f} / {probe.negatives_refused:.4f}; threshold {probe.threshold}",
              flush=True)
    if args.write:
        (ROOT / FITTED).write_text(fitted_macro(probes), encoding="utf-8")
        print(f"wrote {FITTED}")


if __name__ == "__main__":
    main()
