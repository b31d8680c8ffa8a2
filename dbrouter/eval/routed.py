"""Routed questions with their re-ranked candidates' signals: what ``dbrouter eval route --features``
writes and the ranker's fit (:mod:`dbrouter.tune.fitting`) reads, one JSON line a question.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Candidate:
    """One shortlisted database of a routed question: its signals and the order it got."""

    db_id: str
    signals: dict[str, float]
    shortlist_rank: int
    shortlist_score: float = 0.0
    method_key: tuple[float, float] = (0.0, 0.0)  # (coverage x connectivity, semantic + shortlist score)


@dataclass
class RoutedQuestion:
    """A routed question: gold database and its re-ranked candidates (``setting`` = where it came from)."""

    gold: str
    candidates: list[Candidate] = field(default_factory=list)
    setting: str = ""
    question: str = ""

    def to_json(self) -> dict:
        """A JSON-able dict (one line of a features file)."""
        return {"gold": self.gold, "setting": self.setting, "question": self.question,
                "candidates": [{"db_id": c.db_id, "signals": c.signals, "shortlist_rank": c.shortlist_rank,
                                "shortlist_score": c.shortlist_score, "method_key": list(c.method_key)}
                               for c in self.candidates]}

    @classmethod
    def from_json(cls, obj: dict) -> RoutedQuestion:
        """Inverse of :meth:`to_json`."""
        return cls(obj["gold"], [Candidate(c["db_id"], c["signals"], c["shortlist_rank"], c.get("shortlist_score", 0.0),
                                           tuple(c.get("method_key", (0.0, 0.0)))) for c in obj["candidates"]],
                   obj.get("setting", ""), obj.get("question", ""))


def candidates_from_rows(rows: list[tuple]) -> list[Candidate]:
    """Candidates from ``route_query_ranked`` rows ``(db_id, shortlist_rank, evidence JSON)``.

    Args:
        rows: the ranked rows; those without ``signals`` (not re-ranked) are skipped.

    Returns:
        The re-ranked candidates in shortlist order.
    """
    out = []
    for db_id, srank, evidence in rows:
        ev = json.loads(evidence) if isinstance(evidence, str) else evidence
        if not ev or not ev.get("signals"):
            continue
        sl = ev.get("shortlist") or {}
        key = ((ev.get("coverage") or 0) * (ev.get("connectivity") or 0),
               (ev.get("semantic_score") or 0) + (sl.get("score") or 0))
        out.append(Candidate(db_id, {k: float(v or 0) for k, v in ev["signals"].items()}, int(srank),
                             float(sl.get("score") or 0), key))
    return sorted(out, key=lambda c: c.shortlist_rank)


def save(questions: list[RoutedQuestion], path: Path) -> None:
    """Write routed questions as JSON lines."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for q in questions:
            fh.write(json.dumps(q.to_json()) + "\n")


def load(path: Path) -> list[RoutedQuestion]:
    """Read a file written by :func:`save`."""
    return [RoutedQuestion.from_json(json.loads(line)) for line in Path(path).read_text().splitlines() if line.strip()]
