"""Stage 6, serving the KB to SQL clients and BI tools over the Postgres wire protocol.
"""

# The endpoint's bounds (README, Reliability), here so that the CLI's options read them without
# importing the server (buenavista is slow to load).
QUERY_TIMEOUT = 60.0
STARTUP_TIMEOUT = 10.0  # seconds from connecting to authenticated (PostgreSQL's authentication_timeout)
SEND_TIMEOUT = 60.0  # seconds a reply may wait for a client that stops reading
MAX_CONNECTIONS = 64  # sessions at once, each a thread and a DuckDB cursor
MAX_ROWS = 1_000_000  # rows of one result; more is an error asking for a LIMIT (SQLSTATE 54000)
MAX_RESULT_BYTES = 256 * 1024 * 1024  # one result in memory
MAX_EMBED_TEXTS = 256  # distinct texts per embed()/embed_phrase() call: embedding a table is a build's work
