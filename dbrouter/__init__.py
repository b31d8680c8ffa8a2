"""dbrouter: which of our databases can answer this question?

Public helpers::

    import dbrouter
    con = dbrouter.connect("dbrouter.duckdb")        # DuckDB connection with the UDFs registered
    con.sql("select route_query('How many singers do we have?')")
    dbrouter.route(con, "How many singers do we have?", k=3)
    dbrouter.route(con, "How many singers do we have?", llm=dbrouter.LLMClient.from_env())  # LLM mapping
    dbrouter.retrieve_statements(con, "How many male singers?", "concert_singer")
    dbrouter.retrieve_examples(con, "How many singers are older than 30?", "concert_singer")
    dbrouter.ask(con, "How many singers are older than 30?", llm=dbrouter.LLMClient.from_env())  # SQL + rows

The helpers are imported on first use (PEP 562), so ``import dbrouter.errors`` (done by the UDF
plugin) does not load the LLM client or the evaluation code.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "connect": "dbrouter.kb.connect",
    "route": "dbrouter.routing.route",
    "RouteCandidate": "dbrouter.routing.route",
    "RouteResult": "dbrouter.routing.route",
    "RouteEvidence": "dbrouter.routing.evidence",
    "LLMClient": "dbrouter.llm",
    "retrieve_statements": "dbrouter.retrieval",
    "retrieve_examples": "dbrouter.retrieval",
    "RetrievedStatement": "dbrouter.retrieval",
    "RetrievedExample": "dbrouter.retrieval",
    "ask": "dbrouter.answer.ask",
    "Answer": "dbrouter.answer.ask",
}

__all__ = list(_EXPORTS)
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'dbrouter' has no attribute {name!r}")
