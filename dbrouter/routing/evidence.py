"""The evidence of one ranked database, parsed once from the route functions' JSON.

``route_query_ranked`` (and ``route_query_ranked_mapped``, ``route_query_json``) return per
candidate an ``evidence`` JSON object. :meth:`RouteEvidence.from_json` turns it into typed
dataclasses, so the CLI, the evaluation and the scripts read attributes instead of ``.get()``
on keys: a key the SQL stops returning fails here, naming the key, instead of printing None.

Values keep the types the SQL gives them (``connectivity`` is the integer 0/1, scores are
rounded floats), so :meth:`RouteEvidence.to_dict` gives back the same JSON content.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, dataclass, fields
from typing import Any

from dbrouter.errors import EvidenceError

STAGES = ("reranked", "shortlist")


def _require(obj: Any, cls: Any, where: str) -> dict[str, Any]:
    """The values of ``cls``'s fields taken from ``obj``; raise naming the first missing key.

    Args:
        obj: the parsed JSON object.
        cls: the dataclass whose fields are the required keys (fields with defaults are optional).
        where: the object's name, for the error message.

    Returns:
        Field name -> value.

    Raises:
        EvidenceError: ``obj`` is not an object or lacks a required key.
    """
    if not isinstance(obj, dict):
        raise EvidenceError(f"route evidence: {where} is {type(obj).__name__}, expected a JSON object")
    names = [f.name for f in fields(cls)]
    missing = [f.name for f in fields(cls)
               if f.name not in obj and f.default is MISSING and f.default_factory is MISSING]
    if missing:
        raise EvidenceError(
            f"route evidence: {where} has no key {missing[0]!r} (has {', '.join(sorted(obj)) or 'none'}): "
            "the warehouse's route functions do not match this dbrouter; rebuild it with `dbrouter build`")
    return {n: obj[n] for n in names if n in obj}


SQL_ORDER = ("stage", "example_match", "shortlist", "phrases", "na_phrases", "coverage", "connectivity",
             "connected_without_implied_edges", "needs_implied_edges", "join_tables", "join_path", "total_score",
             "semantic_score", "rank_score", "abstain", "abstain_floor", "offtopic_floor", "abstain_test",
             "intent_score", "intent_floor", "content_words", "known_words", "signals", "mappings")
"""The evidence keys in the order route_score_step writes them."""


@dataclass(frozen=True)
class ShortlistSignals:
    """Step 1: the database's place in the shortlist and the similarities behind its score."""

    rank: int
    score: float
    schema_score: float | None
    example_imputed: bool
    database_similarity: float | None
    table_similarity: float | None
    column_similarity: float | None
    example_similarity: float | None
    top_table: str | None
    top_column: str | None
    top_example_sql: str | None


@dataclass(frozen=True)
class MappedPhrase:
    """Step 2: one phrase of the question and the column it maps to best (``column`` None = N/A).

    Not to be confused with :class:`dbrouter.routing.mapping.PhraseMapping`, the mapper's output that
    goes *into* the SQL; this is what the scoring reports back.
    """

    phrase: str
    span: str | None
    column: str | None
    similarity: float | None
    match: str | None
    n_mappings: int


@dataclass(frozen=True)
class RouteEvidence:
    """Why a database got its rank: shortlist signals and, when re-ranked, steps 2-5.

    For ``stage == 'shortlist'`` (below the re-rank depth) every re-rank field is None.
    ``mapped_by`` is set by :func:`dbrouter.routing.route.route` with an LLM (``llm`` or the fallback).
    """

    stage: str
    shortlist: ShortlistSignals
    phrases: int | None
    na_phrases: int | None
    coverage: float | None
    connectivity: int | None
    connected_without_implied_edges: int | None
    needs_implied_edges: bool | None
    join_tables: list[str] | None
    join_path: str | None
    total_score: float | None
    semantic_score: float | None
    rank_score: float | None
    abstain: bool | None
    signals: dict[str, float] | None
    mappings: list[MappedPhrase] | None
    mapped_by: str | None = None
    example_match: bool = False
    abstain_floor: float | None = None
    offtopic_floor: float | None = None
    abstain_test: str | None = None
    intent_score: float | None = None
    intent_floor: float | None = None
    content_words: int | None = None
    known_words: int | None = None

    @property
    def reranked(self) -> bool:
        """True when the re-rank (steps 2-5) scored this database."""
        return self.stage == "reranked"

    @classmethod
    def from_json(cls, raw: str | dict[str, Any]) -> RouteEvidence:
        """Parse one candidate's evidence.

        Args:
            raw: the JSON text, or the already decoded object.

        Returns:
            The typed evidence.

        Raises:
            EvidenceError: not JSON, a required key is missing (the message names it), or an
                unknown stage.
        """
        try:
            obj = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError as exc:
            raise EvidenceError(f"route evidence is not JSON ({exc}): {str(raw)[:80]!r}") from exc
        values = _require(obj, cls, "evidence")
        if values["stage"] not in STAGES:
            raise EvidenceError(f"route evidence: unknown stage {values['stage']!r} (expected {' or '.join(STAGES)})")
        values["shortlist"] = ShortlistSignals(**_require(values["shortlist"], ShortlistSignals, "evidence.shortlist"))
        if values["mappings"] is not None:
            values["mappings"] = [MappedPhrase(**_require(m, MappedPhrase, f"evidence.mappings[{i}]"))
                                  for i, m in enumerate(values["mappings"])]
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """The evidence as the SQL returned it (plus ``mapped_by`` when set), for JSON output.

        Returns:
            A JSON-serialisable dict with the SQL's keys in the SQL's order.
        """
        out: dict[str, Any] = {name: getattr(self, name) for name in SQL_ORDER}
        out["shortlist"] = {f.name: getattr(self.shortlist, f.name) for f in fields(ShortlistSignals)}
        out["mapped_by"] = self.mapped_by
        if self.mappings is not None:
            out["mappings"] = [{f.name: getattr(m, f.name) for f in fields(MappedPhrase)} for m in self.mappings]
        if self.mapped_by is None:
            del out["mapped_by"]
        return out
