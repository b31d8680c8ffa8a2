"""SQL generation: N sampled candidates, each repaired with execution feedback, then a vote.

1. **Sampling.** ``n`` candidates are asked with the same prompt at ``temperature`` (sample index
   ``0..n-1``, so each is its own cached answer and a rerun replays them from the cache).
2. **Repair.** Each candidate's SQL (the one ```sql block of the reply) runs read-only on the
   target (:func:`dbrouter.execute.runners.execute`); an error, a refusal (:class:`UnsafeSQL`) or a
   malformed reply is sent back in the same conversation, up to ``repair_turns`` times.
3. **Vote.** Candidates that still fail do not vote. The others are grouped by their execution
   result (:func:`dbrouter.query.results.result_key`, ordered when the SQL has an outer ORDER BY); the
   largest group wins (``majority``; ``single`` when every voter agrees). A tie between the largest
   groups is broken by pairwise LLM comparisons of their first candidates: each win is a point,
   most points wins (``pairwise``); still tied, the group whose first candidate has the lowest
   index wins (the first sample: deterministic, and the cache replays it).

Without a target (a schema-only database) nothing runs: the SQL is only checked to be one
read-only statement, and the vote is by normalised SQL text (``text``).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from dbrouter import settings
from dbrouter.execute.runners import execute
from dbrouter.llm import Completion, LLMClient, LLMUnavailable
from dbrouter.query.guard import DIALECTS, UnsafeSQL, check_read_only, has_order_by
from dbrouter.query.results import format_observation, result_key

DIALECT_NAMES = DIALECTS
_FENCE = re.compile(r"```[ \t]*sql[ \t]*\n?(.*?)```", re.IGNORECASE | re.DOTALL)
_CHOICE = re.compile(r"^\W*(?:answer|winner|choice|better)?\W*\b([AB])\b\W*$", re.IGNORECASE)


@dataclass
class Candidate:
    """One sampled candidate after its repair turns.

    Attributes:
        index: the sample index (0..n-1).
        sql: the SQL of its last well-formed reply (in the generation dialect), None if none.
        turns: LLM answers in its conversation (1 = the first answer was kept; repairs = turns - 1).
        result: the execution result of ``run_sql`` (None: not run).
        error: why it still fails (malformed reply, refusal, database error, LLM failure), None if fine.
        run_sql: ``sql`` transpiled to the target's dialect (the SQL that ran).
    """

    index: int
    sql: str | None
    turns: int
    result: Any = None
    error: str | None = None
    run_sql: str | None = None

    @property
    def ok(self) -> bool:
        """True when the candidate has SQL that ran (or, without a target, passed the check)."""
        return self.sql is not None and self.error is None


@dataclass
class Generation:
    """The generated SQL for one question and how it was chosen.

    Attributes:
        sql: the winning SQL as it runs on the target (None when every candidate failed).
        result: its execution result (None without a target or without a winner).
        candidates: every candidate.
        groups: candidate indices per voting group, the winner first, then by size and first index.
        decided_by: ``majority``, ``pairwise``, ``single`` (one group), ``text`` (no target) or
            ``none`` (no candidate voted).
        llm_calls: LLM answers used for this question (cached answers included).
        prompt_tokens: their prompt tokens (a cached answer counts the usage of its original call).
        completion_tokens: their completion tokens.
        notes: what happened that a reader should know (failures, no target, ties).
        failed_calls: LLM calls that failed (unreachable endpoint, timeout, bad answer) and were not counted.
    """

    sql: str | None
    result: Any
    candidates: list[Candidate]
    groups: list[list[int]]
    decided_by: str
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    notes: list[str] = field(default_factory=list)
    failed_calls: int = 0

    def count(self, done: Completion) -> None:
        """Add one LLM answer to the question's accounting."""
        self.llm_calls += 1
        self.prompt_tokens += done.prompt_tokens
        self.completion_tokens += done.completion_tokens

    @property
    def repair_turns(self) -> int:
        """Repair turns over all candidates."""
        return sum(max(0, c.turns - 1) for c in self.candidates)


# ---------------------------------------------------------------------------------------- prompts

def dialect_name(dialect: str) -> str:
    """The name prompts give a sqlglot dialect (``PostgreSQL`` for ``postgres``).

    Raises:
        ValueError: an unsupported dialect.
    """
    try:
        return DIALECT_NAMES[dialect]
    except KeyError:
        raise ValueError(f"unsupported SQL dialect {dialect!r}: use one of {', '.join(DIALECT_NAMES)}") from None


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def system_prompt(dialect: str) -> str:
    """The system prompt of SQL generation for ``dialect``."""
    name = dialect_name(dialect)
    return (f"You are an expert {name} SQL writer. Write one {name} query that answers the user's question on "
            "the given database schema, using the domain knowledge and the examples when they apply. The query "
            "only reads data: a single SELECT statement (WITH and UNION allowed); never INSERT, UPDATE, DELETE, "
            "CREATE, DROP, ALTER, ATTACH, PRAGMA or several statements. Use only tables and columns of the schema. "
            "Reply with the SQL in exactly one ```sql fenced code block.")


def user_prompt(question: str, schema_text: str, statements: list, examples: list, dialect: str) -> str:
    """The user prompt: dialect, schema, domain statements, examples, then the question.

    Args:
        question: the question.
        schema_text: the linked schema (:func:`dbrouter.linking.columns.render_schema`).
        statements: retrieved statements (``statement``, ``expression``, ``snippet``) or strings.
        examples: retrieved examples (``question``, ``sql``).
        dialect: the sqlglot dialect the SQL is written in.

    Returns:
        The prompt text; the last line is ``QUESTION: <question>``.
    """
    parts = [f"SQL DIALECT: {dialect_name(dialect)}", f"DATABASE SCHEMA:\n{schema_text.strip() or '(none)'}"]
    if statements:
        lines = []
        for st in statements:
            text = st if isinstance(st, str) else _field(st, "statement")
            expr, snippet = (None, None) if isinstance(st, str) else (_field(st, "expression"), _field(st, "snippet"))
            lines.append(f"- {text}" + (f"\n  ('{expr}' means: {snippet})" if expr and snippet else ""))
        parts.append("DOMAIN KNOWLEDGE:\n" + "\n".join(lines))
    if examples:
        parts.append("EXAMPLES:\n" + "\n\n".join(f"Example question: {_field(e, 'question')}\nSQL: {_field(e, 'sql')}"
                                                 for e in examples))
    parts.append("Reply with the SQL in exactly one ```sql fenced code block.")
    parts.append(f"QUESTION: {question}")
    return "\n\n".join(parts)


def parse_sql(text: str) -> tuple[str | None, str | None]:
    """The SQL of a reply's one ```sql block.

    Args:
        text: the LLM's reply.

    Returns:
        (sql, None), or (None, what is wrong with the format).
    """
    blocks = [b.strip() for b in _FENCE.findall(text or "")]
    if not blocks:
        return None, "the reply has no ```sql fenced code block"
    if len(blocks) > 1:
        return None, f"the reply has {len(blocks)} ```sql blocks; give exactly one"
    if not blocks[0]:
        return None, "the ```sql block is empty"
    return blocks[0], None


def _feedback(problem: str) -> str:
    return (f"{problem}\n\nFix the query so that it answers the question. Reply with the corrected SQL in exactly "
            "one ```sql fenced code block.")


# -------------------------------------------------------------------------------------- candidates

def transpile(sql: str, read: str, write: str) -> str:
    """``sql`` written for ``read`` as ``write`` SQL (unchanged when the dialects are equal).

    Raises:
        ValueError: sqlglot cannot parse it (the message is sent back to the LLM).
    """
    if read == write:
        return sql
    import sqlglot

    try:
        out = sqlglot.transpile(sql, read=read, write=write)
    except sqlglot.errors.SqlglotError as exc:
        raise ValueError(f"the SQL cannot be parsed as {dialect_name(read)}: {exc}") from exc
    if len(out) != 1:
        raise ValueError(f"the reply holds {len(out)} statements; give exactly one SELECT")
    return out[0]


SQL_BUDGET = 120.0
"""Seconds all executions of one question's candidates may take together (``$DBROUTER_ASK_SQL_BUDGET``);
each execution also stops at its own timeout. The LLM calls have their own budget (``DBROUTER_LLM_BUDGET``)."""


def sql_budget() -> float:
    """:data:`SQL_BUDGET`, or ``$DBROUTER_ASK_SQL_BUDGET`` when set.

    Raises:
        DbrouterError: the variable is not a positive number of seconds.
    """
    return settings.seconds("DBROUTER_ASK_SQL_BUDGET")


def _check(target, sql: str, dialect: str, timeout: float, deadline: float | None = None
           ) -> tuple[str, Any, str | None]:
    """Run (or, without a target, only check) one SQL: (run_sql, result, problem or None); the run
    stops at ``timeout`` or at ``deadline`` (``time.monotonic()``), whichever comes first."""

    try:
        run_sql = transpile(sql, dialect, target.dialect if target is not None else dialect)
        if target is None:
            check_read_only(run_sql, dialect)
            return run_sql, None, None
        left = timeout if deadline is None else min(timeout, deadline - time.monotonic())
        if left <= 0:
            return run_sql, None, "the question's SQL time budget (DBROUTER_ASK_SQL_BUDGET) is spent"
        timeout = left
        result = execute(target, run_sql, timeout=timeout)
    except UnsafeSQL as exc:
        return sql, None, str(exc)
    except ValueError as exc:
        return sql, None, str(exc)
    if result.timed_out:
        return run_sql, result, f"the query did not finish within {timeout:g} s; write a cheaper query"
    if not result.ok:
        return run_sql, result, f"the query failed on the database:\n{format_observation(result)}"
    return run_sql, result, None


def run_candidate(llm: LLMClient, gen: Generation, target, messages: list[dict], index: int, dialect: str,
                  repair_turns: int, temperature: float, timeout: float = 30.0,
                  deadline: float | None = None) -> Candidate:
    """Sample one candidate and repair it with execution feedback.

    Args:
        llm: the client.
        gen: the question's generation (its token accounting is updated).
        target: the :class:`dbrouter.sources.base.Target` to run on, or None (check only).
        messages: system + user prompt (copied, then extended with the turns).
        index: the sample index.
        dialect: the dialect the SQL is written in.
        repair_turns: how many times a failure is sent back.
        temperature: sampling temperature.
        timeout: seconds per execution.
        deadline: ``time.monotonic()`` after which no SQL runs (the question's budget), or None.

    Returns:
        The :class:`Candidate` (``error`` set when it still fails).
    """
    convo = list(messages)
    cand = Candidate(index, None, 0)
    for _turn in range(1 + max(0, repair_turns)):
        try:
            done = llm.chat(convo, temperature=temperature, sample=index)
        except LLMUnavailable as exc:
            gen.failed_calls += 1
            cand.error = f"LLM failed: {exc}"
            return cand
        gen.count(done)
        cand.turns += 1
        sql, problem = parse_sql(done.text)
        if sql is not None:
            cand.sql = sql
            cand.run_sql, cand.result, problem = _check(target, sql, dialect, timeout, deadline)
        cand.error = problem
        if problem is None or (deadline is not None and time.monotonic() >= deadline):
            return cand
        convo += [{"role": "assistant", "content": done.text}, {"role": "user", "content": _feedback(problem)}]
    return cand


# ------------------------------------------------------------------------------------------ voting

def normalise_sql(sql: str, dialect: str) -> str:
    """A canonical text of ``sql`` for voting without execution (sqlglot, else lower-cased words)."""
    import sqlglot

    try:
        return sqlglot.transpile(sql, read=dialect, write=dialect, pretty=False)[0].lower()
    except (sqlglot.errors.SqlglotError, IndexError):
        return " ".join(sql.lower().replace(";", " ").split())


def vote_groups(candidates: list[Candidate], target, dialect: str) -> list[list[int]]:
    """Group the candidates that succeeded by result (by normalised SQL without a target).

    Returns:
        Candidate indices per group, largest group first, then by first index.
    """

    groups: dict[Any, list[int]] = {}
    for c in candidates:
        if not c.ok:
            continue
        if target is None:
            key = normalise_sql(c.run_sql or c.sql or "", dialect)
        else:
            key = ("result", result_key(c.result, has_order_by(c.run_sql or "", target.dialect)))
        groups.setdefault(key, []).append(c.index)
    return sorted(groups.values(), key=lambda g: (-len(g), g[0]))


def _parse_choice(text: str) -> str | None:
    """``A`` or ``B`` when the reply names exactly one of them on a line of its own (or alone)."""
    found = {m.group(1).upper() for line in (text or "").splitlines() if (m := _CHOICE.match(line.strip()))}
    return found.pop() if len(found) == 1 else None


def compare_prompt(question: str, schema_text: str, a: Candidate, b: Candidate) -> list[dict]:
    """The pairwise comparison conversation of candidates ``a`` and ``b``."""

    def shown(c: Candidate) -> str:
        result = format_observation(c.result) if c.result is not None else "(not run)"
        return f"```sql\n{c.run_sql or c.sql}\n```\nRESULT:\n{result}"

    system = ("You compare two SQL queries written for the same question. Decide which one answers the question "
              "correctly, judging by the schema, the SQL and the results. Reply with one letter: A or B.")
    user = (f"DATABASE SCHEMA:\n{schema_text.strip() or '(none)'}\n\nQUESTION: {question}\n\n"
            f"CANDIDATE A:\n{shown(a)}\n\nCANDIDATE B:\n{shown(b)}\n\nWhich candidate is correct? Reply A or B.")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def break_tie(llm: LLMClient, gen: Generation, question: str, schema_text: str,
              tied: list[list[int]]) -> list[int]:
    """Pick one of the tied groups by pairwise comparisons of their first candidates.

    Each pair is asked once (A = the group with the lower first index); the winner gets a point.
    A malformed answer is asked again once without the cache; still malformed, or the LLM failing,
    gives no point (noted). Most points wins; a tie stays with the lowest first index.

    Returns:
        The winning group.
    """
    by_index = {c.index: c for c in gen.candidates}
    points = [0] * len(tied)
    for i in range(len(tied)):
        for j in range(i + 1, len(tied)):
            convo = compare_prompt(question, schema_text, by_index[tied[i][0]], by_index[tied[j][0]])
            choice = None
            try:
                for attempt in range(2):
                    done = llm.chat(convo, use_cache=attempt == 0)
                    gen.count(done)
                    if (choice := _parse_choice(done.text)) is not None:
                        break
            except LLMUnavailable as exc:
                gen.failed_calls += 1
                gen.notes.append(f"pairwise comparison failed: {exc}")
            if choice is None:
                gen.notes.append(f"pairwise comparison of candidates {tied[i][0]} and {tied[j][0]} gave no A/B answer")
            else:
                points[i if choice == "A" else j] += 1
    best = max(points)
    winner = next(k for k, p in enumerate(points) if p == best)
    if points.count(best) > 1:
        gen.notes.append(f"pairwise comparisons tied at {best} point(s): the group of the lowest candidate index wins")
    return tied[winner]


# -------------------------------------------------------------------------------------------- main

def generate_sql(llm: LLMClient, target, question: str, schema_text: str, statements: list, examples: list,
                 dialect: str, n: int = 5, repair_turns: int = 3, temperature: float = 1.0,
                 timeout: float = 30.0) -> Generation:
    """Generate the SQL for ``question``: sample, repair with execution feedback, vote.

    Args:
        llm: the client.
        target: where the SQL runs (:class:`dbrouter.sources.base.Target`), or None for a schema-only
            database (nothing runs; the vote is by normalised SQL text).
        question: the question.
        schema_text: the linked schema as prompt text.
        statements: retrieved domain statements.
        examples: retrieved examples.
        dialect: the dialect to write the SQL in (``sqlite``, ``duckdb``, ``snowflake``); it is
            transpiled with sqlglot when the target's differs.
        n: candidates to sample (>= 1).
        repair_turns: repair turns per candidate (>= 0).
        temperature: sampling temperature.
        timeout: seconds per execution; all executions together stop at :func:`sql_budget`.

    Returns:
        The :class:`Generation`; ``sql`` None (with notes) when every candidate failed.

    Raises:
        ValueError: ``n`` < 1, ``repair_turns`` < 0 or an unsupported dialect.
    """
    if n < 1 or repair_turns < 0:
        raise ValueError(f"need at least 1 candidate and 0 or more repair turns (got n={n}, "
                         f"repair_turns={repair_turns})")
    messages = [{"role": "system", "content": system_prompt(dialect)},
                {"role": "user", "content": user_prompt(question, schema_text, statements, examples, dialect)}]
    gen = Generation(None, None, [], [], "none")
    if target is None:
        gen.notes.append("no executable source for this database: candidates were not run, the vote is by "
                         "normalised SQL text")
    budget = sql_budget()
    deadline = time.monotonic() + budget
    for index in range(n):
        if time.monotonic() >= deadline:
            gen.notes.append(f"the question's SQL time budget of {budget:g} s (DBROUTER_ASK_SQL_BUDGET) was "
                             f"spent after {index} of {n} candidates")
            break
        gen.candidates.append(run_candidate(llm, gen, target, messages, index, dialect, repair_turns, temperature,
                                            timeout, deadline))
    gen.groups = vote_groups(gen.candidates, target, dialect)
    if not gen.groups:
        reasons = sorted({c.error or "no SQL" for c in gen.candidates})
        gen.notes.append(f"every one of the {n} candidates failed: " + " | ".join(r[:300] for r in reasons[:3]))
        return gen
    _decide(llm, gen, target, question, schema_text)
    return gen


def _decide(llm: LLMClient, gen: Generation, target, question: str, schema_text: str) -> None:
    """Set the winner (``sql``, ``result``, ``decided_by``) of a generation with groups; winner first."""
    top = len(gen.groups[0])
    tied = [g for g in gen.groups if len(g) == top]
    if target is None:
        gen.decided_by = "text"
        winner = gen.groups[0]
    elif len(gen.groups) == 1:
        gen.decided_by, winner = "single", gen.groups[0]
    elif len(tied) == 1:
        gen.decided_by, winner = "majority", gen.groups[0]
    else:
        gen.decided_by = "pairwise"
        winner = break_tie(llm, gen, question, schema_text, tied)
    gen.groups = [winner] + [g for g in gen.groups if g is not winner]
    best = next(c for c in gen.candidates if c.index == winner[0])
    gen.sql, gen.result = best.run_sql or best.sql, best.result
