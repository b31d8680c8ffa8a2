"""Table recall of schema linking where a benchmark ships ``gold_tables.jsonl`` (BEAVER, Spider
2.0-Lite): the tables each gold SQL reads, known even where the SQL itself is not published.

A question counts when every gold table has a column in the linked schema. Three methods are
scored on the same questions: the LLM-free linker, top-k column retrieval given the linker's
number of columns, and BM25 over one document per table (name, label, column names, labels and
descriptions) given the linker's number of tables, the table-retrieval baseline of the issue.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field

import numpy as np

from dbrouter.eval.benchmark import Benchmark
from dbrouter.eval.wide import tokens


def load_gold_tables(bench: Benchmark) -> dict[str, set[str]]:
    """The gold tables of each test question, lower-case, when the benchmark ships them.

    Args:
        bench: the benchmark.

    Returns:
        question id -> its gold tables (questions whose gold reads no known table are left out;
        an empty dict when there is no ``gold_tables.jsonl``).
    """
    path = bench.path / "gold_tables.jsonl"
    if not path.is_file():
        return {}
    out: dict[str, set[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            obj = json.loads(line)
            if obj.get("tables"):
                out[obj["id"]] = {t.lower() for t in obj["tables"]}
    return out


def table_document(table: dict) -> list[str]:
    """One table as BM25 tokens: its name, label, and each column's name, label and descriptions."""
    parts = [table["name"], table.get("label") or "", table.get("description") or ""]
    for c in table.get("columns", []):
        parts += [c["name"], c.get("label") or "", c.get("description") or "", c.get("value_description") or ""]
    return tokens(" ".join(parts))


class TableBM25:
    """BM25 over the tables of each database (idf within the database, as a user searching one
    warehouse's catalogue would get)."""

    def __init__(self, rows: list[dict]):
        """Index ``rows`` (databases.jsonl objects)."""
        from rank_bm25 import BM25Okapi

        self._index: dict[str, tuple[list[str], BM25Okapi]] = {}
        for r in rows:
            tables = r.get("tables", [])
            if tables:
                self._index[r["db_id"]] = ([t["name"].lower() for t in tables],
                                           BM25Okapi([table_document(t) for t in tables]))

    def top(self, db: str, question: str, k: int) -> list[str]:
        """The ``k`` best tables of ``db`` for ``question``, lower-case, best first."""
        names, bm25 = self._index.get(db, ([], None))
        if bm25 is None or k <= 0:
            return []
        scores = bm25.get_scores(tokens(question))
        return [names[j] for j in np.argsort(-scores, kind="stable")[:k]]


@dataclass
class TableRecall:
    """Share of questions with every gold table linked, and what was handed on."""

    recall: float
    avg_tables: float
    avg_columns: float
    n: int


@dataclass
class TableTally:
    """Running counts of one method (see :meth:`add` and :meth:`score`)."""

    hits: int = 0
    tables: list[int] = field(default_factory=list)
    columns: list[int] = field(default_factory=list)

    def add(self, gold: set[str], linked_tables: set[str], n_columns: int) -> None:
        """Count one question: ``linked_tables`` lower-case, ``n_columns`` handed on."""
        self.hits += gold <= linked_tables
        self.tables.append(len(linked_tables))
        self.columns.append(n_columns)

    def score(self) -> TableRecall:
        """The tally as a :class:`TableRecall`."""
        n = len(self.tables)
        if not n:
            return TableRecall(0.0, 0.0, 0.0, 0)
        return TableRecall(round(self.hits / n, 4), round(statistics.mean(self.tables), 2),
                           round(statistics.mean(self.columns), 2), n)
