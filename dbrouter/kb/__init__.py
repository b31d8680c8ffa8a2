"""The knowledge base: the raw snapshot (:mod:`~dbrouter.kb.ingest`), the tables kept
across ingests (:mod:`~dbrouter.kb.tables`), the atomic build that runs dbt
(:mod:`~dbrouter.kb.build`, :mod:`~dbrouter.kb.dbt_runner`), the schema-change refresh
(:mod:`~dbrouter.kb.refresh`), ``connect()`` (:mod:`~dbrouter.kb.connect`) and the KB on Snowflake
(:mod:`~dbrouter.kb.snowflake`).
"""

ROUTE_PATHS = ("udf", "sql")
"""The routing paths of a DuckDB KB: the Python UDFs (`<name>_udf`) or pure SQL (`<name>_sql`).
Here, not in :mod:`dbrouter.kb.connect`: the CLI reads it to build its parser, and importing
connect loads duckdb, numpy and pyarrow (a route through ``--endpoint`` needs none of them)."""
