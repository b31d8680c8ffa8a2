"""The knowledge base a `dbrouter serve` or `dbrouter mcp` endpoint answers from: the warehouse
opened read-only with the UDFs, reopened when ``dbrouter build`` replaced it, and one checked
statement run on a session's cursor (:meth:`KnowledgeBase.query`) or Python code's
(:meth:`KnowledgeBase.cursor`).

- every client session runs on its own cursor of one read-only :func:`dbrouter.connect` connection
  (the UDFs are registered, and a cursor gets the UDF path's ``route_query`` & co. when a statement
  names one, and the Postgres catalog objects BI tools read, see :mod:`dbrouter.serve.catalog`),
  with external access off and the configuration locked: sessions run in parallel;
- only one read-only SELECT reaches DuckDB (:func:`dbrouter.query.guard.check_read_only`, then
  DuckDB's own parser and :func:`dbrouter.serve.statement.check_statement`); a plain routing call
  is answered by the held routing query (:func:`dbrouter.kb.held.pooled_statement`);
- a rebuilt warehouse is picked up without restart: before each query the file's
  ``(st_ino, st_mtime_ns)`` is compared with the open one (``dbrouter build`` ``os.replace``s a new
  file over it) and, when it changed, the new file is opened beside the old one: new queries use it
  at once, queries in flight finish on the old one (see :class:`KnowledgeBase`).

The Postgres protocol around it is :mod:`dbrouter.serve.server`'s; the MCP server uses this module
alone.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Generator, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dbrouter.access import restrict
from dbrouter.connection import record_route_path
from dbrouter.feedback.log import ClientBudget
from dbrouter.kb.answers import MISSING, Answers
from dbrouter.kb.connect import connect, route_path_ddl
from dbrouter.kb.held import file_macros, interrupt, pooled_statement, scope_key
from dbrouter.serve import (
    DUCKDB_CONFIG,
    MAX_EMBED_TEXTS,
    MAX_RESULT_BYTES,
    MAX_ROWS,
    MEMORY_LIMIT,
    QUERY_TIMEOUT,
    TEMP_LIMIT,
    default_max_running,
)
from dbrouter.serve.catalog import catalog_ddl, needs_catalog
from dbrouter.serve.session import INTERNAL_UDFS, KBSession, QueryRefused
from dbrouter.serve.statement import Allowed, Calls, StatementRefused, allowed_of, check_statement
from dbrouter.serve.turns import Turns
from dbrouter.serve.wire import project_for_wire, typed_table


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns


@dataclass
class _Generation:
    """One opening of the warehouse file: the connection, the queries running on it, whether a
    newer file has replaced it (then it closes when its last query ends)."""

    number: int
    con: Any
    path_ddl: str | None
    identity: tuple[int, int] | None
    link: Path | None = None
    readers: int = 0
    retired: bool = False
    allowed: Allowed | None = None  # what its sessions may name (read from the first session cursor)
    path_names: frozenset[str] = frozenset()  # what makes a session need path_ddl (_path_names)
    answers: Answers = field(default_factory=Answers)  # the held routing calls' answers (_answer_key)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.con.close()
        if self.link is not None:
            with contextlib.suppress(OSError):
                self.link.unlink()


class KnowledgeBase:
    """The warehouse, opened read-only with the UDFs, reopened when ``dbrouter build`` replaced it.

    A rebuilt file is opened beside the old one (through a hard link of its own name: DuckDB keeps
    one instance per path, so the same path would give the old database back) and new queries go
    to it at once; queries already running finish on the old file, which closes after the last.
    Where no link can be made (a read-only directory) the swap waits for the running queries.
    """

    def __init__(self, path: Path, timeout: float = QUERY_TIMEOUT, max_rows: int = MAX_ROWS,
                 query_log: Path | None = None, max_running: int | None = None) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self.max_rows = max_rows
        self.max_running = max_running or default_max_running()
        self._turns = Turns(self.max_running)  # statements running (query())
        self.query_log = query_log  # where the sessions' routing calls are logged (None: not logged)
        self.log_budget = ClientBudget()  # what each client address may add to the log per hour
        self.reopened = 0
        self._cond = threading.Condition()
        self._opening = threading.Lock()  # one reopen at a time; queries do not wait for it
        self._links = self.path.parent / ".dbrouter-dbt" / "serve"
        _remove_stale_links(self._links)
        self._current: _Generation | None = self._open(0, self.path, _file_identity(self.path))

    def _open(self, number: int, path: Path, identity) -> _Generation:
        # no plain names: Python code (MCP) calls the path's functions; the sessions' cursors get theirs
        con = connect(path, max_texts=MAX_EMBED_TEXTS, config=dict(DUCKDB_CONFIG), plain_names=False)
        try:
            con.execute("SET enable_external_access=false")
            con.execute(f"SET memory_limit='{MEMORY_LIMIT}'")  # all sessions together: over it a query fails
            con.execute(f"SET max_temp_directory_size='{TEMP_LIMIT}'")
            con.execute("SET lock_configuration=true")
            ddl = route_path_ddl(con, "udf")  # temp macros are per cursor: run where needed (_path_names)
            names = _path_names(con, ddl) if ddl else frozenset()
        except BaseException:
            con.close()
            raise
        return _Generation(number, con, ddl, identity, path_names=names)

    def _link(self, number: int) -> Path | None:
        """A new hard link to the warehouse file (its own path for DuckDB), or None when none can be made."""
        link = self._links / f"{self.path.name}.{os.getpid()}.{number}"
        try:
            self._links.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileNotFoundError):
                link.unlink()
            os.link(self.path, link)
        except OSError:
            return None
        return link

    def refresh(self) -> bool:
        """Open the warehouse anew when its file changed since it was opened; returns whether it did.

        Raises:
            WarehouseError: the new file cannot be opened (the next query tries again).
        """
        identity = _file_identity(self.path)
        current = self._current
        if current is not None and identity == current.identity:
            return False
        with self._opening:
            current = self._current
            if current is not None and _file_identity(self.path) == current.identity:
                return False
            number = (current.number if current is not None else 0) + 1
            link = self._link(number)
            if link is None:  # no link: close first (same path), waiting for the running queries
                self._retire(wait=True)
                new = self._open(number, self.path, _file_identity(self.path))
            else:
                try:
                    new = self._open(number, link, _file_identity(link))
                except BaseException:
                    with contextlib.suppress(OSError):
                        link.unlink()
                    raise
                new.link = link
                self._retire(wait=False)
            with self._cond:
                self._current = new
                self.reopened += 1
            return True

    def _retire(self, wait: bool) -> None:
        """Mark the current generation replaced; close it now if idle (or, with ``wait``, once idle)."""
        with self._cond:
            old, self._current = self._current, (None if wait else self._current)
            if old is None:
                return
            old.retired = True
            while wait and old.readers:
                self._cond.wait()
            idle = old.readers == 0
        if idle:
            old.close()

    def _enter(self) -> _Generation:
        with self._cond:
            while self._current is None:  # a no-link swap is opening the file
                if not self._cond.wait(timeout=self.timeout):
                    raise QueryRefused("the warehouse is being reopened after a rebuild: try again", "57P03")
            gen = self._current
            gen.readers += 1
            return gen

    def _leave(self, gen: _Generation) -> None:
        with self._cond:
            gen.readers -= 1
            last = gen.retired and gen.readers == 0
            self._cond.notify_all()
        if last:
            gen.close()

    def query(self, sql: str, params=None, session: KBSession | None = None):
        """Run one checked statement on the session's cursor; returns the result as a ``pyarrow.Table``.

        A session keeps its cursor (a connection of its own to the warehouse, with the route-path
        macros, and the catalog objects of :func:`~dbrouter.serve.catalog.catalog_ddl` from its first
        statement that names one) until the warehouse is reopened; without a session a cursor is
        made for this query alone. Types Postgres has no form for are cast in DuckDB
        (:func:`~dbrouter.serve.wire.project_for_wire`), and the table carries each column's wire type.

        Raises:
            duckdb.Error: DuckDB refused or failed the query (also ``InterruptException`` on timeout).
            QueryRefused: the result is over the endpoint's bounds, or the statement waited its turn
                (:meth:`_turn`) for the whole timeout or until the client cancelled it.
        """
        self.refresh()
        gen = self._enter()
        try:
            if session is None:
                cur = self._new_cursor(gen, catalog=needs_catalog(sql))
            else:
                if session.db_cursor is None or session.generation != gen.number:
                    if session.db_cursor is not None:
                        with contextlib.suppress(Exception):
                            session.db_cursor.close()
                    session.db_cursor, session.generation = self._new_cursor(gen, path=False), gen.number
                    session.catalog = session.path = False
                    session.db_cursor.execute(session.cursors_view())
                    if session.access is not None:  # the session sees the user's databases only
                        restrict(session.db_cursor, session.access)
                cur = session.db_cursor
                if not session.catalog and needs_catalog(sql):  # its first catalog query: make them now
                    for statement in catalog_ddl(session.user):
                        cur.execute(statement)
                    session.catalog = True
            _one_select(cur, sql)
            try:
                calls = check_statement(cur, sql, self._allowed(gen, cur), session is not None and session.access is not None)
                if session is not None:
                    session.calls = calls
            except StatementRefused as exc:
                raise QueryRefused(str(exc), exc.sqlstate) from None
            plain = _plain_call(gen, sql, params, calls) if session is not None else None
            key = _answer_key(cur, plain)
            kept = gen.answers.get(key)
            if kept is not MISSING:  # asked before under this scope: the held query's rows, not run again
                return _named(calls, *kept)
            client = session.client if session is not None else None
            waited = self._turn(session, client)
            # a held call runs on a cursor of cur's own (dbrouter.kb.held): the timer stops that too
            timer = threading.Timer(max(self.timeout - waited, 0.0), interrupt, (cur,))
            timer.start()
            try:
                # the held cursor is this call's until its rows are read (a pool's, shared between sessions)
                with _held_call(cur, gen, plain) as held:
                    if held is None and session is not None and not session.path and calls.names & gen.path_names:
                        cur.execute(gen.path_ddl)  # the first statement that names a plain entry point
                        session.path = True
                    rel = held[0].sql(held[1]) if held is not None else cur.sql(sql, params=params or None)
                    if rel is None:
                        raise QueryRefused("the statement returned no result set", "0A000")
                    rel, wires = project_for_wire(rel)
                    table = _bounded(rel.limit(self.max_rows + 1), self.max_rows)
                if held is not None:
                    gen.answers.put(key, (table, wires), table.nbytes)
                return _named(calls, table, wires)
            finally:
                timer.cancel()
                self._turns.give_back(client)
                if session is None:
                    cur.close()
        finally:
            self._leave(gen)

    def _turn(self, session: KBSession | None, client: Hashable) -> float:
        """Wait for one of the ``max_running`` turns to run a statement (:class:`Turns`); the seconds waited.

        Statements beyond the cores' worth only share them: each runs slower and all finish later
        (16 sessions of the demo KB at once got 0.7x the throughput of 4). So the others wait here,
        within the statement's timeout: a turn given back goes to the waiting client (``session.client``)
        that holds the fewest, first come first served within a client. A client's cancel request
        ends the wait.

        Args:
            session: the statement's session (None: a query of the endpoint's own).
            client: who runs it (``session.client``; None for the endpoint's own).

        Raises:
            QueryRefused: no turn came within the timeout, or the client cancelled (57014).
        """
        waited = self._turns.take(self.timeout, session.cancelled if session is not None else None, client)
        if waited is None:
            if session is not None and session.cancelled.is_set():
                raise QueryRefused("the query was cancelled by the client while it waited its turn", "57014")
            raise QueryRefused(f"the endpoint is busy: {self.max_running} statements ran for the whole "
                               f"{self.timeout:g}s timeout while this one waited its turn (dbrouter serve "
                               "--max-running); try again", "57014")
        return waited

    @contextlib.contextmanager
    def cursor(self, shared: bool = False) -> Generator[Any]:
        """A cursor on the current warehouse for one call of Python code (``dbrouter mcp``'s tools):
        reopened after a rebuild like every query, with the UDF route path, and interrupted after
        the endpoint's timeout.

        Neither has the plain-named entry points (temp macros, ~60-100 ms to create): dbrouter's
        functions call the UDF path's by name (:func:`dbrouter.connection.entry`).

        Args:
            shared: yield the generation's own connection instead of a new cursor; the caller must
                not use it from two threads at once.

        Yields:
            The cursor (closed afterwards unless shared).
        """
        self.refresh()
        gen = self._enter()
        try:
            cur = gen.con if shared else gen.con.cursor()
            # the held routing query runs on cursors of cur's own (dbrouter.kb.held): stop those too
            timer = threading.Timer(self.timeout, interrupt, (cur,))
            try:
                if gen.path_ddl and not shared:
                    record_route_path(cur, "udf")
                timer.start()
                yield cur
            finally:
                timer.cancel()
                if not shared:
                    cur.close()
        finally:
            self._leave(gen)

    def session_view(self, session: KBSession, ddl: str) -> None:
        """Run one of the session's own ``CREATE TEMP VIEW`` statements on its cursor (``pg_cursors``)."""
        gen = self._enter()
        try:
            if session.db_cursor is not None and session.generation == gen.number:
                session.db_cursor.execute(ddl)
        finally:
            self._leave(gen)

    def _allowed(self, gen: _Generation, cur) -> Allowed:
        """What this opening's sessions may name (:func:`~dbrouter.serve.statement.allowed_of`), read
        once, on a cursor with every catalog object (a session makes them when it first needs them)."""
        if gen.allowed is None:
            full = self._new_cursor(gen, catalog=True)
            try:
                gen.allowed = allowed_of(full, INTERNAL_UDFS)
            finally:
                full.close()
        return gen.allowed

    @staticmethod
    def _new_cursor(gen: _Generation, catalog: bool = False, path: bool = True):
        """A cursor with, with ``path``, the route-path macros and, with ``catalog``, the Postgres
        catalog objects (temporary: per cursor; :func:`~dbrouter.serve.catalog.needs_catalog`)."""
        cur = gen.con.cursor()
        for statement in ((gen.path_ddl,) if gen.path_ddl and path else ()) + (catalog_ddl() if catalog else ()):
            cur.execute(statement)
        return cur

    def close(self) -> None:
        """Close the connection (and an older one still open)."""
        with self._cond:
            gen, self._current = self._current, None
        if gen is not None:
            gen.close()


_MACRO_NAME = re.compile(r"\btemp\s+macro\s+([a-z_][a-z0-9_]*)\s*\(", re.IGNORECASE)


def _path_names(con: Any, ddl: str) -> frozenset[str]:
    """The names whose use makes a session need the route-path macros (``ddl``): the plain entry
    points it creates, and the file's views and macros that name one of them, directly or through
    another such view or macro (found in their text, where a mention in a comment or string counts
    too: at worst a session makes the macros it did not need).

    A session makes them on its first statement that names one of these and is not answered by the
    held routing query (:func:`_held_call`): creating them costs ~50-60 ms (DuckDB binds each
    macro's body, the whole routing query), which every session paid on its first statement, a
    ``select 1`` or a BI tool's catalog query included.
    """
    plain = {m.lower() for m in _MACRO_NAME.findall(ddl)}
    texts = con.execute("select view_name, sql from duckdb_views() where database_name = current_database()").fetchall()
    texts += list(file_macros(con).items())
    names, grew = set(plain), True
    while grew:  # views of views: until no more text names one
        found = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(names))) + r")\b", re.IGNORECASE)
        more = {n.lower() for n, text in texts if text and n.lower() not in plain and found.search(text)}
        grew = not more <= names
        names |= more
    return frozenset(names)


_HELD_CALL = re.compile(r"(?:\s*(?:--[^\n]*(?:\n|$)|/\*(?:[^*]|\*(?!/))*\*/))*"
                        r"\s*select\s+(route_query(?:_json)?)(?:_udf)?\s*\(\s*('(?:[^']|'')*'|\$1|\?)"
                        r"\s*(?:,\s*(\d{1,4})\s*)?\)\s*;?\s*(?:--[^\n]*\s*)?", re.IGNORECASE)
"""A client's plain routing call: ``select route_query('...')`` or ``select route_query_json('...', k)``
(or ``_udf``), the question a literal or the statement's one parameter; comments before it (Metabase
opens every query with ``-- Metabase:: userID: ...``) and one line comment after it are allowed."""


def _plain_call(gen: _Generation, sql: str, params, calls: Calls) -> tuple[str, Any, int | None] | None:
    """(entry, question, k) of a session's plain routing call, or None for any other statement.

    Such a call is what most SQL clients send; answered by the routing query held in the
    generation's pool (:func:`_held_call`) it is not planned again, from a session's first call
    on. Anything else (an alias, another argument, a second call, the pure-SQL path's names) runs
    as written. The question is the one DuckDB's parse of the statement read (``calls``, from
    :func:`~dbrouter.serve.statement.check_statement`), or the statement's one parameter.
    """
    match = _HELD_CALL.fullmatch(sql) if gen.path_ddl else None
    if match is None:
        return None
    name, literal, k = match.group(1).lower(), match.group(2), match.group(3)
    if literal in ("$1", "?"):
        if not (calls.parameter == 0 and isinstance(params, (list, tuple)) and len(params) == 1):
            return None
        return name, params[0], None if k is None else int(k)
    if params:
        return None
    return name, calls.question, None if k is None else int(k)


def _held_call(cur: Any, gen: _Generation,
               plain: tuple[str, Any, int | None] | None) -> contextlib.AbstractContextManager[tuple[Any, str] | None]:
    """A context giving the held cursor and statement answering a plain routing call
    (:func:`_plain_call`), or None: the generation's pool (:func:`dbrouter.kb.held.pooled_statement`:
    cursors prepared per access scope, shared by its sessions, one session's at a time)."""
    if plain is None:
        return contextlib.nullcontext()
    name, question, k = plain
    return pooled_statement(cur, f"{name}_udf", question, k, share=gen.con)


def _answer_key(cur: Any, plain: tuple[str, Any, int | None] | None) -> tuple | None:
    """The key of a plain routing call's kept answer (:class:`~dbrouter.kb.answers.Answers`) under
    the session's scope, or None (not a plain call, or a question that is not text)."""
    if plain is None or not isinstance(plain[1], str):
        return None
    return Answers.key(scope_key(cur), plain[0], plain[2], plain[1])


def _named(calls: Calls, table: Any, wires: Any) -> Any:
    """The result table with the column names Postgres would give (``count``, not ``count_star()``)
    and each column's wire type."""
    if calls.column_names and len(calls.column_names) == table.num_columns:
        table = table.rename_columns(list(calls.column_names))
    return typed_table(table, wires)


def _remove_stale_links(folder: Path) -> None:
    """Delete hard links left by a `dbrouter serve` that was killed (its pid is gone)."""
    try:
        links = list(folder.iterdir()) if folder.is_dir() else []
    except OSError:  # unreadable: nothing of ours can be there
        return
    for link in links:
        parts = link.name.rsplit(".", 2)
        if len(parts) == 3 and parts[1].isdigit() and not _alive(int(parts[1])):
            with contextlib.suppress(OSError):
                link.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        pass
    return True


def _one_select(cur, sql: str) -> None:
    """DuckDB's own parser must read ``sql`` as exactly one SELECT (the guard's second opinion).

    Raises:
        QueryRefused: it does not (SQLSTATE 25006).
    """
    import duckdb

    statements = cur.extract_statements(sql)
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        kinds = ", ".join(s.type.name for s in statements) or "none"
        raise QueryRefused(f"dbrouter serves the knowledge base read-only: DuckDB reads this as {len(statements)} "
                           f"statement(s) of type {kinds}", "25006")


def _bounded(rel, max_rows: int):
    """``rel``'s rows as a ``pyarrow.Table``, read in batches and stopped as soon as they pass the
    endpoint's bounds (nothing larger than the bound is ever held).

    Raises:
        QueryRefused: more than ``max_rows`` rows or :data:`MAX_RESULT_BYTES` (SQLSTATE 54000).
    """
    import pyarrow as pa

    reader = rel.to_arrow_reader(65_536)
    batches, rows, size = [], 0, 0
    for batch in reader:
        rows, size = rows + batch.num_rows, size + batch.nbytes
        if rows > max_rows:
            raise QueryRefused(f"the result has more than {max_rows:,} rows, the endpoint's limit: add a LIMIT or "
                               "aggregate", "54000")
        if size > MAX_RESULT_BYTES:
            raise QueryRefused(f"the result holds over {MAX_RESULT_BYTES / 2**20:,.0f} MiB, the endpoint's limit: "
                               "select fewer or shorter columns", "54000")
        batches.append(batch)
    return pa.Table.from_batches(batches, schema=reader.schema)
