"""`dbrouter eval link`: strict recall of schema linking on a benchmark's whole test split.

The gold database is given. The KB is built as the routing evals build it (the train questions
as examples) plus the benchmark's domain statements; a test question's own evidence is never in
it. Gold columns come from the gold SQL (:mod:`dbrouter.eval.gold`). Reported for the LLM-free
linker and, as a baseline, for plain top-k column retrieval (``retrieve_columns``) given the same
number of columns per question: ``srr`` (share of questions whose linked set holds every gold
column and a column of every gold table), ``avg_columns``, ``n``, ``p50_ms``.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from dbrouter.connection import Connection
from dbrouter.console import err
from dbrouter.eval.benchmark import Benchmark, Question
from dbrouter.eval.gold import GoldSchema, Schema, gold_schema
from dbrouter.eval.kb import Log, build_kb, timed
from dbrouter.eval.link_tables import TableBM25, TableRecall, TableTally, load_gold_tables
from dbrouter.eval.publish import Report
from dbrouter.kb.connect import connect
from dbrouter.linking.columns import retrieve_columns
from dbrouter.linking.features import load_signals
from dbrouter.linking.linker import link_schema

JSON_KEYS = ("srr", "avg_columns", "n", "p50_ms", "baseline", "n_unparsed", "benchmark")


def load_schemas(bench: Benchmark, rows: list[dict] | None = None) -> dict[str, Schema]:
    """Lower-case tables and columns of every database of ``bench``.

    Args:
        bench: the benchmark.
        rows: its :meth:`Benchmark.database_rows` when already read.

    Returns:
        db_id -> {table: {columns}}.
    """
    return {obj["db_id"]: {t["name"].lower(): {c["name"].lower() for c in t.get("columns", [])}
                           for t in obj.get("tables", [])}
            for obj in (bench.database_rows() if rows is None else rows)}


def gold_for(q: Question, schemas: dict[str, Schema]) -> GoldSchema:
    """The gold schema elements of one question (``error`` set when its SQL does not parse)."""
    return gold_schema(q.sql, schemas.get(q.db_id, {}))


def build_link_kb(bench: Benchmark, workdir: Path, embedder: str | None, log: Log = err) -> Path:
    """Build (or refresh: the embedding cache is reused) the KB the linking eval reads.

    Args:
        bench: the benchmark.
        workdir: the warehouse's folder.
        embedder: embedder name (None = default).
        log: progress output.

    Returns:
        The warehouse file.
    """
    statements = bench.path / "domain_statements.jsonl"
    warehouse = workdir / "kb.duckdb"
    log(f"[{bench.name} / link] building KB: {len(bench.db_ids)} databases, {len(bench.train)} examples"
        + (", domain statements" if statements.is_file() else ""))
    build_kb(bench.databases_file, bench.train, warehouse, embedder, log,
             statements=statements if statements.is_file() else None)
    return warehouse


@dataclass
class LinkScore:
    """Strict recall and size of one linking method."""

    srr: float
    avg_columns: float
    n: int


@dataclass
class LinkMetrics:
    """`eval link` result: the linker, the same-budget top-k baseline, latency, misses."""

    benchmark: str
    linker: LinkScore
    baseline: LinkScore
    n_unparsed: int
    p50_ms: float
    p95_ms: float
    seconds: float
    tables: dict[str, TableRecall] | None = None
    linked: int = 0
    """Questions linked (those with parsed gold SQL or gold tables)."""
    """Table recall where the benchmark ships ``gold_tables.jsonl`` (:mod:`dbrouter.eval.link_tables`):
    ``linker``, ``top_k_columns`` and ``bm25_tables``, on every question with gold tables."""

    def to_json(self) -> dict:
        """The ``--json`` object (keys :data:`JSON_KEYS` and more)."""
        out = {"benchmark": self.benchmark, "srr": self.linker.srr, "avg_columns": self.linker.avg_columns,
               "n": self.linker.n, "p50_ms": self.p50_ms, "p95_ms": self.p95_ms, "baseline": asdict(self.baseline),
               "n_unparsed": self.n_unparsed, "seconds": self.seconds}
        if self.tables:
            out["table_recall"] = {k: asdict(v) for k, v in self.tables.items()}
        return out


def _score(hits: int, sizes: list[int]) -> LinkScore:
    n = len(sizes)
    return LinkScore(round(hits / n, 4) if n else 0.0, round(statistics.mean(sizes), 2) if n else 0.0, n)


def eval_link(bench: Benchmark, workdir: Path, embedder: str | None, limit: int | None = None,
              log: Log = err) -> LinkMetrics:
    """Link every test question to its gold database and measure strict recall.

    Args:
        bench: the benchmark.
        workdir: where the evaluation warehouse lives.
        embedder: embedder name.
        limit: only the first ``limit`` questions (smoke runs; not for reporting).
        log: progress output.

    Returns:
        The metrics.
    """

    warehouse = build_link_kb(bench, workdir, embedder, log)
    rows = bench.database_rows()
    schemas = load_schemas(bench, rows)
    gold_tables = load_gold_tables(bench)
    table_bm25 = TableBM25(rows) if gold_tables else None
    tallies = {"linker": TableTally(), "top_k_columns": TableTally(), "bm25_tables": TableTally()}
    questions = bench.test[:limit] if limit else bench.test
    con = connect(warehouse, embedder=embedder)
    signals: dict = {}
    hits = base_hits = unparsed = linked_count = 0
    sizes: list[int] = []
    started = time.time()
    try:
        for i, q in enumerate(questions, 1):
            gold = gold_for(q, schemas)
            tables = gold_tables.get(q.id)
            if gold.error:
                unparsed += 1
                if not tables:
                    continue
            sig = signals.get(q.db_id) or signals.setdefault(q.db_id, load_signals(con, q.db_id))
            linked = link_schema(con, q.question, q.db_id, signals=sig)
            linked_count += 1
            names = {n.lower() for n in linked.names}
            top = retrieve_columns(con, q.question, q.db_id, k=len(names))
            if not gold.error:
                hits += gold.covered_by(names)
                sizes.append(len(names))
                base_hits += gold.covered_by({c.column.name.lower() for c in top})
            if tables and table_bm25 is not None:
                linked_tables = {t.lower() for t in linked.tables}
                tallies["linker"].add(tables, linked_tables, len(names))
                tallies["top_k_columns"].add(tables, {c.column.table.lower() for c in top}, len(top))
                tallies["bm25_tables"].add(tables, set(table_bm25.top(q.db_id, q.question, len(linked_tables))), 0)
            if i % 500 == 0 or i == len(questions):
                log(f"  linked {i}/{len(questions)} ({time.time() - started:.0f}s) SRR so far "
                    f"{hits / max(1, len(sizes)):.4f} at {statistics.mean(sizes or [0]):.2f} columns "
                    f"(top-k {base_hits / max(1, len(sizes)):.4f})")
        seconds = time.time() - started
        p50, p95 = link_latency(con, questions)
    finally:
        con.close()
    recall = {k: v.score() for k, v in tallies.items()} if gold_tables else None
    return LinkMetrics(bench.name, _score(hits, sizes), _score(base_hits, sizes), unparsed, p50, p95,
                       round(seconds, 1), recall, linked_count)



def link_latency(con: Connection, questions: list[Question], n: int = 200, seed: int = 0) -> tuple[float, float]:
    """Warm p50/p95 of one full :func:`dbrouter.linking.linker.link_schema` call (signals read
    from the KB each time, as ``dbrouter ask`` does).

    Args:
        con: warehouse connection.
        questions: questions with their gold database.
        n: how many to time (after 5 warm-up calls).
        seed: sampling seed.

    Returns:
        (p50 ms, p95 ms), rounded to 0.1 ms.
    """

    p50, p95 = timed(lambda q: link_schema(con, q.question, q.db_id), questions, n, seed)
    return round(p50, 1), round(p95, 1)


def summary_line(m: LinkMetrics) -> str:
    """The one line ``dbrouter eval link`` prints without ``--json``."""
    line = (f"{m.benchmark} link: n={m.linker.n} SRR={m.linker.srr:.4f} at {m.linker.avg_columns} columns "
            f"(top-k retrieval at the same budget: SRR={m.baseline.srr:.4f}); p50={m.p50_ms}ms p95={m.p95_ms}ms")
    if m.tables:
        t = m.tables
        line += (f"\n{m.benchmark} table recall: n={t['linker'].n} linker {t['linker'].recall:.4f} at "
                 f"{t['linker'].avg_columns} columns, {t['linker'].avg_tables} tables (top-k columns "
                 f"{t['top_k_columns'].recall:.4f}; BM25 tables {t['bm25_tables'].recall:.4f})")
    return line


def link_report(m: LinkMetrics, command: str) -> Report:
    """The result as a :class:`Report` (block ``eval link <benchmark>``)."""
    markdown = (
        f"#### eval link: {m.benchmark}\n\n"
        f"| n | method | SRR | avg columns | p50 ms | p95 ms |\n|---|---|---|---|---|---|\n"
        f"| {m.linker.n} | **LLM-free linker** | **{m.linker.srr:.4f}** | {m.linker.avg_columns} | {m.p50_ms} | "
        f"{m.p95_ms} |\n"
        f"| {m.baseline.n} | top-k `retrieve_columns`, same columns per question | {m.baseline.srr:.4f} | "
        f"{m.baseline.avg_columns} | | |\n\n"
        f"Gold database given; SRR = every gold column and a column of every gold table linked. "
        f"{m.n_unparsed} questions whose gold SQL does not parse are left out.\n\n")
    if m.tables:
        t = m.tables
        markdown += (
            f"| n | method | table recall | avg tables | avg columns |\n|---|---|---|---|---|\n"
            f"| {t['linker'].n} | **LLM-free linker** | **{t['linker'].recall:.4f}** | {t['linker'].avg_tables} | "
            f"{t['linker'].avg_columns} |\n"
            f"| {t['top_k_columns'].n} | top-k `retrieve_columns`, same columns per question | "
            f"{t['top_k_columns'].recall:.4f} | {t['top_k_columns'].avg_tables} | {t['top_k_columns'].avg_columns} |\n"
            f"| {t['bm25_tables'].n} | BM25 over table documents, same tables per question | "
            f"{t['bm25_tables'].recall:.4f} | {t['bm25_tables'].avg_tables} | |\n\n"
            "Table recall (`gold_tables.jsonl`, every question with gold tables, published SQL or not): "
            "every gold table has a column in the linked schema.\n\n")
    return Report(key=f"eval link {m.benchmark}", command=command, data=m.to_json(), markdown=markdown,
                  note=f"linking {m.linked or m.linker.n} questions took {m.seconds}s", text=summary_line(m))

