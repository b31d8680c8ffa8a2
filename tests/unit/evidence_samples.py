"""Evidence JSON as ``route_query_ranked`` returns it, for the parser's and the eval's tests."""

from __future__ import annotations

import copy
from typing import Any

RERANKED: dict[str, Any] = {
    "stage": "reranked",
    "example_match": False,
    "shortlist": {"rank": 2, "score": 0.4323, "schema_score": 0.39, "example_imputed": False,
                  "database_similarity": 0.514, "table_similarity": 0.4416, "column_similarity": 0.5042,
                  "example_similarity": 0.6931, "top_table": "orchestra", "top_column": "orchestra.Orchestra",
                  "top_example_sql": "SELECT count(*) FROM orchestra"},
    "phrases": 2, "na_phrases": 0, "coverage": 1.0, "connectivity": 1, "connected_without_implied_edges": 1,
    "needs_implied_edges": False, "join_tables": ["orchestra", "performance"], "join_path": "orchestra > performance",
    "total_score": 1.0, "semantic_score": 1.0, "rank_score": 3.25, "abstain": False, "abstain_floor": 0.31,
    "offtopic_floor": 0.12, "abstain_test": None, "intent_score": 1.2, "intent_floor": -0.44, "content_words": 3, "known_words": 2,
    "signals": {"database": 0.514, "table": 0.4416, "column": 0.5042, "example": 0.0931, "example_votes": 0.3,
                "semantic": 1.0, "mapped": 0.5, "connected": 1.0, "phrase_wins": 0.5, "lex_table": 0.6,
                "lex_name": 0.8, "lex_value": 0.0},
    "mappings": [{"phrase": "orchestra", "span": "orchestra", "column": "orchestra.Orchestra_ID", "similarity": 1.0,
                  "match": "name", "n_mappings": 3},
                 {"phrase": "performance", "span": "orchestra performance", "column": None, "similarity": None,
                  "match": None, "n_mappings": 0}],
}

SHORTLIST_ONLY: dict[str, Any] = {
    "stage": "shortlist",
    "example_match": False,
    "shortlist": {**RERANKED["shortlist"], "rank": 12, "example_imputed": True, "example_similarity": None,
                  "top_example_sql": None},
    "phrases": None, "na_phrases": None, "coverage": None, "connectivity": None,
    "connected_without_implied_edges": None, "needs_implied_edges": None, "join_tables": None, "join_path": None,
    "total_score": None, "semantic_score": None, "rank_score": None, "abstain": False, "abstain_floor": None,
    "offtopic_floor": 0.12, "abstain_test": None, "intent_score": 1.2, "intent_floor": -0.44, "content_words": 3, "known_words": 2,
    "signals": None,
    "mappings": None,
}


def evidence_json(stage: str = "reranked", **overrides: Any) -> dict[str, Any]:
    """A complete evidence object of ``stage`` with top-level keys replaced by ``overrides``."""
    base = RERANKED if stage == "reranked" else SHORTLIST_ONLY
    return {**copy.deepcopy(base), **overrides}
