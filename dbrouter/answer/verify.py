"""Checking a verified example's SQL before it is stored: it must be one read-only SELECT that runs.

`dbrouter examples add` used to store SQL over a table that does not exist; such an example then
taught routing and SQL generation something false. Now the SQL runs once on its database's own
source, read-only and with no row fetched (``select * from (<sql>) limit 0``, bounded in time); a
database ingested without data (a schema file) has its SQL checked against the tables the
knowledge base knows for it instead.
"""

from __future__ import annotations

from dbrouter.connection import Connection
from dbrouter.errors import DbrouterError
from dbrouter.execute.runners import check_tables, execute, kb_table_names, target_for
from dbrouter.query.guard import UnsafeSQL, check_read_only
from dbrouter.sources.base import NoDataSource, Target

VERIFY_TIMEOUT = 30.0
"""Seconds the zero-row run may take before the example is refused."""


def verify_example_sql(con: Connection, db_id: str, sql: str, timeout: float = VERIFY_TIMEOUT) -> str:
    """Refuse SQL that is not one read-only SELECT of ``db_id`` that runs.

    Args:
        con: a KB connection.
        db_id: the example's database (must exist).
        sql: the example's SQL.
        timeout: seconds the zero-row run may take.

    Returns:
        How it was checked: ``"ran"`` (a zero-row run on the source) or ``"tables"`` (no data
        source: the tables it reads are the database's).

    Raises:
        DbrouterError: the reason it is refused (unsafe, an unknown table, the database's error, a
            timeout), saying what to do.
    """
    try:
        target = target_for(con, db_id)
    except NoDataSource as exc:
        return _check_against_catalog(con, db_id, sql, exc.dialect or "duckdb")
    try:
        statement = check_read_only(sql, target.dialect)
    except UnsafeSQL as exc:
        raise DbrouterError(f"the example's SQL is refused: {exc}") from None
    try:
        result = execute(target, f"select * from ({statement.rstrip().rstrip(';')}) as dbrouter_example limit 0",
                         timeout=timeout, row_cap=0)
    except UnsafeSQL as exc:
        raise DbrouterError(f"the example's SQL is refused: {exc}") from None
    if result.timed_out:
        raise DbrouterError(f"the example's SQL did not finish a zero-row run on {db_id} within {timeout:.0f} s: "
                            "simplify it, or check the database is reachable")
    if not result.ok:
        raise DbrouterError(f"the example's SQL does not run on {db_id}: {result.error}; "
                            "fix it (an example teaches routing and SQL generation) and add it again")
    return "ran"


def _check_against_catalog(con: Connection, db_id: str, sql: str, dialect: str) -> str:
    try:
        statement = check_read_only(sql, dialect)
    except UnsafeSQL as exc:
        raise DbrouterError(f"the example's SQL is refused: {exc}") from None
    try:
        check_tables(statement, Target(db_id=db_id, kind="schema", sql_dialect=dialect,
                                       tables=kb_table_names(con, db_id)))
    except UnsafeSQL as exc:
        raise DbrouterError(f"the example's SQL is refused: {exc}; {db_id} has no data source to run it on, "
                            "so its tables were checked against the knowledge base") from None
    return "tables"
