"""`dbrouter statements structure`: the LLM path of statement structuring.

Without an LLM nothing needs doing: `dbt build` already structures every statement with the
rules (UDF ``dbrouter_structure_statement``). With one, each statement gets the few-shot prompt
of :mod:`dbrouter.enrich.prompts`; the answer must be one ``'<text>' refers to <snippet>`` line, is
validated against the schema, retried once when malformed, and otherwise left to the rules.
Validated answers go to ``dbrouter_llm.statement_structures`` (keyed by the statement hash),
which the next build prefers over the rule-based form.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass

from dbrouter.connection import Connection
from dbrouter.enrich.prompts import DEFAULT_STATEMENT_EXEMPLARS, statement_prompt
from dbrouter.kb.tables import LLM_SCHEMA, ensure_tables
from dbrouter.llm import LLMClient, StepReport, ask_for_item
from python_udfs.statements import Schema, resolve_references

_log = logging.getLogger(__name__)

_ANSWER = re.compile(r"""^\s*(?:templated domain statement:\s*)?["'‘“](.+?)["'’”]\s+refers\s+to\s+(.+?)\s*$""",
                     re.IGNORECASE)


@dataclass
class StructuringReport(StepReport):
    """What one structuring run did."""

    statements: int = 0
    structured: int = 0
    invalid: int = 0

    @property
    def written(self) -> int:
        """Rows stored in dbrouter_llm (validated or rejected)."""
        return self.structured + self.invalid

    def summary(self) -> str:
        return (f"{self.statements} statements: {self.structured} structured by the LLM, {self.invalid} rejected "
                f"(unknown columns), {self.malformed} malformed twice, {self.llm_errors} LLM errors, "
                f"{self.skipped_cached} already done; the rest keep the rule-based structure")


def statement_hash(db_id: str, statement: str) -> str:
    """The statement id used by the dbt models: md5(db_id || chr(0) || statement)."""
    return hashlib.md5(f"{db_id}\x00{statement}".encode()).hexdigest()


def parse_answer(text: str) -> tuple[str, str] | None:
    """Parse ``'<text>' refers to <snippet>`` from the first non-empty line; None when malformed."""
    for line in (text or "").splitlines():
        if line.strip():
            m = _ANSWER.match(line.strip())
            if not m:
                return None
            snippet = m.group(2).strip().rstrip(".;")
            if len(snippet) > 1 and snippet[0] in "'‘" and snippet[-1] in "'’" and snippet.count("'") <= 2:
                snippet = snippet[1:-1]
            return m.group(1).strip(), snippet
    return None


def _load(con: Connection, db: str | None):
    where = "where s.db_id = ?" if db else ""
    statements = con.execute(
        f"select s.db_id, s.statement_text from kb_domain_statements s {where} order by 1, 2",
        [db] if db else []).fetchall()
    ddl = dict(con.execute("select db_id, database_ddl from kb_databases").fetchall())
    cols: dict[str, list] = {}
    for d, t, c, label in con.execute("select db_id, table_name, column_name, column_label from kb_columns").fetchall():
        cols.setdefault(d, []).append((t, c, label))
    shots: dict[str, list] = {}
    for d, s, t in con.execute("select db_id, statement, structured from kb_statement_exemplars").fetchall():
        shots.setdefault(d, []).append((s, t))
    done = {r[0] for r in con.execute(f"select statement_hash from {LLM_SCHEMA}.statement_structures").fetchall()}
    return statements, ddl, cols, shots, done


def structure_with_llm(con: Connection, llm: LLMClient, db: str | None = None, redo: bool = False,
                       progress: Callable[[str], None] | None = None) -> StructuringReport:
    """Structure the KB's statements with the LLM and store the validated answers.

    Args:
        con: read-write connection to a built warehouse.
        llm: the configured client.
        db: only this database (default all).
        redo: ask again for statements already structured by the LLM.
        progress: progress callback.

    Returns:
        A :class:`StructuringReport`.
    """
    ensure_tables(con)
    statements, ddl, cols, shots, done = _load(con, db)
    report = StructuringReport(statements=len(statements))
    for i, (db_id, text) in enumerate(statements, 1):
        key = statement_hash(db_id, text)
        if key in done and not redo:
            report.skipped_cached += 1
            continue
        exemplars = shots.get(db_id) or shots.get("*") or DEFAULT_STATEMENT_EXEMPLARS
        system, user = statement_prompt(db_id, ddl.get(db_id) or "", text, exemplars)
        parsed = ask_for_item(llm, report, db_id, system, user, parse_answer)
        if parsed is None:
            continue
        expression, snippet = parsed
        refs, problems = resolve_references(snippet, Schema(cols.get(db_id, [])))
        status = "structured" if refs and not problems else "invalid_reference"
        report.structured += status == "structured"
        report.invalid += status != "structured"
        con.execute(
            f"insert or replace into {LLM_SCHEMA}.statement_structures "
            "(statement_hash, db_id, statement, expression, snippet, status, \"references\", problems, model) "
            "values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [key, db_id, text, expression, snippet, status, refs, problems, llm.model])
        if i % 50 == 0:
            (progress or _log.info)(f"  structured {i}/{len(statements)} statements")
    return report
