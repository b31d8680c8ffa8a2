"""`dbrouter eval statements`: evidence retrieval on a benchmark with domain statements.

The KB holds the benchmark's ``domain_statements.jsonl`` (built from *train* evidence only).
For each test question with evidence, its gold statements are the ``;``-separated parts of its
evidence; a gold statement is *in the repository* when a stored statement has the same
canonical form (constants replaced, case and spacing folded) - only those can be retrieved, and
questions with none are counted but not scored. Three retrievers rank the question's own
database's statements: SbR (the warehouse's ``retrieve_statements``), whole-question cosine
(same statement vectors) and BM25 (``rank_bm25`` over the canonical statement texts).
Metrics: recall@K and F1@K for K = number of gold statements (where P = R = F1), 4 and 10
(the question's score counts each distinct gold statement found in the top K once).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dbrouter.connection import Connection
from dbrouter.console import err
from dbrouter.errors import BenchmarkError
from dbrouter.eval.benchmark import Benchmark, Question
from dbrouter.eval.kb import Log, build_kb
from dbrouter.eval.publish import Report
from dbrouter.kb.connect import connect
from python_udfs.embeddings import get_embedder
from python_udfs.text import canonicalize, words

METHODS = ("sbr", "cosine", "bm25")


def statement_key(text: str) -> str:
    """Canonical comparison key of a statement."""
    canon = canonicalize(text) or ""
    return " ".join(re.sub(r"[\"'‘’“”`]", "", canon).lower().strip(" .;").split())


def gold_statements(evidence: str | None) -> list[str]:
    """The statements of one question's evidence (``;``-separated)."""
    return [p.strip() for p in (evidence or "").split(";") if p.strip()]


@dataclass
class Scores:
    """Sums of one retriever's per-question scores; :meth:`mean` averages them."""

    n: int = 0
    recall_k: float = 0.0
    f1_k: float = 0.0
    recall_4: float = 0.0
    recall_10: float = 0.0
    f1_4: float = 0.0
    f1_10: float = 0.0

    @staticmethod
    def _f1(hits: int, k: int, n_gold: int) -> float:
        prec, rec = hits / k, hits / n_gold
        return 0.0 if hits == 0 else 2 * prec * rec / (prec + rec)

    def add(self, ranked_keys: list[str], gold: set[str]) -> None:
        """Score one question: ``ranked_keys`` are the retrieved statements' keys, best first."""
        g = len(gold)
        hits = lambda m: len(set(ranked_keys[:m]) & gold)  # noqa: E731
        self.n += 1
        self.recall_k += hits(g) / g
        self.f1_k += self._f1(hits(g), g, g)
        self.recall_4 += hits(4) / g
        self.recall_10 += hits(10) / g
        self.f1_4 += self._f1(hits(4), 4, g)
        self.f1_10 += self._f1(hits(10), 10, g)

    def mean(self) -> dict[str, float]:
        """The mean of each score over the questions added, rounded to 4 digits."""
        n = self.n or 1
        return {"recall_at_gold": round(self.recall_k / n, 4), "f1": round(self.f1_k / n, 4),
                "recall_at_4": round(self.recall_4 / n, 4), "recall_at_10": round(self.recall_10 / n, 4),
                "f1_at_4": round(self.f1_4 / n, 4), "f1_at_10": round(self.f1_10 / n, 4)}


def _build(bench: Benchmark, workdir: Path, embedder: str | None, log: Log) -> Path:
    statements = bench.path / "domain_statements.jsonl"
    if not statements.is_file():
        raise BenchmarkError(f"{statements} not found: this benchmark has no domain statements")
    wh = workdir / "kb.duckdb"
    workdir.mkdir(parents=True, exist_ok=True)
    build_kb(bench.databases_file, [], wh, embedder, log, statements=statements)
    return wh


Repository = dict[str, list[tuple[str, str, np.ndarray]]]


def _repository(con: Connection) -> Repository:
    """The KB's statements per database: (statement_id, text, vector)."""
    repo: Repository = {}
    for db, sid, text, vec in con.execute(
            "select s.db_id, s.statement_id, s.statement_text, e.embedding from kb_domain_statements s "
            "join kb_document_embeddings e on e.document_id = 'statement:' || s.statement_id "
            "order by s.db_id, s.statement_id").fetchall():  # fixed order: the baselines break ties by position
        repo.setdefault(db, []).append((sid, text, np.asarray(vec, dtype=np.float32)))
    return repo


def _scored_questions(questions: list[Question], repo: Repository, key_of: dict[str, str]
                      ) -> tuple[list[Question], list[tuple[Question, set[str]]]]:
    """The test questions with evidence, and those whose gold statements are in the repository.

    Args:
        questions: the test split.
        repo: :func:`_repository`.
        key_of: statement_id -> :func:`statement_key`.

    Returns:
        (questions with evidence, [(question, its gold keys found in its database's statements)]).
    """
    with_evidence = [q for q in questions if gold_statements(q.evidence)]
    scored = []
    for q in with_evidence:
        keys = {statement_key(g) for g in gold_statements(q.evidence)}
        gold = keys & {key_of[sid] for sid, _, _ in repo.get(q.db_id, [])}
        if gold:
            scored.append((q, gold))
    return with_evidence, scored


def eval_statements(bench: Benchmark, workdir: Path, embedder: str | None, limit: int | None = None,
                    log: Log = err) -> dict:
    """Run the three retrievers over the test questions with evidence.

    Args:
        bench: benchmark with domain_statements.jsonl.
        workdir: evaluation folder.
        embedder: embedder name.
        limit: only the first N scored questions (smoke runs).
        log: progress output.

    Returns:
        Flat metrics dict (``sbr_f1``, ``cosine_f1``, ``bm25_f1``, ``sbr_recall_at_4``, ...).
    """
    from rank_bm25 import BM25Okapi

    started = time.time()
    con = connect(_build(bench, workdir, embedder, log), embedder=embedder)
    try:
        repo = _repository(con)
        key_of = {sid: statement_key(text) for items in repo.values() for sid, text, _ in items}
        bm25 = {db: BM25Okapi([[w.lower() for w in words(canonicalize(t))] or ["_"] for _, t, _ in items])
                for db, items in repo.items()}
        with_evidence, scored = _scored_questions(bench.test, repo, key_of)
        scored = scored[:limit] if limit else scored
        log(f"{len(with_evidence)} test questions with evidence; {len(scored)} have a gold statement in the repository")
        scores = {m: Scores() for m in METHODS}
        qvecs = get_embedder(embedder).encode([canonicalize(q.question) or "" for q, _ in scored]) if scored else []
        sbr_ms = []
        for i, (q, gold) in enumerate(scored):
            items = repo[q.db_id]
            t = time.perf_counter()
            rows = con.execute("select statement_id from retrieve_statements(?, ?, 10)",
                               [q.question, q.db_id]).fetchall()
            sbr_ms.append((time.perf_counter() - t) * 1000)
            scores["sbr"].add([key_of[r[0]] for r in rows], gold)
            sims = np.stack([v for _, _, v in items]) @ qvecs[i]
            scores["cosine"].add([key_of[items[j][0]] for j in np.argsort(-sims)[:10]], gold)
            bm = bm25[q.db_id].get_scores([w.lower() for w in words(canonicalize(q.question))])
            scores["bm25"].add([key_of[items[j][0]] for j in np.argsort(-bm, kind="stable")[:10]], gold)
            if (i + 1) % 200 == 0:
                log(f"  {i + 1}/{len(scored)} questions, SbR F1 so far {scores['sbr'].mean()['f1']}")
    finally:
        con.close()
    out: dict = {"benchmark": bench.name, "n": len(scored), "n_with_evidence": len(with_evidence),
                 "statements": sum(len(v) for v in repo.values())}
    for m in METHODS:
        for k, v in scores[m].mean().items():
            out[f"{m}_{k}"] = v
    sbr_ms.sort()
    out["sbr_p50_ms"] = round(sbr_ms[len(sbr_ms) // 2], 1) if sbr_ms else None
    out["seconds"] = round(time.time() - started, 1)
    return out


def statements_report(r: dict, command: str) -> Report:
    """The metrics as a :class:`Report` (block ``eval statements <benchmark>``).

    Args:
        r: :func:`eval_statements`'s result.
        command: the command line to record.

    Returns:
        The report (JSON: ``r``; text: the markdown table).
    """
    rows = "\n".join(
        f"| {m} | {r[f'{m}_f1']:.4f} | {r[f'{m}_recall_at_gold']:.4f} | {r[f'{m}_recall_at_4']:.4f} | "
        f"{r[f'{m}_f1_at_4']:.4f} | {r[f'{m}_recall_at_10']:.4f} | {r[f'{m}_f1_at_10']:.4f} |"
        for m in METHODS)
    markdown = (
        f"#### eval statements: {r['benchmark']}\n\n"
        f"{r['n']} test questions scored (of {r['n_with_evidence']} with evidence; the others have no gold "
        f"statement in the train-built repository of {r['statements']} statements).\n\n"
        f"| retriever | F1 (K = #gold) | recall@#gold | recall@4 | F1@4 | recall@10 | F1@10 |\n"
        f"|---|---|---|---|---|---|---|\n{rows}\n\n"
        f"SbR `retrieve_statements` p50 {r['sbr_p50_ms']} ms per question.\n\n")
    return Report(key=f"eval statements {r['benchmark']}", command=command, data=r, markdown=markdown,
                  note=f"{r['seconds']}s")
