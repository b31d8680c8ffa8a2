"""One client session of `dbrouter serve`: its own DuckDB cursor, its prepared statements and cursors.

Each session runs its queries on its own cursor of the knowledge base's connection (created on the
first query with the route-path macros and the catalog objects of :mod:`dbrouter.serve.catalog`,
again after a rebuilt warehouse was reopened), so sessions run in parallel and a slow query holds
up only its own client. Besides one checked SELECT a session answers:

- client probes: ``SET``/``RESET``/``BEGIN``/``COMMIT``/``ROLLBACK``/``DISCARD`` get an empty
  CommandComplete, ``SHOW x`` one text row, ``SHOW TABLES`` the knowledge base's tables,
  ``select version()`` a ``PostgreSQL ...`` string;
- ``PREPARE name AS SELECT ...`` / ``EXECUTE name (args)`` / ``DEALLOCATE``: the statement is
  checked once, the arguments must be constants;
- ``DECLARE name CURSOR FOR SELECT ...`` / ``FETCH [FORWARD] n|ALL FROM name`` / ``CLOSE``
  (psycopg's named cursors): the result is held in the session, at most :data:`CURSOR_MAX_ROWS` rows.

Anything else is refused with SQLSTATE 25006 (read-only) and the session goes on.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from typing import TYPE_CHECKING, Any, Protocol

from buenavista.core import BVType, Session, SimpleQueryResult

from dbrouter.errors import USER_ERRORS, QueryRefused
from dbrouter.feedback.log import append, from_sql_call
from dbrouter.kb.held import QUESTION_UDF
from dbrouter.kb.held_sql import SQL_UDF
from dbrouter.query.guard import UnsafeSQL, check_read_only
from dbrouter.serve import MAX_CURSORS, MAX_RESULT_BYTES
from dbrouter.serve.catalog import SERVER_VERSION, SETTINGS, rewrite
from dbrouter.serve.statement import Calls
from dbrouter.serve.wire import TypedResult
from python_udfs.plugin import UDF_NAMES

if TYPE_CHECKING:
    from pathlib import Path

    from dbrouter.feedback.log import ClientBudget


class KnowledgeBase(Protocol):
    """What a session needs of the warehouse it runs on (:class:`dbrouter.serve.knowledge.KnowledgeBase`):
    declared here so that this module does not import the server that imports it."""

    timeout: float
    query_log: Path | None
    log_budget: ClientBudget

    def query(self, sql: str, params=None, session: KBSession | None = None) -> Any:
        """Run one checked statement on the session's cursor; the result as a ``pyarrow.Table``."""
        ...

    def session_view(self, session: KBSession, ddl: str) -> None:
        """Run one of the session's own ``CREATE TEMP VIEW`` statements on its cursor."""
        ...

CURSOR_MAX_ROWS = 100_000
MAX_PREPARED = 1000
_NO_OP = {"SET": "SET", "RESET": "RESET", "BEGIN": "BEGIN", "START": "BEGIN", "COMMIT": "COMMIT", "END": "COMMIT",
          "ROLLBACK": "ROLLBACK", "ABORT": "ROLLBACK", "DISCARD": "DISCARD ALL", "SAVEPOINT": "SAVEPOINT",
          "RELEASE": "RELEASE"}
_SHOW = {**SETTINGS, "transaction isolation level": SETTINGS["transaction_isolation"]}
_VERSION = re.compile(r"^\s*select\s+(pg_catalog\s*\.\s*)?version\s*\(\s*\)\s*;?\s*$", re.IGNORECASE)
_WORD = re.compile(r"^\s*([A-Za-z_]+)")
_TO_SAVEPOINT = re.compile(r"^\s*ROLLBACK\s+(?:WORK\s+|TRANSACTION\s+)?TO\b", re.IGNORECASE)
_NAME = r"(\"(?:[^\"]|\"\")+\"|[A-Za-z_][A-Za-z0-9_$]*)"
_PREPARE = re.compile(rf"^\s*PREPARE\s+{_NAME}\s*(?:\([^)]*\))?\s+AS\s+(.+)$", re.IGNORECASE | re.DOTALL)
_EXECUTE = re.compile(rf"^\s*EXECUTE\s+{_NAME}\s*(?:\((.*)\))?\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_DEALLOCATE = re.compile(rf"^\s*DEALLOCATE\s+(?:PREPARE\s+)?(ALL|{_NAME})\s*;?\s*$", re.IGNORECASE)
_DECLARE = re.compile(rf"^\s*DECLARE\s+{_NAME}\s+(?:BINARY\s+)?(?:(?:ASENSITIVE|INSENSITIVE)\s+)?"
                      r"(?:(?:NO\s+)?SCROLL\s+)?CURSOR\s+(?:(?:WITH|WITHOUT)\s+HOLD\s+)?FOR\s+(.+)$",
                      re.IGNORECASE | re.DOTALL)
_FETCH = re.compile(rf"^\s*FETCH\s+(?:(NEXT|ALL|FORWARD\s+ALL|FORWARD\s+\d+|FORWARD|\d+)\s+)?(?:(?:FROM|IN)\s+)?"
                    rf"{_NAME}\s*;?\s*$", re.IGNORECASE)
_CLOSE = re.compile(rf"^\s*CLOSE\s+(ALL|{_NAME})\s*;?\s*$", re.IGNORECASE)
_SHOW_TABLES = re.compile(r"^\s*SHOW\s+(ALL\s+)?TABLES\s*;?\s*$", re.IGNORECASE)
TABLES_SQL = ("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() "
              "ORDER BY 1")


def _name(raw: str) -> str:
    return raw[1:-1].replace('""', '"') if raw.startswith('"') else raw.lower()


def _show(sql: str) -> SimpleQueryResult:
    """One text row for ``SHOW name`` (a fixed answer for common probes, else an empty string)."""
    name = " ".join(sql.strip().rstrip(";").split()[1:]).lower()
    column = name.replace(" ", "_") or "setting"
    return SimpleQueryResult(column, _SHOW.get(name, ""), BVType.TEXT)


def _parsed(pattern: re.Pattern, sql: str, form: str) -> re.Match:
    """``pattern``'s match of a session statement.

    Raises:
        QueryRefused: it does not match; the message gives the statement's ``form`` (SQLSTATE 42601).
    """
    match = pattern.match(sql)
    if not match:
        raise QueryRefused(f"{form.split()[0]}: write it as {form}", "42601")
    return match


def _checked(sql: str) -> str:
    """The client's statement, catalog spellings rewritten (:func:`~dbrouter.serve.catalog.rewrite`),
    once it is one read-only SELECT.

    It is checked in DuckDB's dialect, or where sqlglot cannot read the rewritten text as DuckDB SQL
    (a BI tool's catalog query, e.g. ``json_build_object`` with comparisons among its arguments) in
    the Postgres dialect the client wrote it in; either way DuckDB's own parser must then find exactly
    one SELECT (:meth:`KnowledgeBase.query`), and the connection cannot write.

    Raises:
        QueryRefused: not one read-only SELECT (SQLSTATE 25006).
    """
    rewritten = rewrite(sql)
    try:
        return check_read_only(rewritten, "duckdb", INTERNAL_UDFS, source=False)
    except UnsafeSQL as exc:
        refusal = exc
    if refusal.reason.startswith("cannot parse"):
        try:
            check_read_only(sql, "postgres", INTERNAL_UDFS, source=False)
            return rewritten.strip().rstrip(";")
        except UnsafeSQL:
            pass
    raise QueryRefused(f"dbrouter serves the knowledge base read-only: {refusal}", "25006") from None


INTERNAL_UDFS = frozenset({n for n in UDF_NAMES if n not in ("embed", "embed_phrase", "dbrouter_cosine",
                                                              "dbrouter_embedder")} | {QUESTION_UDF, SQL_UDF})
"""The Python UDFs a client may not call directly: plumbing of the routing macros, which call them on
one question; over a table's rows each holds the server's GIL row after row (route_query's p50 went
from 0.14 s to 2.7 s beside one such query). ``embed``/``embed_phrase`` stay, bounded per call.
The held routing statement's question (``dbrouter_held_question``) is another session's question:
never a client's to read; ``dbrouter_held_sql`` answers for an in-process connection's scope, which a
server never registers (it opens its KB without the plain names), refused all the same."""


class KBSession(Session):
    """One client session: probes and session statements answered here, SELECTs run on its cursor."""

    def __init__(self, kb: KnowledgeBase) -> None:
        super().__init__()
        self.kb = kb
        self.in_txn = False
        self.db_cursor: Any = None
        self.generation = -1
        self.catalog = False  # the catalog objects made on db_cursor (on its first catalog query)
        self.path = False  # the route-path macros made on db_cursor (on its first statement needing them)
        self.prepared: dict[str, str] = {}
        self.cursors: dict[str, list] = {}  # name -> [arrow table, next row]
        self.access: Any = None  # the user's UserAccess under an access policy (serve --access)
        self.user: str | None = None  # the user name the client logged in as (the policy's, under one)
        self.calls = Calls()  # the routing calls of the last statement (DuckDB's parse)
        self.address: str | None = None  # the client's address (its query-log budget)
        # who the endpoint's turns count this session for (dbrouter.serve.turns): its address, and
        # under an access policy its user (a password proved it; without one a client could name
        # a new user per connection to get more turns)
        self.client: tuple[str | None, str | None] = (None, None)
        self.cancelled = threading.Event()  # a cancel request came for the statement in progress

    def cursor(self):
        return None

    def close(self) -> None:
        """Called by buenavista when the client disconnects: free the cursor and held results."""
        self.cursors.clear()
        self.prepared.clear()
        if self.db_cursor is not None:
            with contextlib.suppress(Exception):  # the warehouse was reopened: the cursor is gone already
                self.db_cursor.close()
            self.db_cursor = None

    def in_transaction(self) -> bool:
        return self.in_txn

    def run(self, sql: str, params=None):
        """Run one checked statement on this session's cursor (see :meth:`KnowledgeBase.query`); a
        statement that calls a routing or retrieval function is logged (:func:`~dbrouter.feedback.log.from_sql_call`)."""
        started = time.perf_counter()
        self.calls = Calls()
        try:
            table = self._run(sql, params)
        except QueryRefused as exc:
            self._log(sql, params, None, str(exc), started)
            raise
        self._log(sql, params, table, None, started)
        return table

    def _log(self, sql: str, params, table, error: str | None, started: float) -> None:
        calls = self.calls
        if self.kb.query_log is None or not calls.entry_points:  # logged: what DuckDB ran, not the text's spelling
            return
        question = calls.question
        if question is None and calls.parameter is not None and isinstance(params, (list, tuple)) \
                and calls.parameter < len(params) and isinstance(params[calls.parameter], str):
            question = params[calls.parameter]
        # a ranking is read only from the call's own rows, not from columns the client made up
        entry = from_sql_call(sql, params, table if calls.plain else None, error, time.perf_counter() - started,
                              self.user, function=calls.entry_points[0], question=question)
        if entry is not None:
            append(self.kb.query_log, entry, self.kb.log_budget, self.address or self.user or "")

    def _run(self, sql: str, params):
        import duckdb

        self.cancelled.clear()  # a cancel request ends the statement in progress, not a later one
        try:
            return self.kb.query(sql, params, session=self)
        except QueryRefused:
            raise
        except duckdb.InterruptException:
            raise QueryRefused(f"the query was cancelled (by the client, or at the endpoint's {self.kb.timeout:.0f}s "
                               "timeout)", "57014") from None
        except duckdb.Error as exc:
            raise QueryRefused(" ".join(str(exc).split()), "42000") from None
        except USER_ERRORS as exc:
            raise QueryRefused(str(exc), "XX000") from None

    def execute_sql(self, sql: str, params=None):
        """Answer one statement.

        Returns:
            A buenavista ``QueryResult``.

        Raises:
            QueryRefused: not a read-only statement this endpoint answers (SQLSTATE 25006), or DuckDB
                failed it.
        """
        import duckdb

        match = _WORD.match(sql)
        word = match.group(1).upper() if match else ""
        if not sql.strip().strip(";").strip():
            return TypedResult(status="")
        if word in _NO_OP:
            if word in ("BEGIN", "START"):
                self.in_txn = True
            elif word in ("COMMIT", "END", "ROLLBACK", "ABORT") and not _TO_SAVEPOINT.match(sql):
                self.in_txn = False
            return TypedResult(status=_NO_OP[word])
        if _SHOW_TABLES.match(sql):
            return TypedResult(self.run(TABLES_SQL))
        if word == "SHOW":
            return _show(sql)
        if _VERSION.match(sql):
            return SimpleQueryResult("version", f"PostgreSQL {SERVER_VERSION} (dbrouter over DuckDB "
                                     f"v{duckdb.__version__})", BVType.TEXT)
        handler = {"PREPARE": self._prepare, "EXECUTE": self._execute, "DEALLOCATE": self._deallocate,
                   "DECLARE": self._declare, "FETCH": self._fetch, "CLOSE": self._close}.get(word)
        if handler is not None:
            return handler(sql, params)
        table = self.run(_checked(sql), params)
        return TypedResult(table)

    # -- PREPARE / EXECUTE / DEALLOCATE

    def _prepare(self, sql: str, params):
        match = _parsed(_PREPARE, sql, "PREPARE name [(types)] AS SELECT ...")
        if len(self.prepared) >= MAX_PREPARED:
            raise QueryRefused(f"this session holds {MAX_PREPARED} prepared statements: DEALLOCATE some", "53000")
        self.prepared[_name(match.group(1))] = _checked(match.group(2))
        return TypedResult(status="PREPARE")

    def _execute(self, sql: str, params):
        match = _parsed(_EXECUTE, sql, "EXECUTE name [(constant, ...)]")
        name = _name(match.group(1))
        if name not in self.prepared:
            raise QueryRefused(f"prepared statement {name!r} does not exist", "26000")
        values = None
        if match.group(2) and match.group(2).strip():
            arguments = self.run(_checked(f"SELECT {match.group(2)}"), params)
            values = [column[0].as_py() for column in arguments.columns]
        return TypedResult(self.run(self.prepared[name], values))

    def _deallocate(self, sql: str, params):
        match = _parsed(_DEALLOCATE, sql, "DEALLOCATE [PREPARE] name | ALL")
        if match.group(1).upper() == "ALL":
            self.prepared.clear()
        else:
            self.prepared.pop(_name(match.group(1)), None)
        return TypedResult(status="DEALLOCATE")

    # -- DECLARE / FETCH / CLOSE

    def _declare(self, sql: str, params):
        match = _parsed(_DECLARE, sql, "DECLARE name [NO SCROLL] CURSOR [WITH[OUT] HOLD] FOR SELECT ...")
        name = _name(match.group(1))
        if len(self.cursors) >= MAX_CURSORS and name not in self.cursors:
            raise QueryRefused(f"this session holds {MAX_CURSORS} open cursors, the endpoint's limit: CLOSE one "
                               "(or CLOSE ALL) first", "53000")
        statement = _checked(match.group(2))
        table = self.run(f"SELECT * FROM ({statement}) AS dbrouter_cursor LIMIT {CURSOR_MAX_ROWS + 1}", params)
        if table.num_rows > CURSOR_MAX_ROWS:
            raise QueryRefused(f"a cursor holds at most {CURSOR_MAX_ROWS:,} rows: narrow the query (WHERE, LIMIT)",
                               "54000")
        held = sum(t.nbytes for n, (t, _) in self.cursors.items() if n != name) + table.nbytes
        if held > MAX_RESULT_BYTES:
            raise QueryRefused(f"this session's cursors would hold {held / 2**20:,.0f} MiB; at most "
                               f"{MAX_RESULT_BYTES / 2**20:,.0f} MiB together: CLOSE one or narrow the query", "53000")
        self.cursors[name] = [table, 0]
        self.kb.session_view(self, self.cursors_view())
        return TypedResult(status="DECLARE CURSOR")

    def _fetch(self, sql: str, params):
        match = _parsed(_FETCH, sql, "FETCH [FORWARD] n | ALL | NEXT FROM name")
        how, name = (match.group(1) or "NEXT").upper().split(), _name(match.group(2))
        if name not in self.cursors:
            raise QueryRefused(f"cursor {name!r} does not exist", "34000")
        table, pos = self.cursors[name]
        count = int(how[-1]) if how[-1].isdigit() else (table.num_rows if how[-1] == "ALL" else 1)
        part = table.slice(pos, max(0, count))
        self.cursors[name][1] = pos + part.num_rows
        return TypedResult(part)

    def _close(self, sql: str, params):
        match = _parsed(_CLOSE, sql, "CLOSE name | ALL")
        if match.group(1).upper() == "ALL":
            self.cursors.clear()
        elif self.cursors.pop(_name(match.group(1)), None) is None:
            raise QueryRefused(f"cursor {_name(match.group(1))!r} does not exist", "34000")
        self.kb.session_view(self, self.cursors_view())
        return TypedResult(status="CLOSE CURSOR")

    def describe_cursor(self, name: str):
        """The columns of a declared cursor (a client's Describe of it as a portal), without rows."""
        return TypedResult(self.cursors[name][0].slice(0, 0))

    def cursors_view(self) -> str:
        """``pg_cursors`` of this session (psycopg asks it before closing a named cursor)."""
        rows = " UNION ALL ".join(
            f"SELECT '{n.replace(chr(39), chr(39) * 2)}' AS name, '' AS statement, false AS is_holdable, "
            "false AS is_binary, false AS is_scrollable, current_timestamp AS creation_time" for n in self.cursors)
        empty = ("SELECT '' AS name, '' AS statement, false AS is_holdable, false AS is_binary, false AS is_scrollable, "
                 "current_timestamp AS creation_time WHERE false")
        return f"CREATE OR REPLACE TEMP VIEW pg_cursors AS {rows or empty}"
