"""Table-first linking under a column budget, for wide databases.

On a benchmark-sized database the linker's selection (:func:`dbrouter.linking.linker.select_columns`)
hands on about ten columns. On a warehouse dataset of thousands of columns the same thresholds
let through dozens of columns of one table and miss the other tables a question joins. When the
selection is larger than the budget, or the database is wider than the budget and has no stored
examples to vote, the linker chooses tables first and columns second:

1. every table is ranked by reciprocal-rank fusion of three rankings: its best column's
   probability (the linker's model), the table document's cosine to the question, and BM25 of
   the question's words over the table's words (name, column names, labels, descriptions); and a
   fourth ranking in the same sum, by the best of those three's fused score among the table's
   join neighbours, which lifts bridge tables;
2. tables are taken in that order, each joined to the ones before by a shortest join path (its
   key columns and bridge tables come too), while one column per table plus the keys fit the
   budget, and at most ``budget // MIN_COLUMNS_PER_TABLE`` tables;
3. the rest of the budget goes to the most probable columns of the chosen tables.

Nothing here is fitted: the fusion constant is the usual 60, the per-table floor is a
readability choice (a table reaches the SQL writer with a few columns, not one). Two ways of
adding the neighbour ranking were compared on whole splits (BENCHMARKS.md); the one kept adds
it as a fourth term, the other fused it at equal weight with the three-way score and lost.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence

import numpy as np

from dbrouter.linking.features import words
from dbrouter.linking.joins import join_graph, join_path_keys

MIN_COLUMNS_PER_TABLE = 4
"""A chosen table gets room for about this many columns: the budget caps the number of tables."""
RRF_K = 60
"""Reciprocal-rank fusion constant (Cormack et al., 2009), as in the routing shortlist."""
BM25_K1, BM25_B = 1.2, 0.75
"""BM25's usual term-saturation and length-normalisation constants."""


def bm25_scores(question: str, docs: dict[str, Counter]) -> dict[str, float]:
    """BM25 of ``question``'s words over ``docs`` (idf within these documents).

    Args:
        question: the question.
        docs: name -> word counts (:func:`table_words`).

    Returns:
        name -> score (0 when no word is shared).
    """
    if not docs:
        return {}
    n = len(docs)
    lengths = {k: sum(v.values()) for k, v in docs.items()}
    avg = sum(lengths.values()) / n or 1.0
    qwords = words(question)
    df = {w: sum(1 for v in docs.values() if w in v) for w in qwords}
    out = {}
    for name, bag in docs.items():
        s = 0.0
        for w in qwords:
            tf = bag.get(w, 0)
            if tf:
                idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                s += idf * tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * lengths[name] / avg))
        out[name] = s
    return out


def rank_tables(tables: Sequence[str], column_tables: Sequence[str], p: np.ndarray,
                table_cosine: dict[str, float], lexical: dict[str, float], edges=()) -> list[str]:
    """Tables best first by reciprocal-rank fusion of four rankings: best column probability,
    cosine, BM25, and the best of those three's fused score among each table's join neighbours (a
    bridge table shares no word with the question but joins two tables that do).

    Args:
        tables: every table of the database (lower-case).
        column_tables: the table of each scored column (lower-case), aligned with ``p``.
        p: the linker's probability per column.
        table_cosine: table -> cosine of its document to the question.
        lexical: table -> BM25 score.
        edges: the database's join edges (lower-case; none: no neighbour ranking).

    Returns:
        The tables, best first (ties by name).
    """
    best: dict[str, float] = defaultdict(float)
    for t, pi in zip(column_tables, p.tolist()):
        best[t] = max(best[t], pi)
    fused = _rrf(tables, (best, table_cosine, lexical))
    neighbours: dict[str, float] = defaultdict(float)
    for ft, _fc, tt, _tc, _declared in edges:
        if ft != tt:
            neighbours[ft] = max(neighbours[ft], fused[tt])
    if neighbours:  # a fourth ranking in the same sum, derived from the first three
        near = _rrf(tables, (neighbours,))
        fused = {t: fused[t] + near[t] for t in tables}
    return sorted(tables, key=lambda t: (-fused[t], t))


def _rrf(tables: Sequence[str], scores: Sequence[dict[str, float]]) -> dict[str, float]:
    """Reciprocal-rank fusion of the rankings ``scores`` induce on ``tables`` (ties by name)."""
    fused: dict[str, float] = defaultdict(float)
    for score in scores:
        ordered = sorted(tables, key=lambda t, s=score: (-s.get(t, 0.0), t))
        for r, t in enumerate(ordered):
            fused[t] += 1.0 / (RRF_K + r + 1)
    return fused


def budgeted_columns(names: Sequence[str], column_tables: Sequence[str], p: np.ndarray, ranked_tables: list[str],
                     edges, budget: int) -> list[str]:
    """At most ``budget`` columns: tables first (module docstring), then the most probable columns.

    Args:
        names: lower-case ``table.column`` per column.
        column_tables: lower-case table per column (table names may hold dots).
        p: probability per column.
        ranked_tables: :func:`rank_tables`' order.
        edges: the database's join edges (lower-case).
        budget: most columns to hand on (at least 1).

    Returns:
        Linked names: each chosen table's best column and the join keys, then the rest by probability.
    """
    budget = max(1, budget)
    order = np.argsort(-p, kind="stable")
    best_of: dict[str, str] = {}
    for i in order:
        best_of.setdefault(column_tables[i], names[i])
    max_tables = max(1, budget // MIN_COLUMNS_PER_TABLE)
    chosen: list[str] = []
    keys: set[str] = set()
    graph = join_graph(edges)  # walked once per candidate table: built once
    for t in ranked_tables:
        if t not in best_of:
            continue
        tree, tree_keys = join_path_keys(chosen + [t], edges, graph)
        firsts = {best_of[x] for x in tree if x in best_of}
        if chosen and (len(firsts | tree_keys) > budget or len(tree) > max_tables):
            continue
        chosen, keys = [x for x in dict.fromkeys(chosen + [t] + tree)], tree_keys
        if len(chosen) >= max_tables:
            break
    picked = list(dict.fromkeys([best_of[t] for t in chosen if t in best_of] + sorted(keys)))[:budget]
    allowed = set(chosen)
    for i in order:
        if len(picked) >= budget:
            break
        if column_tables[i] in allowed and names[i] not in picked:
            picked.append(names[i])
    return picked
