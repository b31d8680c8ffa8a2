"""dbrouter: which of our databases can answer this question?

Public helpers::

    import dbrouter
    con = dbrouter.connect("dbrouter.duckdb")        # DuckDB connection with the UDFs registered
    con.sql("select route_query('How many singers do we have?')")
    dbrouter.route(con, "How many singers do we have?", k=3)
    dbrouter.route_with_llm(con, dbrouter.LLMClient.from_env(), "How many singers do we have?")  # LLM mapping
    dbrouter.retrieve_statements(con, "How many male singers?", "concert_singer")
    dbrouter.retrieve_examples(con, "How many singers are older than 30?", "concert_singer")
"""

from dbrouter.retrieval import RetrievedExample, RetrievedStatement, retrieve_examples, retrieve_statements
from dbrouter.llm import LLMClient
from dbrouter.routing import RouteCandidate, RouteResult, route, route_with_llm
from dbrouter.warehouse import connect

__all__ = ["connect", "route", "route_with_llm", "LLMClient", "RouteCandidate", "RouteResult", "retrieve_statements", "retrieve_examples",
           "RetrievedStatement", "RetrievedExample"]
__version__ = "0.1.0"
