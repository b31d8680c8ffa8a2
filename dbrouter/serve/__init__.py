"""Serving the KB to SQL clients and BI tools over the Postgres wire protocol.
"""

import os

# The endpoint's bounds (docs/operations.md, Bounds on untrusted input), here so that the CLI's options read them without
# importing the server (buenavista is slow to load).
QUERY_TIMEOUT = 60.0
STARTUP_TIMEOUT = 10.0  # seconds from connecting to authenticated (PostgreSQL's authentication_timeout)
SEND_TIMEOUT = 60.0  # seconds a reply may wait for a client that stops reading
MAX_CONNECTIONS = 64  # sessions at once, each a thread and a DuckDB cursor
RUNNING_PER_CORE = 2  # statements running at once per CPU core; the others wait their turn within the timeout
MAX_ROWS = 1_000_000  # rows of one result; more is an error asking for a LIMIT (SQLSTATE 54000)
MAX_RESULT_BYTES = 256 * 1024 * 1024  # one result in memory
MEMORY_LIMIT = "4GB"  # DuckDB memory of all sessions' queries together (a query over it fails, the server goes on)
TEMP_LIMIT = "2GB"  # what queries may spill to the warehouse's temp directory (<warehouse>.tmp), all together
MAX_CURSORS = 8  # DECLARE ... CURSOR results one session holds at once
MAX_STARTUP_BYTES = 10_000  # a message's length before authentication (PostgreSQL's startup limit)
MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # a message's length after it (a statement is checked up to 200,000 chars)
AUTH_FAILURES = 10  # failed logins from one address within a minute, then it waits out the minute
AUTH_FAILURE_DELAY = 0.5  # seconds before a wrong password is answered
# DuckDB settings given when the KB is opened (a SET on the connection does not reach its cursors):
# a table name never resolves to a Python object on any session's cursor. Another connection to the
# same file in the same process must be opened with the same settings (DuckDB's rule).
DUCKDB_CONFIG = {"python_enable_replacements": False}
MAX_EMBED_TEXTS = 256  # distinct texts per embed()/embed_phrase() call: embedding a table is a build's work


def default_max_running() -> int:
    """Statements a `dbrouter serve` endpoint runs at once by default: RUNNING_PER_CORE per CPU core
    this process may use (2 cores: 4). More at once only share the cores: 16 clients of the demo KB
    at once got 0.7x the throughput of 4; waiting their turn, 1.0x (docs/serve.md)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return RUNNING_PER_CORE * max(cores, 1)
