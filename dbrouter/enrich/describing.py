"""`dbrouter examples describe`: the LLM path of example descriptors.

Without an LLM the rule-based descriptors that `dbt build` computes (UDF
``dbrouter_describe_example``) are used. With one, each example gets the prompt of
:mod:`dbrouter.enrich.prompts`; the answer must be a JSON object with ``normalized_question``,
``main_clause``, ``requested_entities`` and ``paraphrases`` (strings / lists of strings), is
retried once when malformed, and otherwise left to the rules. Answers are stored in
``dbrouter_llm.example_descriptors`` keyed by the example id; the next build prefers them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass

from dbrouter.connection import Connection
from dbrouter.enrich.prompts import example_prompt
from dbrouter.kb.tables import LLM_SCHEMA, ensure_tables
from dbrouter.llm import LLMClient, StepReport, ask_for_item

_log = logging.getLogger(__name__)


@dataclass
class DescribeReport(StepReport):
    """What one describing run did."""

    examples: int = 0
    described: int = 0

    @property
    def written(self) -> int:
        """Rows stored in dbrouter_llm."""
        return self.described

    def summary(self) -> str:
        return (f"{self.examples} examples: {self.described} described by the LLM, {self.malformed} malformed "
                f"twice, {self.llm_errors} LLM errors, {self.skipped_cached} already done; the rest keep the "
                "rule-based descriptors")


def example_hash(db_id: str, question: str, sql: str) -> str:
    """The example id used by the dbt models: md5(db_id || chr(0) || question || chr(0) || sql)."""
    return hashlib.md5(f"{db_id}\x00{question}\x00{sql}".encode()).hexdigest()


def parse_descriptors(text: str) -> dict | None:
    """Parse the JSON answer (a ```json fence is tolerated); None when malformed."""
    body = re.sub(r"^```(?:json)?\s*|\s*```$", "", (text or "").strip())
    try:
        obj = json.loads(body)
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    strings = lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v)  # noqa: E731
    if not (isinstance(obj.get("normalized_question"), str) and obj["normalized_question"].strip()
            and isinstance(obj.get("main_clause"), str) and strings(obj.get("requested_entities", []))
            and strings(obj.get("paraphrases", []))):
        return None
    return {"normalized_question": obj["normalized_question"].strip(), "main_clause": obj["main_clause"].strip(),
            "requested_entities": obj.get("requested_entities", []), "paraphrases": obj.get("paraphrases", [])[:5]}


def describe_with_llm(con: Connection, llm: LLMClient, db: str | None = None, redo: bool = False,
                      progress: Callable[[str], None] | None = None) -> DescribeReport:
    """Describe the KB's examples with the LLM and store the answers.

    Args:
        con: read-write connection to a built warehouse.
        llm: the configured client.
        db: only this database (default all).
        redo: ask again for examples already described.
        progress: progress callback.

    Returns:
        A :class:`DescribeReport`.
    """
    ensure_tables(con)
    where = "where db_id = ?" if db else ""
    rows = con.execute(f"select db_id, question, sql_text from kb_examples {where} order by 1, 2",
                       [db] if db else []).fetchall()
    done = {r[0] for r in con.execute(f"select example_hash from {LLM_SCHEMA}.example_descriptors").fetchall()}
    report = DescribeReport(examples=len(rows))
    for i, (db_id, question, sql) in enumerate(rows, 1):
        key = example_hash(db_id, question, sql)
        if key in done and not redo:
            report.skipped_cached += 1
            continue
        system, user = example_prompt(db_id, question, sql)
        parsed = ask_for_item(llm, report, db_id, system, user, parse_descriptors)
        if parsed is None:
            continue
        report.described += 1
        con.execute(
            f"insert or replace into {LLM_SCHEMA}.example_descriptors (example_hash, db_id, question, "
            "normalized_question, main_clause, requested_entities, paraphrases, model) values (?, ?, ?, ?, ?, ?, ?, ?)",
            [key, db_id, question, parsed["normalized_question"], parsed["main_clause"],
             parsed["requested_entities"], parsed["paraphrases"], llm.model])
        if i % 50 == 0:
            (progress or _log.info)(f"  described {i}/{len(rows)} examples")
    return report
