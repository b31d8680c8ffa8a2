"""The LLM-free schema linker (default, always available).

For a question and a database it scores every column with a small logistic model over
database-agnostic signals (:mod:`dbrouter.linking.features`: similarity of the question to the
column, its table and the column's rank; which columns the nearest stored examples' SQL uses;
which columns the nearest domain statements name; exact word matches; key flags), then:

1. keeps every column whose probability is at least ``threshold``;
2. adds the columns of those tables whose probability is at least ``table_threshold`` (a table
   already in the answer needs less evidence for its other columns);
3. connects the linked tables through the join graph (shortest paths, declared and implied edges)
   and adds the key columns of every edge on those paths, so the SQL can join them.

The model's weights and both thresholds are fitted on the benchmarks' train splits by
``python -m dbrouter.tune.linker`` (:mod:`dbrouter.linking.weights`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dbrouter.connection import Connection
from dbrouter.errors import DbrouterError
from dbrouter.linking import MAX_COLUMNS, weights
from dbrouter.linking.budget import bm25_scores, budgeted_columns, rank_tables
from dbrouter.linking.columns import SchemaColumn
from dbrouter.linking.features import DatabaseSignals, column_features, load_signals
from dbrouter.linking.joins import join_path_keys
from dbrouter.retrieval import require_database
from dbrouter.textin import MAX_QUESTION_CHARS


@dataclass
class LinkedSchema:
    """The columns linked for a question, how, and what it cost."""

    db_id: str
    columns: list[SchemaColumn]
    method: str
    """``retrieval`` (LLM-free) or ``agent``."""
    notes: list[str] = field(default_factory=list)
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def names(self) -> list[str]:
        """``table.column`` of every linked column."""
        return [c.name for c in self.columns]

    @property
    def tables(self) -> list[str]:
        """The linked tables, in first-seen order."""
        return list(dict.fromkeys(c.table for c in self.columns))


def probabilities(features: np.ndarray) -> np.ndarray:
    """The model's probability that each column is needed.

    Args:
        features: rows from :func:`dbrouter.linking.features.column_features`.

    Returns:
        One probability per row.
    """

    z = ((features - np.asarray(weights.MEAN)) / np.asarray(weights.SCALE)) @ np.asarray(weights.WEIGHTS)
    return 1.0 / (1.0 + np.exp(-z))


def select_columns(names: list[str], p: np.ndarray, edges, threshold: float, table_threshold: float,
                   min_columns: int = 3, column_tables: list[str] | None = None) -> list[str]:
    """Apply the selection rule (module docstring) to scored columns.

    Args:
        names: lower-case ``table.column`` per column.
        p: probability per column.
        edges: the database's join edges (lower-case).
        threshold: keep columns with p >= threshold.
        table_threshold: keep columns of already linked tables with p >= table_threshold.
        min_columns: at least this many (the best ones).
        column_tables: lower-case table of each column (needed when table names hold dots, as
            schema-qualified ones do; default: ``names`` cut at the first dot).

    Returns:
        Linked names, most probable first, then join keys.
    """
    table_of = column_tables or [n.split(".", 1)[0] for n in names]
    order = np.argsort(-p, kind="stable")
    k = max(min(min_columns, len(names)), int((p >= threshold).sum()))
    chosen = [int(i) for i in order[:k]]
    tables = {table_of[i] for i in chosen}
    chosen += [int(i) for i in order[k:] if p[i] >= table_threshold and table_of[i] in tables]
    _tree, keys = join_path_keys([table_of[i] for i in chosen], edges)
    linked = [names[i] for i in chosen]
    return list(dict.fromkeys(linked + sorted(keys - set(linked))))


def link_schema(con: Connection, question: str, db: str, threshold: float | None = None, table_threshold: float | None = None,
                signals: DatabaseSignals | None = None, max_columns: int | None = MAX_COLUMNS) -> LinkedSchema:
    """Link ``question`` to columns of ``db`` without an LLM.

    Args:
        con: connection from :func:`dbrouter.connect`.
        question: the question.
        db: the database (must be in the KB).
        threshold: column probability threshold (default: the trained one).
        table_threshold: threshold for more columns of linked tables (default: the trained one).
        signals: the database's signals when already loaded (evaluations reuse them).
        max_columns: most columns to hand on. When the selection rule picks more, or the database
            is wider than this and has no stored examples to vote, tables are chosen first and the
            budget filled (:mod:`dbrouter.linking.budget`); None = the selection rule alone.

    Returns:
        The :class:`LinkedSchema` (method ``retrieval``).

    Raises:
        DbrouterError: ``db`` is not in the KB, or the question is empty.
    """

    if question is None or not str(question).strip():
        raise DbrouterError("the question is empty: pass the question to link, e.g. 'How many singers are there?'")
    require_database(con, db)
    sig = signals or load_signals(con, db)
    qv = question_vector(con, question)
    names = sig.names
    p = probabilities(column_features(question, qv, sig))
    column_tables = [t.lower() for t, *_r in sig.columns]
    linked = select_columns(names, p, sig.edges, weights.THRESHOLD if threshold is None else threshold,
                            weights.TABLE_THRESHOLD if table_threshold is None else table_threshold,
                            column_tables=column_tables)
    notes = []
    if max_columns is not None and len(names) > max_columns and (len(linked) > max_columns or not sig.examples):
        cosine = dict(zip(sig.tables, (sig.table_vectors @ qv).tolist())) if sig.tables else {}
        ranked = rank_tables(sorted(set(column_tables)), column_tables, p, cosine,
                             bm25_scores(question, sig.table_words()), sig.edges)
        notes.append(f"{len(linked)} columns selected of a database of {len(names)} with "
                     f"{len(sig.examples)} stored examples: tables chosen first, at most {max_columns} columns")
        linked = budgeted_columns(names, column_tables, p, ranked, sig.edges, max_columns)
    by_name = {c.name.lower(): c for c in sig.schema_columns}
    cols = [by_name[n] for n in linked if n in by_name]
    return LinkedSchema(db, cols, "retrieval",
                        notes=[f"{len(cols)} of {len(names)} columns linked without an LLM"] + notes)


def question_vector(con: Connection, question: str) -> np.ndarray:
    """The question's unit vector from the connection's embedder (the KB's).

    Args:
        con: connection from :func:`dbrouter.connect`.
        question: the text.

    Returns:
        A float32 vector (zeros when the embedder returns nothing).
    """

    row = con.execute("select embed(?)", [str(question)[:MAX_QUESTION_CHARS]]).fetchone()
    if row is None or row[0] is None:
        raise DbrouterError("the embedder returned no vector for this question: it has no words to link")
    v = np.asarray(row[0], dtype=np.float32)
    norm = float(np.linalg.norm(v))
    return v / norm if norm else v
