"""Routing from Python: a thin typed layer over the SQL functions created by dbt."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from dbrouter.connection import Connection, entry
from dbrouter.errors import NoDatabase
from dbrouter.feedback.log import LogEntry
from dbrouter.kb.held import ENTRY, held_route_json
from dbrouter.routing.evidence import RouteEvidence
from dbrouter.routing.mapping import MappingReport, embedding_mappings, map_phrases_llm


@dataclass
class RouteCandidate:
    """One ranked database: its rank, the score that ordered it and why (:class:`RouteEvidence`).

    Attributes:
        rank: 1 = best.
        db_id: the database.
        score: the ranker score that orders the candidates; None for a candidate below the re-rank
            depth (ordered after every re-ranked one, by ``shortlist_score``).
        evidence: the signals behind it.
    """

    rank: int
    db_id: str
    score: float | None
    evidence: RouteEvidence

    @property
    def shortlist_score(self) -> float:
        """The first ranking's score (step 1), kept under its own name."""
        return self.evidence.shortlist.score

    def to_dict(self) -> dict[str, Any]:
        """The candidate as ``route_query_json`` returns it (evidence as a JSON object).

        Returns:
            ``{rank, db_id, score, evidence}``, JSON-serialisable.
        """
        return {"rank": self.rank, "db_id": self.db_id, "score": self.score, "evidence": self.evidence.to_dict()}


@dataclass
class RouteResult:
    """A routed question: the ranking, or an empty ranking with the reason."""

    question: str | None
    candidates: list[RouteCandidate]
    reason: str | None = None
    abstained: bool = False
    mapping: MappingReport | None = None
    """With an LLM: what its phrase mapping did (the databases it mapped, those that fell back)."""

    @property
    def best(self) -> str | None:
        """The top-ranked db_id; None for an empty ranking or an abstention (as ``route_query``)."""
        return self.candidates[0].db_id if self.candidates and not self.abstained else None

    def log_entry(self, base: LogEntry) -> LogEntry:
        """The query-log entry of this routing (:func:`dbrouter.feedback.log.record`).

        Args:
            base: what the client knew before routing (source, tool, question, user).

        Returns:
            ``base`` with the ranking, the database chosen, and the reason when there is none.
        """
        return replace(base, ranking=[c.db_id for c in self.candidates], chosen=self.best,
                       abstained=self.best is None, status="ok" if self.best else "abstained", error=self.reason)

    def refusal(self, what: str, flag: str = "--db") -> str:
        """What a step that needs one database says when routing gave none: why, the closest, how to force one.

        Args:
            what: the action (``answer from``, ``link against``).
            flag: how the caller names a database (``--db`` on the CLI, ``db`` over MCP).

        Returns:
            One line.
        """
        reason = self.reason or "routing ranked no database"
        if not self.candidates:
            return f"no database to {what}: {reason}"
        closest = ", ".join(f"{c.db_id} (score {c.score:.3f})" if c.score is not None else c.db_id
                            for c in self.candidates[:3])
        return (f"no database to {what}: {reason}. Closest: {closest}. If one of them is right, pass it with "
                f"{flag} {self.candidates[0].db_id}")


def route(con: Connection, question: str | None, k: int = 5, llm=None, shortlist_k: int | None = None) -> RouteResult:
    """Rank databases for ``question``: the one routing call of the CLI, ``ask``, ``link`` and MCP.

    Without an LLM the warehouse's ``route_query_json`` answers. With one, the LLM maps the
    question's phrases to the columns of each shortlisted database (the method's step 2) and the
    warehouse scores those mappings (``route_query_json_mapped_udf``): the shortlist, the ranker and the
    reasons stay in SQL. A database whose answer is malformed twice keeps the non-LLM mapping;
    when the LLM maps no database at all (unreachable, too slow, malformed everywhere) the result
    is exactly the ranking without it, evidence marked ``embedding (LLM fallback)``;
    ``result.mapping`` says which.

    Args:
        con: connection from :func:`dbrouter.connect`.
        question: natural-language question (None/empty give an empty ranking with a reason).
        k: number of candidates.
        llm: an :class:`dbrouter.llm.LLMClient`, or None (no LLM).
        shortlist_k: with an LLM, how many shortlisted databases it maps (default: the build's var).

    Returns:
        A :class:`RouteResult`.

    Raises:
        EvidenceError: the warehouse's evidence JSON lacks a key this version reads.
    """
    if llm is not None and question is not None and str(question).strip():
        return _route_mapped(con, llm, question, k, shortlist_k)
    name = entry(con, 'route_query_json')
    raw = held_route_json(con, question, int(k)) if name == ENTRY else None
    if raw is None:
        raw = con.execute(f"select {name}(?, ?)", [question, int(k)]).fetchall()[0][0]
    return _from_json(question, raw)


def _from_json(question: str | None, raw: str) -> RouteResult:
    data = json.loads(raw)
    cands = [RouteCandidate(int(c["rank"]), c["db_id"], _score(c["score"]), RouteEvidence.from_json(c["evidence"]))
             for c in data.get("ranking") or []]
    return RouteResult(question, cands, data.get("reason"), bool(data.get("abstained")))


def route_database(con: Connection, question: str, what: str, llm=None, flag: str = "--db") -> tuple[str, RouteResult]:
    """Route ``question`` for a step that needs one database (``ask``, ``link``).

    Args:
        con: connection from :func:`dbrouter.connect`.
        question: the question.
        what: the step, for the error (``answer from``, ``link against``).
        llm: an LLM for the phrase mapping, or None.
        flag: how the caller names a database in the error.

    Returns:
        (the best database, the ranking of 3 candidates).

    Raises:
        NoDatabase: routing abstained or ranked nothing; the message names why and the closest.
    """
    result = route(con, question, k=3, llm=llm)
    if result.best is None:
        raise NoDatabase(result.refusal(what, flag))
    return result.best, result


def _route_mapped(con: Connection, llm, question: str, k: int, shortlist_k: int | None) -> RouteResult:
    report = MappingReport()
    depth = int(shortlist_k or default_shortlist_k(con))
    shortlist = [r[0] for r in con.execute(f"select db_id from {entry(con, 'route_shortlist')}(?, ?)",
                                                [question, depth]).fetchall()]
    by_db = map_phrases_llm(con, llm, question, shortlist, report)
    if not report.mapped_by_llm:  # the LLM mapped nothing: give exactly the --no-llm ranking
        result = route(con, question, k)
        for c in result.candidates:
            if c.evidence.reranked:
                c.evidence = replace(c.evidence, mapped_by="embedding (LLM fallback)")
        result.mapping = report
        return result
    if report.fallback:  # those databases keep the non-LLM mapping
        fallback = embedding_mappings(con, question, depth)
        by_db.update({db: fallback[db] for db in report.fallback if db in fallback})
    payload = json.dumps([{"db_id": m.db_id, "phrase": m.phrase, "table_name": m.table_name,
                           "column_name": m.column_name} for ms in by_db.values() for m in ms])
    # the UDF path by name: the entry has no plain-named wrapper (a temp macro per connection)
    raw = con.execute("select route_query_json_mapped_udf(?, ?, ?, ?)",
                      [question, payload, int(k), depth]).fetchall()[0][0]
    result = _from_json(question, raw)
    for c in result.candidates:
        if c.evidence.reranked:
            by = "llm" if c.db_id in report.mapped_by_llm else "embedding (LLM fallback)"
            c.evidence = replace(c.evidence, mapped_by=by)
    result.mapping = report
    return result


def _score(value: Any) -> float | None:
    return None if value is None else float(value)


def default_shortlist_k(con: Connection) -> int:
    """The re-rank depth the warehouse's route functions were built with.

    Args:
        con: connection from :func:`dbrouter.connect`.

    Returns:
        ``route_shortlist_k()`` (the ``dbrouter__shortlist_k`` var of the last build).
    """
    return int(con.execute("select route_shortlist_k()").fetchall()[0][0])
