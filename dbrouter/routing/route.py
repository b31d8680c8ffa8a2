"""Routing from Python: a thin typed layer over the SQL functions created by dbt."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from dbrouter.routing.evidence import RouteEvidence
from dbrouter.routing.mapping import MappingReport, embedding_mappings, map_phrases_llm

if TYPE_CHECKING:
    from dbrouter.routing.mapping import MappingReport


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

    @property
    def best(self) -> str | None:
        """The top-ranked db_id; None for an empty ranking or an abstention (as ``route_query``)."""
        return self.candidates[0].db_id if self.candidates and not self.abstained else None


def route(con, question: str | None, k: int = 5) -> RouteResult:
    """Rank databases for ``question`` with the warehouse's ``route_query_json``.

    Args:
        con: connection from :func:`dbrouter.connect`.
        question: natural-language question (None/empty give an empty ranking with a reason).
        k: number of candidates.

    Returns:
        A :class:`RouteResult`.

    Raises:
        EvidenceError: the warehouse's evidence JSON lacks a key this version reads.
    """
    raw = con.execute("select route_query_json(?, ?)", [question, int(k)]).fetchall()[0][0]
    return _from_json(question, raw)


def _from_json(question: str | None, raw: str) -> RouteResult:
    data = json.loads(raw)
    cands = [RouteCandidate(int(c["rank"]), c["db_id"], _score(c["score"]), RouteEvidence.from_json(c["evidence"]))
             for c in data.get("ranking") or []]
    return RouteResult(question, cands, data.get("reason"), bool(data.get("abstained")))


def route_with_llm(con, llm, question: str | None, k: int = 5, shortlist_k: int | None = None
                   ) -> tuple[RouteResult, MappingReport]:
    """Route with LLM phrase mappings for the shortlisted databases (the method's step 2).

    The shortlist, the scoring (the learned ranker over the candidates' signals) and the reason of
    an abstention stay in SQL (``route_query_json_mapped``); only the mapping comes from the LLM. A database whose answer
    is malformed twice keeps the non-LLM mapping, and the report says so. When the LLM maps no
    database at all (unreachable, too slow, malformed everywhere) the result is exactly the
    ``--no-llm`` ranking (:func:`route`), evidence marked ``embedding (LLM fallback)``.

    Args:
        con: connection from :func:`dbrouter.connect`.
        llm: an :class:`dbrouter.llm.LLMClient`.
        question: the question.
        k: number of candidates to return.
        shortlist_k: how many shortlisted databases to re-rank (default: the build's var).

    Returns:
        (the ranking, the mapping report).
    """

    report = MappingReport()
    if question is None or not str(question).strip():
        return route(con, question, k), report
    depth = int(shortlist_k or default_shortlist_k(con))
    shortlist = [r[0] for r in con.execute("select db_id from route_shortlist(?, ?)", [question, depth]).fetchall()]
    by_db = map_phrases_llm(con, llm, question, shortlist, report)
    if not report.mapped_by_llm:  # the LLM mapped nothing: give exactly the --no-llm ranking
        result = route(con, question, k)
        for c in result.candidates:
            if c.evidence.reranked:
                c.evidence = replace(c.evidence, mapped_by="embedding (LLM fallback)")
        return result, report
    if report.fallback:  # those databases keep the non-LLM mapping
        fallback = embedding_mappings(con, question, depth)
        by_db.update({db: fallback[db] for db in report.fallback if db in fallback})
    payload = json.dumps([{"db_id": m.db_id, "phrase": m.phrase, "table_name": m.table_name,
                           "column_name": m.column_name} for ms in by_db.values() for m in ms])
    raw = con.execute("select route_query_json_mapped(?, ?, ?, ?)", [question, payload, int(k), depth]).fetchall()[0][0]
    result = _from_json(question, raw)
    for c in result.candidates:
        if c.evidence.reranked:
            by = "llm" if c.db_id in report.mapped_by_llm else "embedding (LLM fallback)"
            c.evidence = replace(c.evidence, mapped_by=by)
    return result, report


def _score(value: Any) -> float | None:
    return None if value is None else float(value)


def default_shortlist_k(con) -> int:
    """The re-rank depth the warehouse's route functions were built with.

    Args:
        con: connection from :func:`dbrouter.connect`.

    Returns:
        ``route_shortlist_k()`` (the ``dbrouter__shortlist_k`` var of the last build).
    """
    return int(con.execute("select route_shortlist_k()").fetchall()[0][0])
