"""Phrase -> schema-entity mapping with an LLM (the re-rank's step 2 when an LLM is configured).

For each shortlisted database the LLM gets the method's phrase-mapping prompt with the
database's tables and columns and answers ``phrase - Table.Column`` / ``phrase - N/A`` lines.
The answer is parsed strictly (every line in that form, every column of that database); a
malformed answer is asked again once, then the database keeps the non-LLM mapping (the
embedding mapper of ``route_phrase_mappings``), and the fallback is reported. Answers are
cached by prompt hash (see :mod:`dbrouter.llm`), so a second run makes no calls.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from dbrouter.connection import Connection, entry
from dbrouter.llm import LLMClient, StepReport, account_item, try_ask
from dbrouter.routing.prompts import PHRASE_MAPPING_SYSTEM, PHRASE_MAPPING_USER

_LINE = re.compile(r"^\s*[-*]?\s*(?P<phrase>.+?)\s+-\s+(?P<target>N/A|[^\s.]+\.[^\s]+)\s*$", re.IGNORECASE)


@dataclass
class PhraseMapping:
    """One phrase mapped to a column of a database (``column_name`` None = N/A).

    The mapper's output, sent into ``route_query_ranked_mapped``; what the scoring reports back
    per phrase is :class:`dbrouter.routing.evidence.MappedPhrase`.
    """

    db_id: str
    phrase: str
    table_name: str | None
    column_name: str | None


@dataclass
class MappingReport(StepReport):
    """What the LLM mapping step did for one question."""

    mapped_by_llm: list[str] = field(default_factory=list)
    fallback: list[str] = field(default_factory=list)


def parse_mapping(answer: str, db_id: str, columns: set[tuple[str, str]]) -> list[PhraseMapping] | None:
    """Parse a phrase-mapping answer strictly.

    Args:
        answer: the LLM's text.
        db_id: the database the answer is about.
        columns: its (table, column) pairs, lower-cased.

    Returns:
        The mappings, or None when any non-empty line is not ``phrase - Table.Column`` /
        ``phrase - N/A``, names a column the database does not have, or nothing was mapped.
    """
    out: list[PhraseMapping] = []
    for raw in answer.strip().strip("`").splitlines():
        line = raw.strip()
        if not line or line.lower() in ("plaintext", "text"):
            continue
        m = _LINE.match(line)
        if not m:
            return None
        phrase, target = m.group("phrase").strip().strip("'\""), m.group("target")
        if target.upper() == "N/A":
            out.append(PhraseMapping(db_id, phrase, None, None))
            continue
        table, column = target.split(".", 1)
        if (table.lower().strip("`\""), column.lower().strip("`\"")) not in columns:
            return None
        out.append(PhraseMapping(db_id, phrase, table.strip("`\""), column.strip("`\"")))
    return out or None


def map_phrases_llm(con: Connection, llm: LLMClient, question: str, db_ids: list[str],
                    report: MappingReport) -> dict[str, list[PhraseMapping]]:
    """Ask the LLM for each database's phrase mappings (``llm.concurrency`` calls at once, within
    the client's time budget; an unreachable endpoint fails the remaining databases at once).

    Args:
        con: warehouse connection.
        llm: the client.
        question: the question.
        db_ids: shortlisted databases.
        report: updated with which databases the LLM mapped and which fell back.

    Returns:
        db_id -> mappings, only for databases the LLM answered well-formed.
    """
    prompts = []
    for db_id in db_ids:  # DuckDB reads first, in this thread; only the LLM calls run concurrently
        known = {(t.lower(), c.lower()) for t, c in con.execute(
            "select table_name, column_name from kb_columns where db_id = ?", [db_id]).fetchall()}
        ddl = con.execute("select database_ddl from kb_databases where db_id = ?", [db_id]).fetchall()[0][0]
        prompts.append((db_id, PHRASE_MAPPING_USER.format(query=question, schema=ddl),
                        lambda text, d=db_id, k=known: parse_mapping(text, d, k)))
    with ThreadPoolExecutor(max_workers=max(1, llm.concurrency)) as pool:
        outcomes = list(pool.map(lambda p: try_ask(llm, PHRASE_MAPPING_SYSTEM, p[1], p[2]), prompts))
    out: dict[str, list[PhraseMapping]] = {}
    for (db_id, _, _), outcome in zip(prompts, outcomes):
        parsed = account_item(report, db_id, *outcome)
        if parsed is None:
            report.fallback.append(db_id)
        else:
            out[db_id] = parsed
            report.mapped_by_llm.append(db_id)
    return out


def embedding_mappings(con: Connection, question: str, shortlist_k: int) -> dict[str, list[PhraseMapping]]:
    """The non-LLM mapper's mappings (``route_phrase_mappings``), as :class:`PhraseMapping` rows.

    Args:
        con: warehouse connection.
        question: the question.
        shortlist_k: how many shortlisted databases.

    Returns:
        db_id -> mappings (a phrase with no column above the threshold appears once as N/A).
    """
    fn = entry(con, "route_phrase_mappings")
    rows = con.execute(f"select db_id, phrase, table_name, column_name from {fn}(?, ?)",
                       [question, int(shortlist_k)]).fetchall()
    out: dict[str, list[PhraseMapping]] = {}
    for db_id, phrase, table, column in rows:
        out.setdefault(db_id, []).append(PhraseMapping(db_id, phrase, table, column))
    return out
