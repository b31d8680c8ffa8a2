"""Every error class of dbrouter, in one place; every message says what to do next.

This module imports nothing from the rest of the package (each stage imports its errors from
here); ``python_udfs`` imports nothing of dbrouter at all (its one error,
:class:`EmbedderUnavailable`, is defined in :mod:`python_udfs.errors` and listed in
:data:`USER_ERRORS`). The hierarchy, by the stage that raises them::

    DbrouterError                 a command reports it in one line (USER_ERRORS), never a traceback
    |- SourcesConfigError         the sources file is missing or malformed
    |- SourceError                one source database cannot be read (the rest still builds)
    |- WarehouseError             the warehouse is missing or has no knowledge base
    |- EmbedderMismatch           the connection's embedder is not the KB's
    |- EvidenceError              route evidence JSON of another version (rebuild)
    |- NoDatabase                 routing gave a step that needs a database none
    |- DbtRunError                `dbt build` failed
    |- BenchmarkError             a benchmark folder is missing files
    |- AccessError                access policy: malformed file, failed authentication
    |- NoDataSource               a database without an executable source (schema JSON)
    |- SnowflakeConfigError       Snowflake settings or client missing
    |- LLMUnavailable             the LLM endpoint is unreachable or failed
    |- BuildError                 the build failed; the previous KB is unchanged
    |  `- InconsistentKB          the new KB failed the consistency check
    |- RefreshError               the refresh record cannot be written
    |- UnsafeSQL                  not a single read-only SELECT
    |- AgentConfigError           an agentic-linker parameter out of range
    |- ServeError                 the endpoint cannot start as asked
    |- EndpointRefusal            an endpoint refusal with a Postgres SQLSTATE
    |  |- QueryRefused            a query answered with an ErrorResponse
    |  `- StatementRefused        a statement naming what the session may not use
    |- EndpointError              the CLI's client cannot reach or use an endpoint
    `- SourcesFailed              a source failed and --allow-partial was not given
"""

from __future__ import annotations

from python_udfs.errors import EmbedderUnavailable


class DbrouterError(Exception):
    """Base class of dbrouter's errors."""


class SourcesConfigError(DbrouterError):
    """The sources file is missing or malformed."""


class SourceError(DbrouterError):
    """One source database cannot be read; the rest of the knowledge base still builds."""

    def __init__(self, db_id: str, message: str) -> None:
        super().__init__(f"database {db_id!r}: {message}")
        self.db_id = db_id


class WarehouseError(DbrouterError):
    """The warehouse file is missing or has no knowledge base yet."""


class EmbedderMismatch(DbrouterError):
    """The embedder on a connection is not the one the knowledge base's vectors were made with."""


class EvidenceError(DbrouterError):
    """The route evidence JSON is not what this version of dbrouter expects (rebuild the KB)."""


class DbtRunError(DbrouterError):
    """`dbt build` failed; its log holds the details."""


class BenchmarkError(DbrouterError):
    """A benchmark directory is missing files or malformed."""


# Access policies


class AccessError(DbrouterError):
    """The policy file is malformed, or a user cannot be authenticated."""


# Sources


class NoDataSource(DbrouterError):
    """The database has no executable source (e.g. it was ingested from a schema JSON file).

    Attributes:
        dialect: the sqlglot dialect SQL for it is still written in (None: the schema-only default).
    """

    def __init__(self, message: str, dialect: str | None = None) -> None:
        super().__init__(message)
        self.dialect = dialect


class SnowflakeConfigError(DbrouterError):
    """Snowflake connection settings are missing or the Snowflake client is not installed."""


# Routing


class NoDatabase(DbrouterError):
    """Routing gave no database to a step that needs one (it abstained or ranked nothing); the
    message says why, names the closest and how to pass one (``RouteResult.refusal``)."""


# The LLM client


class LLMUnavailable(DbrouterError):
    """The LLM endpoint could not be reached or answered with an error."""


# Building the knowledge base


class BuildError(DbrouterError):
    """The build failed or was refused; the previous knowledge base is unchanged."""


class InconsistentKB(BuildError):
    """The freshly built knowledge base failed the consistency check (:func:`dbrouter.kb.build.kb_problems`)."""


class RefreshError(DbrouterError):
    """The refresh record cannot be written; the knowledge base itself was rebuilt."""


# Running SQL on a source


class UnsafeSQL(DbrouterError):
    """The SQL is not a single read-only SELECT; ``reason`` says what was refused."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"refused to run this SQL: {reason}. Only one read-only SELECT (WITH ... SELECT, UNION) runs")
        self.reason = reason


# Schema linking


class AgentConfigError(DbrouterError):
    """A parameter of the agentic linker is out of range (the message names it and the allowed range)."""


# serve and its client


class ServeError(DbrouterError):
    """The endpoint cannot start as asked (host, port, password)."""


class EndpointRefusal(DbrouterError):
    """An error the endpoint sends a client as an ErrorResponse; ``sqlstate`` is its Postgres code."""

    def __init__(self, message: str, sqlstate: str) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class QueryRefused(EndpointRefusal):
    """A query the endpoint answers with an ErrorResponse; ``sqlstate`` is its Postgres error code."""


class StatementRefused(EndpointRefusal):
    """The statement names something the endpoint does not serve to this session; ``sqlstate`` is
    the Postgres error code (42501 permission denied, 25006 read-only, 54000 too complex)."""


class EndpointError(DbrouterError):
    """The endpoint cannot be reached, refused the login, or failed a statement."""


# The command line


class SourcesFailed(DbrouterError):
    """A declared source could not be read (and --allow-partial was not given)."""


# python_udfs is a leaf (it imports nothing of dbrouter, so the Snowflake code zip ships it alone):
# its one user-facing error is defined there and counted here among the errors a command reports in
# one line.
USER_ERRORS: tuple[type[Exception], ...] = (DbrouterError, EmbedderUnavailable)
"""What commands, the endpoint and builds report as one message instead of a traceback."""
