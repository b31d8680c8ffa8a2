"""Safe execution of generated SQL on a user's database (STUB: interface fixed, body to come).

Only one read-only statement ever runs: :func:`check_read_only` parses it with sqlglot and refuses
anything but a SELECT; :func:`execute` runs it on a read-only connection (SQLite ``mode=ro`` URI,
DuckDB ``read_only=True``) with a timeout and a row cap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from dbrouter.errors import DbrouterError


class UnsafeSQL(DbrouterError):
    """The SQL is not a single read-only SELECT; ``reason`` says what was refused."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"refused to run this SQL: {reason}. Only one read-only SELECT (WITH ... SELECT, UNION) runs")
        self.reason = reason


class NoDataSource(DbrouterError):
    """The database has no executable source (e.g. it was ingested from a schema JSON file)."""


@dataclass(frozen=True)
class Target:
    """A database SQL can run on: ``kind`` is ``sqlite`` or ``duckdb``; ``path`` its file."""

    db_id: str
    kind: str
    path: Path

    @property
    def dialect(self) -> str:
        """The sqlglot dialect of SQL written for this target."""
        return self.kind


@dataclass
class QueryResult:
    """What one statement returned (``error`` set verbatim when the database refused it)."""

    columns: list[str] = field(default_factory=list)
    rows: list[tuple] = field(default_factory=list)
    total_rows: int = 0
    truncated: bool = False
    seconds: float = 0.0
    error: str | None = None
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        """True when the statement ran without error or timeout."""
        return self.error is None


def target_for(con, db_id: str) -> Target:
    """The executable source of ``db_id`` from ``kb_databases`` (source_type/source_path)."""
    raise NotImplementedError


def check_read_only(sql: str, dialect: str) -> str:
    """Return the single read-only statement in ``sql`` or raise :class:`UnsafeSQL`."""
    raise NotImplementedError


def execute(target: Target, sql: str, timeout: float = 30.0, row_cap: int = 1000) -> QueryResult:
    """Check and run ``sql`` read-only on ``target`` (errors returned in ``QueryResult.error``)."""
    raise NotImplementedError


def format_observation(result: QueryResult, max_rows: int = 5) -> str:
    """The paper's R_SQL text: total rows, time, top rows as a table, or the error verbatim."""
    raise NotImplementedError


def result_key(result: QueryResult, ordered: bool) -> object:
    """A hashable key: equal keys = equal result sets (order-insensitive unless ``ordered``)."""
    raise NotImplementedError


def has_order_by(sql: str, dialect: str) -> bool:
    """True when the outermost query of ``sql`` has an ORDER BY."""
    raise NotImplementedError
