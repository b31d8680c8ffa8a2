"""Stage 6, serving the KB to SQL clients and BI tools over the Postgres wire protocol.
"""
