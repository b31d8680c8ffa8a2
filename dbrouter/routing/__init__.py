"""Stage 3, routing from Python: :func:`~dbrouter.routing.route.route` over the KB's SQL route
functions, the typed evidence, the ranker's signals offline and the LLM phrase mapper.
"""

ROUTE_PATHS = ("udf", "sql")
"""The routing paths of a DuckDB KB: the Python UDFs (`<name>_udf`) or pure SQL (`<name>_sql`)."""
