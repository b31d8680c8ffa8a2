"""Pure, typed functions behind dbrouter's SQL UDFs.

Nothing in this package imports duckdb except :mod:`python_udfs.plugin`, the small
dbt-duckdb plugin that registers these functions on a connection.
"""
