"""dbrouter: which of our databases can answer this question?

Public helpers::

    import dbrouter
    con = dbrouter.connect("dbrouter.duckdb")        # DuckDB connection with the UDFs registered
    con.sql("select route_query('How many singers do we have?')")
    dbrouter.route(con, "How many singers do we have?", k=3)
"""

from dbrouter.routing import RouteCandidate, RouteResult, route
from dbrouter.warehouse import connect

__all__ = ["connect", "route", "RouteCandidate", "RouteResult"]
__version__ = "0.1.0"
