"""`dbrouter eval sql`: execution accuracy (EX) of the generated SQL on a benchmark's test split.

The benchmark's SQLite dumps (``sql/<db_id>.sql``) are loaded once into cached SQLite files
(:func:`dbrouter.eval.dumps.load_dumps`), the KB is built like the routing evals (train questions
as examples, ``domain_statements.jsonl`` when present), and for each test question - its gold
database given, only databases with a loaded dump - the schema is linked (LLM-free), statements
and examples are retrieved (a BIRD question's ``evidence`` is added as a statement), the SQL is
generated against that database (:func:`dbrouter.answer.generate.generate_sql`), and the gold and the
predicted SQL are both executed. A question is correct when the result sets are equal:
order-insensitive unless the gold SQL has an outer ORDER BY (:func:`dbrouter.query.results.result_key`).

Skipped (and counted by reason, never scored): questions of databases without a loaded dump, of
databases whose dump has no rows, and questions whose gold SQL fails on the dump.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dbrouter.answer.generate import generate_sql
from dbrouter.connection import Connection
from dbrouter.console import err
from dbrouter.errors import DbrouterError
from dbrouter.eval.benchmark import Benchmark, Question
from dbrouter.eval.dumps import load_dumps, targets
from dbrouter.eval.kb import Log, build_kb
from dbrouter.eval.publish import Report
from dbrouter.execute.runners import execute
from dbrouter.kb.connect import connect
from dbrouter.linking.columns import render_schema
from dbrouter.linking.linker import link_schema
from dbrouter.query.guard import UnsafeSQL, has_order_by
from dbrouter.query.results import result_key
from dbrouter.retrieval import retrieve_examples, retrieve_statements

COMPARE_ROW_CAP = 100_000
"""Rows compared per result: gold and predicted SQL are run again with this cap for the comparison."""
PROGRESS_EVERY = 5
NO_LLM = ("eval sql needs an LLM to generate SQL: set DBROUTER_LLM_BASE_URL (an OpenAI-compatible endpoint), "
          "DBROUTER_LLM_MODEL and DBROUTER_LLM_API_KEY; nothing was built")


@dataclass
class SqlEvalResult:
    """Execution accuracy of one benchmark run.

    Attributes:
        benchmark: benchmark name.
        model: the LLM model.
        n: questions scored.
        correct: questions whose predicted result equals the gold result.
        ex: ``correct / n``.
        avg_tokens: mean prompt + completion tokens per scored question (cached answers count
            the usage of their original call, so a rerun reports the same cost).
        p50_ms: median wall time per scored question (link, retrieve, generate, vote).
        p95_ms: 95th percentile.
        n_skipped: questions not scored.
        skipped: reason -> count.
        no_sql: scored questions where every candidate failed (counted wrong).
        repair_turns: repair turns over all candidates of all questions.
        repaired: scored questions whose winning candidate needed a repair turn.
        decided_by: how the SQL was chosen -> count.
        llm_calls: LLM answers used.
        candidates: candidates per question.
        seconds: wall time of the question loop.
    """

    benchmark: str
    model: str
    n: int = 0
    correct: int = 0
    ex: float = 0.0
    avg_tokens: float = 0.0
    p50_ms: float = 0.0
    p95_ms: float = 0.0
    n_skipped: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    no_sql: int = 0
    repair_turns: int = 0
    repaired: int = 0
    decided_by: dict[str, int] = field(default_factory=dict)
    llm_calls: int = 0
    candidates: int = 5
    seconds: float = 0.0
    tokens: list[int] = field(default_factory=list, repr=False)
    millis: list[float] = field(default_factory=list, repr=False)

    def skip(self, reason: str) -> None:
        """Count one skipped question."""
        self.n_skipped += 1
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def finish(self) -> None:
        """Compute ``ex``, ``avg_tokens`` and the latency percentiles from the per-question lists."""
        self.ex = round(self.correct / self.n, 4) if self.n else 0.0
        self.avg_tokens = round(sum(self.tokens) / len(self.tokens), 1) if self.tokens else 0.0
        ms = sorted(self.millis)
        self.p50_ms = round(statistics.median(ms), 1) if ms else 0.0
        self.p95_ms = round(ms[max(0, int(round(0.95 * len(ms))) - 1)], 1) if ms else 0.0

    def to_json(self) -> dict:
        """The result as ``dbrouter eval sql --json`` prints it (no per-question lists)."""
        return {k: v for k, v in asdict(self).items() if k not in ("tokens", "millis")}


def _skip_reason(db_id: str, dumps) -> str | None:
    """Why questions of ``db_id`` cannot be scored (None: they can)."""
    if db_id in dumps.failed:
        return "no sql/<db_id>.sql dump" if dumps.failed[db_id].startswith("no dump file") else "dump failed to load"
    if db_id in dumps.empty:
        return "database has no rows"
    return None if db_id in dumps.paths else "no sql/<db_id>.sql dump"


def eval_sql(bench: Benchmark, workdir: Path, embedder: str | None, llm, limit: int | None = None, n: int = 5,
             repair_turns: int = 3, log: Log = err) -> SqlEvalResult:
    """Load the dumps, build the KB, and score the SQL generated for each test question.

    Args:
        bench: the benchmark (needs ``sql/<db_id>.sql`` dumps).
        workdir: evaluation folder (dump cache ``dumps/``, warehouse ``kb.duckdb``).
        embedder: embedder name.
        llm: the :class:`dbrouter.llm.LLMClient` (required).
        limit: only the first N test questions whose database's dump loaded with rows (smoke runs).
        n: candidates per question.
        repair_turns: repair turns per candidate.
        log: progress output.

    Returns:
        The :class:`SqlEvalResult`.

    Raises:
        DbrouterError: no LLM, no question with a loaded dump that has rows, or the LLM failed for
            every candidate of a question (the endpoint is down: the run stops rather than scoring
            failures as wrong).
    """

    if llm is None:
        raise DbrouterError(NO_LLM)
    workdir.mkdir(parents=True, exist_ok=True)
    dumps = load_dumps(bench.path, workdir / "dumps", db_ids=sorted({q.db_id for q in bench.test}), log=log)
    questions = bench.test
    if limit:  # a smoke run scores something: the first questions of databases with rows
        questions = [q for q in bench.test if _skip_reason(q.db_id, dumps) is None][:limit]
    if not any(_skip_reason(q.db_id, dumps) is None for q in questions):
        raise DbrouterError(f"no test question of {bench.path} has a database dump with rows (sql/<db_id>.sql; "
                            f"{len(dumps.failed)} failed or missing, {len(dumps.empty)} without rows): nothing to "
                            "score, nothing was built")
    build_eval_kb(bench, workdir, embedder, log)
    con = connect(workdir / "kb.duckdb", embedder=embedder)
    try:
        return evaluate(con, bench.name, questions, dumps, llm, n, repair_turns, log)
    finally:
        con.close()


def build_eval_kb(bench: Benchmark, workdir: Path, embedder: str | None, log: Log = err) -> Path:
    """Build the evaluation KB ``workdir/kb.duckdb`` like the routing evals (train questions as examples,
    ``domain_statements.jsonl`` when present).

    Args:
        bench: the benchmark.
        workdir: evaluation folder.
        embedder: embedder name.
        log: progress output.

    Returns:
        The warehouse path.
    """
    statements = bench.path / "domain_statements.jsonl"
    log(f"[{bench.name}] building KB: {len(bench.db_ids)} databases, {len(bench.train)} examples")
    build_kb(bench.databases_file, bench.train, workdir / "kb.duckdb", embedder, log,
             statements=statements if statements.is_file() else None)
    return workdir / "kb.duckdb"


def evaluate(con: Connection, name: str, questions: list[Question], dumps, llm, n: int = 5, repair_turns: int = 3,
             log: Log = err) -> SqlEvalResult:
    """Score the SQL generated for each question on its gold database's loaded dump.

    Args:
        con: the evaluation KB (connection from :func:`dbrouter.connect`).
        name: benchmark name (for the result).
        questions: the test questions.
        dumps: the loaded dumps (:func:`dbrouter.eval.dumps.load_dumps`).
        llm: the client.
        n: candidates per question.
        repair_turns: repair turns per candidate.
        log: progress output (every :data:`PROGRESS_EVERY` questions).

    Returns:
        The finished :class:`SqlEvalResult`.

    Raises:
        DbrouterError: the LLM failed for every candidate of a question.
    """

    by_db = targets(dumps)
    result = SqlEvalResult(name, llm.model, candidates=n)
    started = time.time()
    log(f"[{name}] generating SQL for {len(questions)} test questions ({n} candidates, {repair_turns} repair "
        f"turns, model {llm.model})")
    for i, q in enumerate(questions, 1):
        reason = _skip_reason(q.db_id, dumps)
        if reason:
            result.skip(reason)
        else:
            score_question(con, llm, q, by_db[q.db_id], result, n, repair_turns)
        if i % PROGRESS_EVERY == 0 or i == len(questions):
            log(f"  {i}/{len(questions)} questions ({time.time() - started:.0f}s): EX so far "
                f"{result.correct}/{result.n}, {result.n_skipped} skipped")
    result.seconds = round(time.time() - started, 1)
    result.finish()
    return result


def score_question(con: Connection, llm, q: Question, target, result: SqlEvalResult, n: int, repair_turns: int) -> bool | None:
    """Generate the SQL of one question on its gold database and compare results with the gold SQL.

    Args:
        con: the evaluation KB.
        llm: the client (its time budget restarts for this question).
        q: the question (gold database and SQL).
        target: the SQLite target of ``q.db_id``.
        result: updated with the outcome (or a skip).
        n: candidates.
        repair_turns: repair turns per candidate.

    Returns:
        True/False for a scored question, None when it was skipped (gold SQL fails).

    Raises:
        DbrouterError: the LLM failed for every candidate.
    """

    try:
        gold = execute(target, q.sql, row_cap=COMPARE_ROW_CAP)
    except UnsafeSQL:
        gold = None
    if gold is None or not gold.ok:
        result.skip("gold SQL fails on the dump")
        return None
    llm.restart_budget()
    started = time.perf_counter()
    linked = link_schema(con, q.question, q.db_id)
    statements: list = list(retrieve_statements(con, q.question, q.db_id))
    if q.evidence:
        statements.append(q.evidence)
    examples = retrieve_examples(con, q.question, q.db_id)
    gen = generate_sql(llm, target, q.question, render_schema(con, q.db_id, linked.columns), statements, examples,
                       target.dialect, n=n, repair_turns=repair_turns)
    result.millis.append((time.perf_counter() - started) * 1000)
    if gen.sql is None and all((c.error or "").startswith("LLM failed") for c in gen.candidates):
        raise DbrouterError(f"question {q.id}: {gen.candidates[0].error}")
    result.n += 1
    result.tokens.append(gen.prompt_tokens + gen.completion_tokens + linked.prompt_tokens + linked.completion_tokens)
    result.llm_calls += gen.llm_calls + linked.llm_calls
    result.repair_turns += gen.repair_turns
    result.decided_by[gen.decided_by] = result.decided_by.get(gen.decided_by, 0) + 1
    if gen.sql is None:
        result.no_sql += 1
        return False
    winner = next(c for c in gen.candidates if c.index == gen.groups[0][0])
    result.repaired += winner.turns > 1
    predicted = execute(target, gen.sql, row_cap=COMPARE_ROW_CAP)
    ordered = has_order_by(q.sql, target.dialect)
    correct = predicted.ok and result_key(predicted, ordered) == result_key(gold, ordered)
    result.correct += correct
    return correct


def sql_report(r: SqlEvalResult, command: str) -> Report:
    """The result as a :class:`Report` (block ``eval sql <benchmark>``).

    Args:
        r: the result.
        command: the command line to record.

    Returns:
        The report: JSON :meth:`SqlEvalResult.to_json`, a one-line text, the markdown table.
    """
    skipped = ", ".join(f"{k} {v}" for k, v in sorted(r.skipped.items())) or "none"
    decided = ", ".join(f"{k} {v}" for k, v in sorted(r.decided_by.items())) or "-"
    text = (f"{r.benchmark}: EX={r.ex:.4f} ({r.correct}/{r.n}) avg tokens {r.avg_tokens} p50={r.p50_ms}ms "
            f"p95={r.p95_ms}ms; skipped {r.n_skipped} ({skipped}); decided by {decided}; "
            f"{r.repair_turns} repair turns; model {r.model}")
    markdown = (
        f"#### eval sql: {r.benchmark}\n\n"
        f"| n | EX | avg tokens / question | p50 ms | p95 ms | candidates | repair turns | no SQL | skipped |\n"
        f"|---|---|---|---|---|---|---|---|---|\n"
        f"| {r.n} | **{r.ex:.4f}** | {r.avg_tokens} | {r.p50_ms} | {r.p95_ms} | {r.candidates} | {r.repair_turns} "
        f"| {r.no_sql} | {r.n_skipped} |\n\n"
        f"Model {r.model}; SQL decided by: {decided}; questions whose winning candidate was repaired: "
        f"{r.repaired}. Skipped: {skipped}.\n\n")
    return Report(key=f"eval sql {r.benchmark}", command=command, data=r.to_json(), markdown=markdown,
                  note=f"{r.n + r.n_skipped} questions took {r.seconds}s", text=text)
