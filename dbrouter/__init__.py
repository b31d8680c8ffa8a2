"""dbrouter: which of our databases can answer this question?

Public helpers::

    import dbrouter
    con = dbrouter.connect("dbrouter.duckdb")        # DuckDB connection with the UDFs registered
    con.sql("select route_query('How many singers do we have?')")
    dbrouter.route(con, "How many singers do we have?", k=3)
    dbrouter.retrieve_statements(con, "How many male singers?", "concert_singer")
    dbrouter.retrieve_examples(con, "How many singers are older than 30?", "concert_singer")
"""

from dbrouter.retrieval import RetrievedExample, RetrievedStatement, retrieve_examples, retrieve_statements
from dbrouter.routing import RouteCandidate, RouteResult, route
from dbrouter.warehouse import connect

__all__ = ["connect", "route", "RouteCandidate", "RouteResult", "retrieve_statements", "retrieve_examples",
           "RetrievedStatement", "RetrievedExample"]
__version__ = "0.1.0"
