"""From question to answer (``dbrouter ask``): route, link, retrieve, generate, execute.

1. The question is checked (None, empty, longer than the routing's limit, not UTF-8: an error).
2. Without ``db`` it is routed (:func:`dbrouter.routing.route.route_database`: ``route``, with the
   LLM's phrase mapping when ``llm`` is given, as `dbrouter route` does).
3. Its schema is linked: the LLM-free linker, or the agent (``linker='agent'``, needs an LLM).
4. Domain statements and examples of that database are retrieved.
5. With an LLM the SQL is generated (:func:`dbrouter.answer.generate.generate_sql`: candidates repaired
   with execution feedback, then voted) and its result is the answer. Without one, an example
   that the cascade matched ``exact`` or ``normalized`` answers with its own SQL; otherwise the
   answer says an LLM is needed and how to configure it (``status='needs_llm'``).

SQL only ever runs read-only (:func:`dbrouter.execute.runners.execute`). A database ingested from a
schema file has no data: its SQL is generated for :data:`SCHEMA_ONLY_DIALECT` and not run.
"""

from __future__ import annotations

import base64
import math
from dataclasses import asdict, dataclass, field, replace
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

from dbrouter.answer.generate import generate_sql
from dbrouter.connection import Connection
from dbrouter.console import shown
from dbrouter.errors import DbrouterError
from dbrouter.execute.runners import execute, target_for
from dbrouter.feedback.log import LogEntry
from dbrouter.linking import LINKERS, MAX_COLUMNS
from dbrouter.linking.columns import render_schema
from dbrouter.linking.link import link
from dbrouter.query.guard import UnsafeSQL
from dbrouter.retrieval import require_database, retrieve_examples, retrieve_statements
from dbrouter.routing.route import route_database
from dbrouter.sources.base import NoDataSource
from dbrouter.textin import MAX_QUESTION_CHARS, check_text

SCHEMA_ONLY_DIALECT = "sqlite"
"""SQL for a database without an executable source is written in this dialect (not run)."""
EXAMPLE_STAGES = ("exact", "normalized")
"""Example-cascade stages close enough to answer with the example's SQL when there is no LLM."""
MAX_CANDIDATES = 20
MAX_REPAIR_TURNS = 10
"""Bounds of ``n`` and ``repair_turns``: every candidate and turn is an LLM call."""
NEEDS_LLM = ("SQL generation needs an LLM: set DBROUTER_LLM_BASE_URL (an OpenAI-compatible endpoint, e.g. "
             "http://127.0.0.1:8000/v1), DBROUTER_LLM_MODEL and DBROUTER_LLM_API_KEY; no example of this "
             "database matches the question closely enough (exact or normalized) to answer without one")


@dataclass
class Answer:
    """A question's answer with its provenance.

    Attributes:
        question: the question.
        db_id: the database answered from.
        routed: True when ``db_id`` was chosen by routing (False: given).
        sql: the SQL that ran (or would run), None without one.
        source: ``llm`` (generated), ``example`` (an example's SQL) or None.
        status: ``ok`` (SQL ran), ``not_run`` (SQL written, but the database has no source it runs on),
            ``needs_llm``, ``no_sql`` (every candidate failed) or ``error``.
        columns: result column names.
        rows: result rows (at most the execution row cap).
        total_rows: rows the query returned (``rows`` may hold fewer: ``truncated``).
        truncated: rows were cut at the row cap.
        error: what went wrong (``status='error'``/``no_sql``), None otherwise.
        linked_columns: ``table.column`` names the schema linker chose.
        statements: domain statements used (``statement``, ``expression``, ``snippet``, ``score``).
        examples: examples used (``question``, ``sql``, ``stage``, ``score``).
        llm_calls: LLM answers used (linking + generation; cached answers included).
        llm_failed_calls: LLM calls of generation that failed (not in ``llm_calls``).
        prompt_tokens: their prompt tokens.
        completion_tokens: their completion tokens.
        notes: what a reader should know (no data source, fallbacks, how the SQL was chosen).
        dialect: the SQL dialect the SQL is written in (``postgres``, ``sqlite``...).
        routing: the top routed db_ids (empty when ``db`` was given).
        decided_by: how the SQL was chosen (:attr:`dbrouter.answer.generate.Generation.decided_by`), None otherwise.
    """

    question: str
    db_id: str
    routed: bool
    sql: str | None = None
    source: str | None = None
    status: str = "ok"
    columns: list[str] = field(default_factory=list)
    rows: list[tuple] = field(default_factory=list)
    total_rows: int = 0
    truncated: bool = False
    error: str | None = None
    linked_columns: list[str] = field(default_factory=list)
    statements: list[dict] = field(default_factory=list)
    examples: list[dict] = field(default_factory=list)
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    notes: list[str] = field(default_factory=list)
    routing: list[str] = field(default_factory=list)
    decided_by: str | None = None
    dialect: str = ""
    llm_failed_calls: int = 0

    def log_entry(self, base: LogEntry) -> LogEntry:
        """The query-log entry of this answer (:func:`dbrouter.feedback.log.record`).

        Args:
            base: what the client knew before asking (source, question, user, the database given).

        Returns:
            ``base`` with the routing, the database answered from, the SQL, the status and error.
        """
        return replace(base, ranking=list(self.routing or []), chosen=self.db_id or base.chosen, sql=self.sql,
                       status=self.status, error=self.error)

    def to_json(self) -> dict[str, Any]:
        """The answer as a JSON-safe dict (bytes, dates, Decimal and non-finite floats converted).

        Returns:
            Every field; ``rows`` as lists of JSON values.
        """
        data = asdict(self)
        data["rows"] = [[json_value(v) for v in row] for row in self.rows]
        return data

    def set_result(self, result) -> None:
        """Copy an execution result (:class:`dbrouter.query.results.QueryResult`) into the answer."""
        self.columns, self.rows = list(result.columns), [tuple(r) for r in result.rows]
        self.total_rows, self.truncated = result.total_rows, result.truncated
        if not result.ok:
            self.status, self.error = "error", result.error


def json_value(value: Any) -> Any:
    """A JSON-safe form of one result value.

    Args:
        value: a value from a result row.

    Returns:
        The value itself for str/int/bool/None and finite floats; Decimal as an int or float;
        dates and times in ISO format; bytes as UTF-8 text when they decode, else
        ``base64:<data>``; NaN/inf as their names; anything else as ``str(value)``.
    """
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            return str(value)
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return "base64:" + base64.b64encode(raw).decode("ascii")
    return str(value)


def check_question(question: Any) -> str:
    """The question, stripped, when it can be answered.

    Args:
        question: the user's question.

    Returns:
        The stripped question.

    Raises:
        DbrouterError: None, not text, empty or whitespace only, longer than
            :data:`MAX_QUESTION_CHARS`, or not valid UTF-8.
    """
    if question is None:
        raise DbrouterError('no question given: pass it as text, e.g. dbrouter ask "How many singers are there?"')
    if not isinstance(question, str):
        raise DbrouterError(f"the question must be text, not {type(question).__name__}")
    text = check_text(question, "the question").strip()
    if not text:
        raise DbrouterError('the question is empty: pass it as text, e.g. dbrouter ask "How many singers are there?"')
    if len(text) > MAX_QUESTION_CHARS:
        raise DbrouterError(f"the question is {len(text):,} characters long; questions are read up to "
                            f"{MAX_QUESTION_CHARS:,} (dbrouter__max_question_chars): ask a shorter question")
    return text


def ask(con: Connection, question: str | None, db: str | None = None, linker: str = "retrieval", llm=None, n: int = 5,
        repair_turns: int = 3, max_columns: int = MAX_COLUMNS) -> Answer:
    """Answer ``question`` with SQL on the database that can answer it.

    Args:
        con: connection from :func:`dbrouter.connect`.
        question: the question.
        db: answer from this database (None = route).
        linker: ``retrieval`` (LLM-free) or ``agent`` (needs ``llm``; without one the retrieval
            linker is used and a note says so).
        llm: an :class:`dbrouter.llm.LLMClient`, or None.
        n: SQL candidates to sample.
        repair_turns: repair turns per candidate.
        max_columns: most columns the LLM-free linker hands on (at least 1).

    Returns:
        The :class:`Answer` (``status`` says whether it holds a result).

    Raises:
        DbrouterError: a bad question, an unknown ``db`` or ``linker``, bad ``n``/``repair_turns``/
            ``max_columns``, or no database to route to.
    """

    text = check_question(question)
    if linker not in LINKERS:
        raise DbrouterError(f"unknown linker {linker!r}: use one of {', '.join(LINKERS)}")
    if not (1 <= n <= MAX_CANDIDATES and 0 <= repair_turns <= MAX_REPAIR_TURNS):
        raise DbrouterError(f"--candidates must be 1 to {MAX_CANDIDATES} and --repair-turns 0 to {MAX_REPAIR_TURNS} "
                            f"(got {n} and {repair_turns})")
    if isinstance(max_columns, bool) or not isinstance(max_columns, int) or max_columns < 1:
        raise DbrouterError(f"--max-columns must be a whole number of at least 1 (got {max_columns!r})")
    answer = Answer(text, db or "", routed=db is None)
    if db is None:
        _route(con, answer, llm)
    else:
        require_database(con, db)
    target = _target(con, answer)
    linked = _link(con, llm, target, answer, linker, max_columns)
    statements, examples = _retrieve(con, answer)
    if llm is None:
        _answer_without_llm(answer, target, examples)
    else:
        _answer_with_llm(con, answer, llm, target, linked, statements, examples, n, repair_turns)
    return answer


def _route(con: Connection, answer: Answer, llm) -> None:
    """Route the question as `dbrouter route` does (with the LLM's phrase mapping when there is one);
    an abstention is an error naming the closest databases. The mapping's LLM answers are counted."""
    before = (llm.stats.calls + llm.stats.cache_hits, llm.stats.prompt_tokens, llm.stats.completion_tokens) if llm else None
    answer.db_id, result = route_database(con, answer.question, "answer from", llm=llm)
    answer.routing = [c.db_id for c in result.candidates]
    if llm is not None and before is not None:
        answer.llm_calls += llm.stats.calls + llm.stats.cache_hits - before[0]
        answer.prompt_tokens += llm.stats.prompt_tokens - before[1]
        answer.completion_tokens += llm.stats.completion_tokens - before[2]
    if result.mapping is not None and result.mapping.fallback:
        answer.notes.append(f"routing: the LLM's phrase mapping fell back to the embedding mapper for "
                            f"{', '.join(result.mapping.fallback)}")


def _target(con: Connection, answer: Answer):
    """The database's target, or None (with a note, and the dialect its SQL is still written in)."""
    try:
        target = target_for(con, answer.db_id)
    except NoDataSource as exc:
        answer.notes.append(f"SQL is not run: {exc}")
        answer.dialect = exc.dialect or SCHEMA_ONLY_DIALECT
        return None
    answer.dialect = target.dialect
    return target


def _link(con: Connection, llm, target, answer: Answer, linker: str, max_columns: int):

    linked = link(con, answer.question, answer.db_id, linker, llm, target, max_columns=max_columns)
    answer.linked_columns = linked.names
    answer.notes.extend(f"linking: {note}" for note in linked.notes)
    answer.llm_calls += linked.llm_calls
    answer.prompt_tokens += linked.prompt_tokens
    answer.completion_tokens += linked.completion_tokens
    return linked


def _retrieve(con: Connection, answer: Answer) -> tuple[list, list]:

    statements = retrieve_statements(con, answer.question, answer.db_id)
    examples = retrieve_examples(con, answer.question, answer.db_id)
    answer.statements = [{"statement": s.statement, "expression": s.expression, "snippet": s.snippet,
                          "score": s.score} for s in statements]
    answer.examples = [{"question": e.question, "sql": e.sql, "stage": e.stage, "score": e.score} for e in examples]
    return statements, examples


def _answer_without_llm(answer: Answer, target, examples: list) -> None:
    """Answer with a closely matching example's SQL, or say that an LLM is needed."""

    close = [e for e in examples if e.stage in EXAMPLE_STAGES]
    if not close:
        answer.status, answer.error = "needs_llm", NEEDS_LLM
        return
    answer.sql, answer.source = close[0].sql, "example"
    answer.notes.append(f"no LLM configured: answered with the SQL of the example {close[0].question!r} "
                        f"(matched at stage {close[0].stage})")
    if target is None:
        answer.status = "not_run"
        return
    try:
        answer.set_result(execute(target, answer.sql))
    except UnsafeSQL as exc:
        answer.status, answer.error = "error", str(exc)


def _answer_with_llm(con: Connection, answer: Answer, llm, target, linked, statements, examples, n: int,
                     repair_turns: int) -> None:
    """Generate the SQL (candidates, repair, vote) and fill the answer with the winner's result."""

    gen = generate_sql(llm, target, answer.question, render_schema(con, answer.db_id, linked.columns),
                       statements, examples, answer.dialect, n=n, repair_turns=repair_turns)
    answer.llm_calls += gen.llm_calls
    answer.llm_failed_calls += gen.failed_calls
    answer.prompt_tokens += gen.prompt_tokens
    answer.completion_tokens += gen.completion_tokens
    answer.notes.extend(gen.notes)
    answer.decided_by = gen.decided_by if gen.sql else None
    if gen.sql is None:
        errors = [c.error or "" for c in gen.candidates]
        if errors and all(e.startswith("LLM failed") for e in errors):
            answer.status, answer.error = "error", errors[0]
        else:
            answer.status, answer.error = "no_sql", (gen.notes[-1] if gen.notes else "no candidate SQL succeeded")
        return
    answer.sql, answer.source = gen.sql, "llm"
    voters = sum(len(g) for g in gen.groups)
    answer.notes.append(f"SQL chosen by {gen.decided_by} vote: {len(gen.groups[0])} of {voters} working "
                        f"candidates agree ({len(gen.candidates)} sampled, {gen.repair_turns} repair turns)")
    if gen.result is not None:
        answer.set_result(gen.result)
    elif target is None:
        answer.status = "not_run"


def _cell(value: Any, width: int = 40) -> str:

    text = shown(json_value(value)).replace("\n", " ")
    return text if len(text) <= width else text[: width - 3] + "..."


def format_table(columns: list[str], rows: list[tuple], total_rows: int, max_rows: int = 20) -> str:
    """A plain-text table of the first ``max_rows`` rows and how many more there are.

    Args:
        columns: column names.
        rows: the rows held.
        total_rows: rows the query returned.
        max_rows: rows to show.

    Returns:
        The table text (``(no rows)`` for an empty result).
    """
    if not rows:
        return "(no rows)" if columns else "(no result)"
    cells = [[_cell(c) for c in columns]] + [[_cell(v) for v in row] for row in rows[:max_rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    lines = [" | ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    more = max(total_rows, len(rows)) - min(len(rows), max_rows)
    if more > 0:
        lines.append(f"... {more} more row{'s' if more != 1 else ''}")
    return "\n".join(lines)


def format_answer(answer: Answer) -> str:
    """The answer as ``dbrouter ask`` prints it: SQL, result table, provenance.

    Args:
        answer: the answer.

    Returns:
        Multi-line text (control characters of user and LLM text escaped).
    """

    out = []
    if answer.sql:
        how = {"llm": f"generated, {answer.decided_by} vote", "example": "from an example"}.get(answer.source or "", "")
        out += [f"SQL ({how}):" if how else "SQL:", shown(answer.sql), ""]
        out += [format_table(answer.columns, answer.rows, answer.total_rows), ""]
    if answer.error:
        out += [f"{'no answer' if answer.status != 'error' else 'error'}: {shown(answer.error)}", ""]
    routed = (f"routed; top {len(answer.routing)}: {', '.join(answer.routing)}" if answer.routed
              else "given with --db")
    out.append(f"database: {answer.db_id} ({routed})")
    out.append(f"linked columns ({len(answer.linked_columns)}): {', '.join(answer.linked_columns) or '-'}")
    out.append(f"statements used: {len(answer.statements)}")
    out += [f"  - {shown(s['statement'])}" for s in answer.statements]
    out.append(f"examples used: {len(answer.examples)}")
    out += [f"  - [{e['stage']}] {shown(e['question'])}" for e in answer.examples]
    failed = f", {answer.llm_failed_calls} failed" if answer.llm_failed_calls else ""
    out.append(f"LLM: {answer.llm_calls} calls answered{failed}, {answer.prompt_tokens} prompt + "
               f"{answer.completion_tokens} completion tokens")
    out += [f"note: {shown(n)}" for n in answer.notes]
    return "\n".join(out)
