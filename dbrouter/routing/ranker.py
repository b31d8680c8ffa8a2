"""The re-rank's learned ranker at run time: its signals, what they mean, and the explanation of a
score (``dbrouter route --explain``).

The signals are computed in SQL by the route functions (macro ``route_signals_step``) and
returned in each candidate's evidence (``signals``); the weights live in the dbt var
``dbrouter__ranker_weights``, fitted offline by :mod:`dbrouter.tune.fitting` (a conditional logit
over each question's shortlisted candidates, on train questions only).
"""

from __future__ import annotations

import json

from dbrouter.connection import Connection
from dbrouter.errors import DbrouterError

# The order of macro ranker_signal_names().
SIGNALS = ("database", "table", "column", "example", "example_votes", "semantic", "mapped", "connected",
           "phrase_wins", "lex_table", "lex_name", "lex_value", "lex_example", "shortlist", "has_examples")


# What each signal means, in words a data analyst reads in `dbrouter route --explain`.
SIGNAL_TEXT = {
    "database": "question ~ database description (cosine)",
    "table": "question ~ its best tables (mean cosine)",
    "column": "question ~ its best columns (mean cosine)",
    "example": "best stored example question above the floor",
    "example_votes": "share of the most similar stored examples",
    "semantic": "phrases ~ their best columns (mean cosine)",
    "mapped": "share of the question's phrases mapped",
    "connected": "mapped tables joinable (1 yes, 0 no)",
    "phrase_wins": "share of phrases mapped best here",
    "lex_table": "question words in table names (idf-weighted)",
    "lex_name": "question words in table/column names (idf)",
    "lex_value": "question words in sample values (idf)",
    "lex_example": "question words in its stored examples (idf)",
    "shortlist": "first-ranking score (shortlist)",
    "has_examples": "has stored example questions (1 yes)",
}


def contributions(signals: dict[str, float], weights: dict[str, float]) -> list[tuple[str, float, float, float]]:
    """Each signal's part of the ranker score, in :data:`SIGNALS` order.

    Args:
        signals: a candidate's signals (evidence ``signals``).
        weights: the ranker's weights (``route_ranker_weights()``).

    Returns:
        (name, value, weight, value x weight) per signal.
    """
    out = []
    for name in SIGNALS:
        value, weight = float(signals.get(name) or 0.0), float(weights.get(name, 0.0))
        out.append((name, value, weight, value * weight))
    return out


def kb_weights(con: Connection) -> dict[str, float]:
    """The ranker weights a warehouse's route functions were built with (``route_ranker_weights()``).

    Args:
        con: warehouse connection.

    Returns:
        Signal name -> weight.

    Raises:
        DbrouterError: the knowledge base predates the learned ranker.
    """
    import duckdb

    try:
        return json.loads(con.execute("select cast(route_ranker_weights() as varchar)").fetchone()[0])
    except duckdb.CatalogException as exc:
        raise DbrouterError("this knowledge base predates the learned ranker (no route_ranker_weights()): "
                            "rebuild it with `dbrouter build`") from exc


def calibration_prefix(path: str) -> str:
    """The prefix of a route path's columns in ``kb_routing_calibration`` (``static_`` for the pure-SQL path)."""
    return "static_" if path == "sql" else ""


def examples_note(con: Connection, path: str = "udf") -> str | None:
    """Why the example signals are 0 on this knowledge base, or None when its examples are used.

    Args:
        con: warehouse connection.
        path: the route path (``udf`` or ``sql``: the pure-SQL path has its own decision).

    Returns:
        One sentence for ``route --explain`` (the leave-one-out counts of ``kb_routing_calibration``).
    """
    import duckdb

    prefix = calibration_prefix(path)
    try:
        row = con.execute(f"select {prefix}n_probes, {prefix}probes_right_by_schema, {prefix}probes_right_by_examples, "
                          f"{prefix}examples_trusted from kb_routing_calibration").fetchone()
    except duckdb.Error:  # a KB built before the leave-one-out trust test has no such columns
        return None
    if row is None or row[3]:
        return None
    probes, by_schema, by_examples, _ = row
    if not probes:
        return "example signals are off: the knowledge base has no example questions"
    return (f"example signals are off for this knowledge base: routed leave-one-out, its examples put "
            f"{by_examples} of {probes} example questions on their own database first, the schema alone "
            f"{by_schema} (kb_routing_calibration.examples_trusted = 0: examples must do better than the schema; "
            "add examples for the databases they confuse)")
