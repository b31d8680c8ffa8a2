"""The learned ranker offline: scores of routed questions (:mod:`dbrouter.eval.routed`) under a set
of weights, R@1, and the fit of the weights as a conditional logit (softmax over each question's
shortlisted candidates) on train questions. Used by ``python -m dbrouter.tune.ranker`` and
``dbrouter eval route``; routing never imports it (its run-time side is
:mod:`dbrouter.routing.ranker`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dbrouter.eval.routed import RoutedQuestion
from dbrouter.routing.ranker import SIGNALS
from python_udfs.phrases import content_words

if TYPE_CHECKING:  # numpy is imported where the fit and the scores need it
    import numpy as np


def example_word_share(question: str, examples: list[tuple[str, str]], n_databases: int) -> dict[str, float]:
    """Signal ``lex_example`` per database, as route_signals_step computes it in SQL: the share of
    the question's idf weight (idf = ln(N / df) over the KB's databases, ln(N) for a word in no
    database's examples) carried by content words found in the database's stored example questions.

    Args:
        question: the routed question.
        examples: (db_id, example question) of the KB.
        n_databases: N, the number of databases in the KB.

    Returns:
        db_id -> share, for every database that has examples (0 for the others).
    """
    import math


    vocab: dict[str, set[str]] = {}
    for db_id, text in examples:
        vocab.setdefault(db_id, set()).update(content_words(text))
    df: dict[str, int] = {}
    for words in vocab.values():
        for w in words:
            df[w] = df.get(w, 0) + 1
    n = max(n_databases, 1)
    idf = lambda w: math.log(n / df[w]) if w in df else math.log(max(n, 2))  # noqa: E731
    words = set(content_words(question))
    total = sum(idf(w) for w in words)
    return {db: (sum(idf(w) for w in words if w in own) / total if total else 0.0) for db, own in vocab.items()}


def matrix(q: RoutedQuestion, names: tuple[str, ...] | None = None) -> np.ndarray:
    """The question's candidates x signals matrix (``names`` default :data:`SIGNALS`)."""
    import numpy as np

    names = names or SIGNALS
    return np.array([[c.signals.get(n, 0.0) for n in names] for c in q.candidates], dtype=float).reshape(-1, len(names))


def score(q: RoutedQuestion, weights: dict[str, float]) -> np.ndarray:
    """The ranker score of each candidate of ``q`` under ``weights``."""
    import numpy as np

    names = tuple(weights)
    return matrix(q, names) @ np.array([weights[n] for n in names])


def top1(q: RoutedQuestion, weights: dict[str, float] | None) -> str | None:
    """The database ranked first: by the ranker (``weights``) or, with None, by the method's order
    (coverage x connectivity, then semantic + shortlist score). Ties go to the better shortlist rank."""
    if not q.candidates:
        return None
    if weights is None:
        return max(q.candidates, key=lambda c: (round(c.method_key[0], 6), c.method_key[1], -c.shortlist_rank)).db_id
    s = score(q, weights)
    best = max(range(len(s)), key=lambda i: (round(float(s[i]), 9), -q.candidates[i].shortlist_rank))
    return q.candidates[best].db_id


def r_at_1(questions: list[RoutedQuestion], weights: dict[str, float] | None) -> float:
    """Share of ``questions`` whose gold database :func:`top1` puts first."""
    return sum(top1(q, weights) == q.gold for q in questions) / max(len(questions), 1)


def fit(questions: list[RoutedQuestion], l2: float = 1e-3, steps: int = 500,
        group_weights: list[float] | None = None, names: tuple[str, ...] | None = None) -> dict[str, float]:
    """Fit the conditional logit: maximise sum log softmax(score)[gold] - l2 |w|^2 (standardised signals).

    Args:
        questions: routed questions; those whose gold database is not among the candidates carry
            no information and are skipped.
        l2: ridge penalty on the standardised weights.
        steps: L-BFGS iterations.
        group_weights: one weight per question (e.g. 1 / size of its setting), default 1.
        names: the signals to weigh (default :data:`SIGNALS`).

    Returns:
        Signal name -> weight on the raw (unstandardised) signal, rounded to 4 digits.
    """
    import numpy as np
    from scipy.optimize import minimize

    names = names or SIGNALS
    gw = group_weights or [1.0] * len(questions)
    groups = [(matrix(q, names), next(i for i, c in enumerate(q.candidates) if c.db_id == q.gold), w)
              for q, w in zip(questions, gw) if any(c.db_id == q.gold for c in q.candidates) and len(q.candidates) > 1]
    if not groups:
        raise ValueError("no routed question has its gold database among two or more candidates: nothing to fit")
    stacked = np.vstack([x for x, _, _ in groups])
    mu, sd = stacked.mean(axis=0), stacked.std(axis=0)
    sd[sd < 1e-9] = 1.0
    total = sum(w for _, _, w in groups)

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = l2 * float(w @ w), 2 * l2 * w
        for x, gold, gweight in groups:
            z = (x - mu) / sd
            s = z @ w
            s -= s.max()
            p = np.exp(s)
            p /= p.sum()
            value -= gweight / total * float(np.log(p[gold] + 1e-300))
            grad -= gweight / total * (z[gold] - p @ z)
        return value, grad

    res = minimize(loss, np.zeros(len(names)), jac=True, method="L-BFGS-B", options={"maxiter": steps})
    return {n: round(float(w / s), 4) for n, w, s in zip(names, res.x, sd)}
