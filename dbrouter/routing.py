"""Routing from Python: a thin typed layer over the SQL functions created by dbt."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RouteCandidate:
    """One ranked database."""

    rank: int
    db_id: str
    score: float
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass
class RouteResult:
    """A routed question: the ranking, or an empty ranking with the reason."""

    question: str | None
    candidates: list[RouteCandidate]
    reason: str | None = None

    @property
    def best(self) -> str | None:
        return self.candidates[0].db_id if self.candidates else None


def route(con, question: str | None, k: int = 5) -> RouteResult:
    """Rank databases for ``question`` with the warehouse's ``route_query_json``.

    Args:
        con: connection from :func:`dbrouter.connect`.
        question: natural-language question (None/empty give an empty ranking with a reason).
        k: number of candidates.

    Returns:
        A :class:`RouteResult`.
    """
    raw = con.execute("select route_query_json(?, ?)", [question, int(k)]).fetchall()[0][0]
    data = json.loads(raw)
    cands = [RouteCandidate(int(c["rank"]), c["db_id"], float(c["score"]),
                            json.loads(c["evidence"]) if isinstance(c["evidence"], str) else c["evidence"])
             for c in data.get("ranking") or []]
    return RouteResult(question, cands, data.get("reason"))
