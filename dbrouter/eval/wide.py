"""`dbrouter eval wide`: routing over wide databases, beside two simple baselines.

Warehouse datasets are wide: hundreds of tables from several applications, date-sharded copies,
thousands of columns - and a question matches *some* column of every wide database. This builds
such a repository from a benchmark and routes its test questions to it:

* the benchmark's databases are grouped by domain (spherical k-means over an embedding of each
  database's name and table labels, groups of about ``group_size``, capped at twice that) and each
  group is merged into one database ``warehouse_NN``: every table renamed ``<db_id>__<table>``,
  its foreign keys kept, and every ``shard_every``-th table also kept as ``shards`` daily date
  shards with identical columns (``<table>_202401DD``);
* a question's gold database is the merged database that holds its own gold database;
* the KB holds the merged databases and, for the setting, the train questions mapped the same way
  (``schema-only``: none - the default, the hard case).

In the same run, on the same questions, two baselines rank the merged databases:

* **BM25** (``rank_bm25``) over one document per database: its name, and each logical table's name,
  label and columns' names, labels and descriptions (date shards counted once);
* **mean table vector**: cosine between the question's embedding and the mean of the database's
  table-document vectors as the KB stores them (same embedder).

Reported: R@1/R@3/mAP of dbrouter's ``route_query_ranked`` and of both baselines, and the first
stage's recall (gold database within stage 1's top ``first_stage_k`` and top 10). Nothing is fitted
on the test questions: the grouping reads only schemas.
"""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dbrouter.connection import Connection
from dbrouter.console import err
from dbrouter.eval.benchmark import Benchmark, Question, setting_split
from dbrouter.eval.kb import Log, build_kb, percentiles_ms
from dbrouter.eval.publish import Report
from dbrouter.eval.route import RankMetrics, rank_of
from dbrouter.kb.connect import connect
from python_udfs.embeddings import get_embedder
from python_udfs.text import words

SHARD_SUFFIX = re.compile(r"_20\d{6}$")
"""A date shard's name suffix (``_YYYYMMDD``), as :func:`merge_group` writes them."""


@dataclass
class WideMetrics:
    """One wide-repository run: its shape, dbrouter's and the baselines' rankings, stage 1's recall."""

    benchmark: str
    setting: str
    n: int
    databases: int
    source_databases: int
    columns_mean: int
    columns_max: int
    tables_max: int
    dbrouter: RankMetrics
    bm25: RankMetrics
    mean_table: RankMetrics
    first_stage_k: int
    first_stage_recall: float
    first_stage_recall_10: float
    p50_ms: float
    p95_ms: float
    seconds: float


def database_text(row: dict) -> str:
    """A database's name and table labels, the text its domain is grouped by."""
    labels = [t.get("label") or t["name"] for t in row["tables"]]
    return f"{row['db_id'].replace('_', ' ')}: " + ", ".join(labels)


def domain_groups(vectors: np.ndarray, group_size: int, seed: int = 0, iterations: int = 25) -> list[list[int]]:
    """Group databases by domain: spherical k-means, then a capacity-bounded assignment.

    Args:
        vectors: (n, d) unit vectors, one per database.
        group_size: the mean group size wanted; ``k = round(n / group_size)`` groups.
        seed: k-means++ seed.
        iterations: Lloyd iterations.

    Returns:
        ``k`` lists of row indices, none empty, none larger than twice ``n / k`` (rounded up).
    """
    n = len(vectors)
    k = max(1, min(n, round(n / max(1, group_size))))
    rng = np.random.default_rng(seed)
    centres = [int(rng.integers(n))]
    for _ in range(1, k):  # k-means++: next centre drawn by squared distance to the nearest one
        d = np.clip(1 - np.max(vectors @ vectors[centres].T, axis=1), 0, None) ** 2
        centres.append(int(rng.choice(n, p=d / d.sum())) if d.sum() > 0 else int(rng.integers(n)))
    c = vectors[centres].copy()
    for _ in range(iterations):
        assign = np.argmax(vectors @ c.T, axis=1)
        for j in range(k):
            members = vectors[assign == j]
            if len(members):
                m = members.sum(axis=0)
                c[j] = m / (np.linalg.norm(m) or 1.0)
    capacity = 2 * math.ceil(n / k)
    sims = vectors @ c.T
    groups: list[list[int]] = [[] for _ in range(k)]
    for i in np.argsort(-sims.max(axis=1), kind="stable"):  # the surest databases choose first
        for j in np.argsort(-sims[i], kind="stable"):
            if len(groups[j]) < capacity:
                groups[j].append(int(i))
                break
    return [sorted(g) for g in groups if g]


def merge_group(rows: list[dict], db_id: str, shard_every: int = 5, shards: int = 10) -> dict:
    """Merge databases into one wide database.

    Args:
        rows: databases.jsonl rows of one domain group.
        db_id: the merged database's name.
        shard_every: every this-many-th table (in merged order) is also kept as date shards.
        shards: date shards per sharded table.

    Returns:
        A databases.jsonl row.
    """
    tables: list[dict] = []
    fks: list[dict] = []
    n = 0
    for row in rows:
        rename = {t["name"]: f"{row['db_id']}__{t['name']}" for t in row["tables"]}
        for t in row["tables"]:
            base = rename[t["name"]]
            tables.append({**t, "name": base})
            if shard_every and n % shard_every == 0:
                tables += [{**t, "name": f"{base}_202401{d:02d}"} for d in range(1, shards + 1)]
            n += 1
        fks += [{**fk, "table": rename[fk["table"]], "ref_table": rename[fk["ref_table"]]}
                for fk in row.get("foreign_keys", []) if fk["table"] in rename and fk["ref_table"] in rename]
    return {"db_id": db_id, "tables": tables, "foreign_keys": fks}


def wide_repository(rows: list[dict], embedder: str | None, group_size: int, shard_every: int = 5,
                    shards: int = 10) -> tuple[list[dict], dict[str, str]]:
    """The benchmark's databases merged by domain (:func:`domain_groups`, :func:`merge_group`).

    Args:
        rows: the benchmark's databases.jsonl rows.
        embedder: embedder of the grouping.
        group_size: mean number of databases merged into one.
        shard_every: see :func:`merge_group`.
        shards: see :func:`merge_group`.

    Returns:
        (merged rows, source db_id -> merged db_id).
    """
    vectors = get_embedder(embedder).encode([database_text(r) for r in rows])
    merged, owner = [], {}
    for i, group in enumerate(domain_groups(np.asarray(vectors, dtype=np.float32), group_size)):
        name = f"warehouse_{i:02d}"
        members = [rows[j] for j in group]
        merged.append(merge_group(members, name, shard_every, shards))
        owner.update({r["db_id"]: name for r in members})
    return merged, owner


def bm25_document(row: dict) -> list[str]:
    """One database as BM25 tokens: its name, each logical table's name and label, each column's
    name, label and descriptions (date shards counted once)."""
    parts = [row["db_id"]]
    seen: set[str] = set()
    for t in row["tables"]:
        logical = SHARD_SUFFIX.sub("", t["name"])
        if logical in seen:
            continue
        seen.add(logical)
        parts += [logical, t.get("label") or ""]
        for c in t["columns"]:
            parts += [c["name"], c.get("label") or "", c.get("description") or "", c.get("value_description") or ""]
    return tokens(" ".join(parts))


def tokens(text: str) -> list[str]:
    """Lower-cased words of ``text``, identifiers split at ``_`` (BM25's tokens)."""
    return [w.lower() for w in words(text.replace("_", " "))]


@dataclass
class Baselines:
    """The two baseline rankings of a repository: BM25 over one document per database
    (:func:`bm25_document`) and cosine to each database's mean table vector."""

    bm25: Any
    bm25_ids: list[str]
    mean_ids: list[str]
    mean_m: np.ndarray

    @classmethod
    def of(cls, rows: list[dict], con) -> Baselines:
        """Both baselines of the databases ``rows`` whose KB ``con`` holds their table vectors."""
        from rank_bm25 import BM25Okapi

        mean_ids, mean_m = mean_table_vectors(con)
        return cls(BM25Okapi([bm25_document(r) for r in rows]), [r["db_id"] for r in rows], mean_ids, mean_m)

    def ranks(self, question: str, vector: np.ndarray, gold: str) -> tuple[int | None, int | None]:
        """The gold database's rank by BM25 and by mean-table cosine (``vector``: the question's)."""
        scores = self.bm25.get_scores(tokens(question))
        sims = self.mean_m @ vector
        return (rank_of([self.bm25_ids[j] for j in np.argsort(-scores, kind="stable")], gold),
                rank_of([self.mean_ids[j] for j in np.argsort(-sims, kind="stable")], gold))


def mean_table_vectors(con: Connection) -> tuple[list[str], np.ndarray]:
    """Each database's mean table-document vector, normalised, as the KB stores them.

    Args:
        con: connection to the KB.

    Returns:
        (database ids, (n, d) unit vectors in that order).
    """
    rows = con.execute("select db_id, embedding from kb_document_embeddings where doc_kind = 'table' "
                       "order by db_id").fetchall()
    dbs: dict[str, list] = {}
    for db, v in rows:
        dbs.setdefault(db, []).append(v)
    ids = sorted(dbs)
    m = np.array([np.mean(np.asarray(dbs[d], dtype=np.float32), axis=0) for d in ids], dtype=np.float32)
    return ids, m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)


def eval_wide(bench: Benchmark, workdir: Path, embedder: str | None, setting: str = "schema-only",
              group_size: int = 6, limit: int | None = None, log: Log = err) -> WideMetrics:
    """Merge the benchmark into wide databases, build their KB and route the test questions with
    dbrouter and the two baselines.

    Args:
        bench: the benchmark.
        workdir: folder of the merged repository and its warehouse.
        embedder: embedder name (grouping, KB and baselines).
        setting: which train questions become examples (:func:`dbrouter.eval.benchmark.setting_split`).
        group_size: mean number of databases merged into one.
        limit: only the first N test questions (smoke runs).
        log: progress output.

    Returns:
        The metrics.
    """
    rows = bench.database_rows()
    merged, owner = wide_repository(rows, embedder, group_size)
    workdir.mkdir(parents=True, exist_ok=True)
    repo = workdir / "databases_wide.jsonl"
    repo.write_text("".join(json.dumps(r) + "\n" for r in merged), encoding="utf-8")
    widths = [sum(len(t["columns"]) for t in r["tables"]) for r in merged]
    log(f"[{bench.name} wide] {len(rows)} databases merged into {len(merged)}: columns per database mean "
        f"{int(np.mean(widths))}, max {max(widths)} (date shards included)")
    examples, questions = setting_split(bench, setting)
    examples = [Question(q.id, q.question, owner[q.db_id], q.sql, q.evidence) for q in examples if q.db_id in owner]
    questions = [Question(q.id, q.question, owner[q.db_id], q.sql, q.evidence) for q in questions if q.db_id in owner]
    if limit:
        questions = questions[:limit]
    warehouse = workdir / "kb.duckdb"
    build_kb(repo, examples, warehouse, embedder, log)

    q_vectors = np.asarray(get_embedder(embedder).encode([q.question for q in questions]), dtype=np.float32)
    con = connect(warehouse, embedder=embedder)
    try:
        baselines = Baselines.of(merged, con)
        first_k = min(con.execute("select route_first_stage_k()").fetchall()[0][0], len(merged))
        ranks: dict[str, list[int | None]] = {"dbrouter": [], "bm25": [], "mean_table": []}
        stage1: list[int | None] = []
        millis: list[float] = []
        started = time.time()
        for i, q in enumerate(questions):
            t0 = time.perf_counter()
            routed = con.execute("select db_id from route_query_ranked_udf(?, 100000) order by rank",
                                 [q.question]).fetchall()
            millis.append((time.perf_counter() - t0) * 1000)
            ranks["dbrouter"].append(rank_of([r[0] for r in routed], q.db_id))
            first = con.execute("select first_stage_rank from route_shortlist(?, 100000) where db_id = ?",
                                [q.question, q.db_id]).fetchall()
            stage1.append(first[0][0] if first else None)
            bm25_rank, mean_rank = baselines.ranks(q.question, q_vectors[i], q.db_id)
            ranks["bm25"].append(bm25_rank)
            ranks["mean_table"].append(mean_rank)
            if (i + 1) % 500 == 0 or i + 1 == len(questions):
                log(f"[{bench.name} wide] routed {i + 1}/{len(questions)} ({time.time() - started:.0f}s): R@1 "
                    + ", ".join(f"{k} {RankMetrics.of(v).r1:.4f}" for k, v in ranks.items()))
    finally:
        con.close()
    n = len(questions) or 1
    recall = lambda d: round(sum(1 for r in stage1 if r is not None and r <= d) / n, 4)  # noqa: E731
    p50, p95 = percentiles_ms(millis)
    return WideMetrics(
        benchmark=bench.name, setting=setting, n=len(questions), databases=len(merged), source_databases=len(rows),
        columns_mean=int(np.mean(widths)), columns_max=max(widths),
        tables_max=max(len(r["tables"]) for r in merged),
        dbrouter=RankMetrics.of(ranks["dbrouter"]), bm25=RankMetrics.of(ranks["bm25"]),
        mean_table=RankMetrics.of(ranks["mean_table"]), first_stage_k=first_k,
        first_stage_recall=recall(first_k), first_stage_recall_10=recall(10),
        p50_ms=p50, p95_ms=p95,
        seconds=round(time.time() - started, 1))


def wide_report(m: WideMetrics, command: str) -> Report:
    """The metrics as a :class:`dbrouter.eval.publish.Report` (block ``eval wide <benchmark> <setting>``).

    Args:
        m: :func:`eval_wide`'s result.
        command: the command line to record.

    Returns:
        The report.
    """
    best = max(m.bm25.r1, m.mean_table.r1)
    rows = "".join(f"| {name} | {r.r1:.4f} | {r.r3:.4f} | {r.r10:.4f} | {r.map:.4f} |\n"
                   for name, r in (("**dbrouter** (`route_query_ranked_udf`)", m.dbrouter),
                                   ("BM25, one document per database", m.bm25),
                                   ("cosine to the mean table vector", m.mean_table)))
    markdown = (
        f"#### eval wide: {m.benchmark}, {m.setting}\n\n"
        f"{m.source_databases} databases merged by domain into {m.databases} wide ones (columns per database: "
        f"mean {m.columns_mean}, max {m.columns_max}, date shards included; up to {m.tables_max} tables); "
        f"{m.n} test questions, gold = the merged database holding the question's database.\n\n"
        f"| ranking | R@1 | R@3 | R@10 | mAP |\n|---|---|---|---|---|\n{rows}\n"
        f"dbrouter R@1 minus the better baseline: {m.dbrouter.r1 - best:+.4f}. Gold database in stage 1's top "
        f"{m.first_stage_k}: {m.first_stage_recall:.4f}; in its top 10: {m.first_stage_recall_10:.4f}. "
        f"route_query_ranked p50 {m.p50_ms} ms, p95 {m.p95_ms} ms.\n\n")
    return Report(key=f"eval wide {m.benchmark} {m.setting}", command=command, data=asdict(m), markdown=markdown,
                  note=f"routing took {m.seconds}s", text=json.dumps(asdict(m)))
