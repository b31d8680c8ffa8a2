"""`dbrouter serve`: the knowledge base over the Postgres wire protocol (psql, psycopg, BI tools).

The protocol is spoken by `buenavista <https://github.com/jwills/buenavista>`_ (0.5); this module
plugs dbrouter in behind it:

- every client session runs on its own cursor of one read-only :func:`dbrouter.connect` connection
  (the UDFs are registered, and each cursor gets the UDF path's ``route_query`` & co., see
  :func:`dbrouter.kb.connect.use_route_path`, and the Postgres catalog objects BI tools read, see
  :mod:`dbrouter.serve.catalog`), with external access off and the configuration locked: sessions
  run in parallel;
- only one read-only SELECT reaches DuckDB (:func:`dbrouter.query.guard.check_read_only`), or a
  session statement (``PREPARE``/``EXECUTE``, ``DECLARE``/``FETCH``/``CLOSE``, probes: see
  :mod:`dbrouter.serve.session`); anything else comes back as an ErrorResponse naming the reason,
  and the session goes on;
- a rebuilt warehouse is picked up without restart: before each query the file's
  ``(st_ino, st_mtime_ns)`` is compared with the open one (``dbrouter build`` ``os.replace``s a new
  file over it) and, when it changed, the new file is opened beside the old one: new queries use it
  at once, queries in flight finish on the old one (see :class:`KnowledgeBase`).

Fixes to buenavista 0.5 live here, in subclasses (nothing is monkeypatched): duckdb 2.0 removed
``DuckDBPyConnection.fetch_record_batch``, which ``DuckDBSession.execute_sql`` calls for every
result (``AttributeError``), so :class:`KBSession` fetches with ``relation.to_arrow_table()``;
buenavista types a column by its Arrow type alone and has no binary form for most types, so
:class:`KBHandler` sends RowDescription and DataRows itself (:mod:`dbrouter.serve.wire`: each
column's Postgres type, text or binary as the client asks). It also adds severity and SQLSTATE to
ErrorResponses, binds parameters as Postgres sends them (buenavista parses an untyped text
parameter as a date), answers Describe with RowDescription or NoData, interrupts a query on a
CancelRequest (buenavista closed the session), and refuses GSSAPI encryption like SSL.
"""

from __future__ import annotations

import contextlib
import hmac
import io
import ipaddress
import logging
import os
import re
import socket
import struct
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from buenavista.core import Connection, Session
from buenavista.postgres import BuenaVistaHandler, BuenaVistaServer, BVBuffer, ServerResponse

from dbrouter.access import AccessError, AccessPolicy, LoginThrottle, check_scopable, restrict
from dbrouter.connection import record_route_path
from dbrouter.errors import ServeError
from dbrouter.feedback.log import ClientBudget
from dbrouter.kb.connect import connect, route_path_ddl
from dbrouter.kb.held import file_macros, interrupt, pooled_statement
from dbrouter.serve import (
    AUTH_FAILURE_DELAY,
    AUTH_FAILURES,
    DUCKDB_CONFIG,
    MAX_CONNECTIONS,
    MAX_EMBED_TEXTS,
    MAX_MESSAGE_BYTES,
    MAX_RESULT_BYTES,
    MAX_ROWS,
    MAX_STARTUP_BYTES,
    MEMORY_LIMIT,
    QUERY_TIMEOUT,
    SEND_TIMEOUT,
    STARTUP_TIMEOUT,
    TEMP_LIMIT,
)
from dbrouter.serve.catalog import catalog_ddl, needs_catalog
from dbrouter.serve.pgtypes import TEXT_ARRAYS, decode_binary, parameter_types, pg_array
from dbrouter.serve.session import INTERNAL_UDFS, SERVER_VERSION, KBSession, QueryRefused
from dbrouter.serve.statement import Allowed, Calls, StatementRefused, allowed_of, check_statement
from dbrouter.serve.wire import TypedResult, data_rows, project_for_wire, row_description, typed_table

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 5433
_PLACEHOLDER = re.compile(r"\$(\d+)")
_ANY_PARAM = re.compile(r"\b(?:ANY|ALL)\s*\(\s*\$(\d+)\s*\)", re.IGNORECASE)
SSL_REQUEST, GSSENC_REQUEST, CANCEL_REQUEST = 80877103, 80877104, 80877102

logging.getLogger("buenavista").setLevel(logging.CRITICAL)  # it logs every refused query as a traceback


@dataclass(frozen=True)
class ServeConfig:
    """How to serve: the warehouse, the address, the optional password and the query timeout."""

    warehouse: Path
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    password: str | None = None
    allow_remote: bool = False
    timeout: float = QUERY_TIMEOUT
    startup_timeout: float = STARTUP_TIMEOUT
    send_timeout: float = SEND_TIMEOUT
    max_connections: int = MAX_CONNECTIONS
    max_rows: int = MAX_ROWS
    policy: AccessPolicy | None = None
    query_log: Path | None = None


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip()).is_loopback
    except ValueError:
        return False


def check_host(host: str, allow_remote: bool, password: str | None = None) -> None:
    """Refuse a non-loopback address unless ``--allow-remote`` was given, and remote clients without a password.

    Args:
        host: the address to listen on.
        allow_remote: ``--allow-remote``.
        password: the endpoint's password (None: none set).

    Raises:
        ServeError: ``host`` is not loopback and ``allow_remote`` is False, or ``allow_remote`` without a password.
    """
    if not allow_remote and not is_loopback(host):
        raise ServeError(f"--host {host} is not a loopback address: serving the knowledge base beyond this machine "
                         "needs --allow-remote (and set a password with --password-env VAR)")
    if allow_remote and not password:
        raise ServeError("--allow-remote needs a password: anyone who can reach the port would read the knowledge "
                         "base; export one and add --password-env VAR")


def password_from_env(var: str | None) -> str | None:
    """The password in environment variable ``var`` (None when no ``--password-env``).

    Raises:
        ServeError: ``var`` is named but unset or empty.
    """
    if not var:
        return None
    value = os.environ.get(var)
    if not value:
        raise ServeError(f"--password-env {var}: the environment variable {var} is unset or empty; "
                         f"export {var}=<password> first (the password is never taken from the command line)")
    return value


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
                 query_log: Path | None = None) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self.max_rows = max_rows
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
            QueryRefused: the result is over the endpoint's bounds.
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
            # a held call runs on a cursor of cur's own (dbrouter.kb.held): the timer stops that too
            timer = threading.Timer(self.timeout, interrupt, (cur,))
            timer.start()
            try:
                # the held cursor is this call's until its rows are read (a pool's, shared between sessions)
                with _held_call(cur, gen, sql, params, calls) if session is not None else contextlib.nullcontext() as held:
                    if held is None and session is not None and not session.path and calls.names & gen.path_names:
                        cur.execute(gen.path_ddl)  # the first statement that names a plain entry point
                        session.path = True
                    rel = held[0].sql(held[1]) if held is not None else cur.sql(sql, params=params or None)
                    if rel is None:
                        raise QueryRefused("the statement returned no result set", "0A000")
                    rel, wires = project_for_wire(rel)
                    table = _bounded(rel.limit(self.max_rows + 1), self.max_rows)
                if calls.column_names and len(calls.column_names) == table.num_columns:
                    table = table.rename_columns(list(calls.column_names))  # Postgres's names: count, not count_star()
                return typed_table(table, wires)
            finally:
                timer.cancel()
                if session is None:
                    cur.close()
        finally:
            self._leave(gen)

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


def _held_call(cur: Any, gen: _Generation, sql: str, params,
               calls: Calls) -> contextlib.AbstractContextManager[tuple[Any, str] | None]:
    """A context giving the held cursor and statement answering a session's plain routing call, or None.

    Such a call is what most SQL clients send; answered by the routing query held in the
    generation's pool (:func:`dbrouter.kb.held.pooled_statement`: cursors prepared per access scope,
    shared by its sessions, one session's at a time) it is not planned again, from a session's
    first call on. Anything else (an alias, another argument, a second call, the pure-SQL path's
    names) runs as written. The question is the one DuckDB's parse of the statement read
    (``calls``, from :func:`~dbrouter.serve.statement.check_statement`).
    """
    match = _HELD_CALL.fullmatch(sql) if gen.path_ddl else None
    if match is None:
        return contextlib.nullcontext()
    name, literal, k = match.group(1).lower(), match.group(2), match.group(3)
    if literal in ("$1", "?"):
        if not (calls.parameter == 0 and isinstance(params, (list, tuple)) and len(params) == 1):
            return contextlib.nullcontext()
        question = params[0]
    elif params:
        return contextlib.nullcontext()
    else:
        question = calls.question
    return pooled_statement(cur, f"{name}_udf", question, None if k is None else int(k), share=gen.con)


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


class KBConnection(Connection):
    """buenavista's connection: every session runs on the shared :class:`KnowledgeBase`."""

    def __init__(self, kb: KnowledgeBase) -> None:
        super().__init__()
        self.kb = kb

    def parameters(self) -> dict[str, str]:
        return {"server_version": SERVER_VERSION, "client_encoding": "UTF8", "server_encoding": "UTF8",
                "DateStyle": "ISO, MDY", "standard_conforming_strings": "on", "integer_datetimes": "on",
                "TimeZone": "UTC", "application_name": "dbrouter"}

    def new_session(self) -> Session:
        return KBSession(self.kb)


def _inferred_types(sql: str) -> dict[int, int]:
    """The types of a statement's untyped parameters, as Postgres infers them from their place: a
    cast's type (``$1::int``: int4), ``text[]`` inside ``= ANY($n)`` (psycopg and asyncpg send a
    Python list so); the others stay text."""
    return {**{int(n): 1009 for n in _ANY_PARAM.findall(sql)}, **parameter_types(sql)}


def _cstring(buf: BVBuffer) -> str:
    out = bytearray()
    while (b := buf.read_byte()) not in (b"\x00", b""):
        out += b
    return out.decode("utf-8")


def _param(raw: bytes | None, fmt: int, oid: int):
    """One bound parameter: None; text as str (a text array literal as a list); binary by its type
    OID (:func:`~dbrouter.serve.pgtypes.decode_binary`).

    Raises:
        QueryRefused: a malformed array literal (22P02) or binary value, or a binary type without a
            reader (22P03; the message names the OID).
    """
    if raw is None:
        return None
    try:
        if fmt == 0 and oid in TEXT_ARRAYS:
            return pg_array(raw.decode("utf-8"), TEXT_ARRAYS[oid])
        if fmt == 0:
            return raw.decode("utf-8")
        return decode_binary(oid, raw)
    except UnicodeDecodeError:
        raise QueryRefused(f"a text parameter of type OID {oid} is not UTF-8", "22021") from None
    except (ValueError, struct.error) as exc:
        code = "22P02" if fmt == 0 else "22P03"
        raise QueryRefused(f"parameter of type OID {oid} ({'text' if fmt == 0 else 'binary'}): {exc}; send it as "
                           "text", code) from None


class _ReplyWriter(io.BufferedIOBase):
    """The connection's writer after authentication: every write of one reply (from the first byte
    written after the client's last message to the next message read) shares one deadline, so a
    client reading slowly cannot hold its session past the send timeout a little at a time (the
    kernel's per-send timeout let one do so for about 250 s)."""

    def __init__(self, sock: socket.socket, seconds: float) -> None:
        super().__init__()
        self.sock = sock
        self.seconds = seconds
        self.deadline: float | None = None

    def new_message(self) -> None:
        """The client sent a message: the next reply gets a deadline of its own."""
        self.deadline = None

    def writable(self) -> bool:
        return True

    def write(self, data, /) -> int:
        now = time.monotonic()
        if self.deadline is None:
            self.deadline = now + self.seconds
        left = self.deadline - now
        if left <= 0:
            raise TimeoutError(f"the client did not read the reply within {self.seconds:g} s")
        self.sock.settimeout(left)
        try:
            self.sock.sendall(data)
        finally:
            with contextlib.suppress(OSError):
                self.sock.settimeout(None)
        return len(data)

    def flush(self) -> None:
        """Nothing is buffered."""


class _BoundedBuffer(BVBuffer):
    """buenavista's reader with a cap on each message: :data:`MAX_STARTUP_BYTES` until the client is
    authenticated (PostgreSQL's own startup limit), :data:`MAX_MESSAGE_BYTES` after; a longer
    length ends the connection before anything is buffered."""

    def __init__(self, stream, handler: KBHandler) -> None:
        super().__init__(stream)
        self.handler = handler
        self.writer: _ReplyWriter | None = None  # told of each message read, after authentication

    def read_byte(self) -> bytes:
        if self.writer is not None:  # a message type: the client read our reply and speaks again
            self.writer.new_message()
        return super().read_byte()

    def read_bytes(self, n) -> bytes:
        cap = MAX_MESSAGE_BYTES if self.handler.authenticated else MAX_STARTUP_BYTES
        if n > cap:
            raise QueryRefused(f"a protocol message of {n:,} bytes; at most {cap:,} are read "
                               f"{'per message' if self.handler.authenticated else 'before authentication'}", "08P01")
        return super().read_bytes(n)


class _RowsFailed(Exception):
    """Sending a result's rows failed on a value; ``error`` is what the client is told."""

    def __init__(self, error: QueryRefused) -> None:
        super().__init__(str(error))
        self.error = error


class KBHandler(BuenaVistaHandler):
    """buenavista's handler with Postgres-complete ErrorResponses, GSSAPI-encryption refusal, and the
    endpoint's connection bounds: a startup (and authentication) deadline for the whole handshake,
    a cap on each message's length, a send timeout, a cap on sessions, failed passwords slowed and
    counted per address, and a failed password ending the connection (as PostgreSQL does)."""

    authenticated = False

    def handle(self) -> None:
        server = self.server
        assert isinstance(server, KBServer)
        self.request.settimeout(server.config.startup_timeout)  # until authenticated: reads and writes
        self._slot_lock = threading.Lock()
        self._holds_slot = False
        # the whole handshake, not each read: a client trickling a byte at a time is cut off too
        self._deadline = threading.Timer(server.config.startup_timeout, self._startup_expired)
        self._deadline.daemon = True
        self._deadline.start()
        if not server.take_slot():
            self._refuse_busy(server.config.max_connections)
            self._deadline.cancel()
            return
        self._holds_slot = True
        try:
            super().handle()
        finally:
            self._deadline.cancel()
            self._release_slot()

    def _release_slot(self) -> None:
        """Give this connection's session slot back, once (from whichever thread ends it first)."""
        server = self.server
        assert isinstance(server, KBServer)
        with self._slot_lock:
            if self._holds_slot:
                self._holds_slot = False
                server.release_slot()

    def _hang_up(self) -> None:
        """End the connection from the server's side. The slot goes back first: a client that sees
        the close finds it free (the handler thread, still unwinding, gave it back only after)."""
        self._release_slot()
        with contextlib.suppress(OSError):
            self.request.shutdown(socket.SHUT_RDWR)

    def _startup_expired(self) -> None:
        if not self.authenticated:
            self._hang_up()

    def _refuse_busy(self, cap: int) -> None:
        """Read the startup message (when it comes in time) and answer 'too many connections'."""
        with contextlib.suppress(OSError, struct.error):
            for _ in range(3):  # libpq asks for SSL (and GSSAPI) first: 'N', then the real startup
                size, code = struct.unpack("!ii", self.rfile.read(8))
                if code not in (SSL_REQUEST, GSSENC_REQUEST):
                    if 8 < size <= 10_000:
                        self.rfile.read(size - 8)
                    break
                self.wfile.write(b"N")
            self.send_error(QueryRefused(f"too many connections: the endpoint serves {cap} sessions at once "
                                         "(dbrouter serve --max-connections); try again when one ends", "53300"))

    def handle_md5_password(self, ctx, payload: bytes) -> None:
        """Compare in constant time; a wrong password ends the connection (no second guess on one salt)
        after :data:`AUTH_FAILURE_DELAY`, and an address with :data:`AUTH_FAILURES` failures in the
        last minute is refused without a comparison until the minute has passed."""
        server = self.server
        assert isinstance(server, KBServer)
        address = self.client_address[0] if isinstance(self.client_address, tuple) else str(self.client_address)
        if server.auth_blocked(address):
            self.send_error(QueryRefused(f"too many failed logins from {address}: try again in a minute", "28000"))
            self._hang_up()
            return
        client_side = (payload or b"").decode("utf-8", "replace").rstrip("\x00")
        if hmac.compare_digest(client_side.encode(), ctx.get_hashed_password(server.auth).encode()):
            self.send_authentication_ok()
            self.handle_post_auth(ctx)
            return
        server.auth_failed(address)
        time.sleep(AUTH_FAILURE_DELAY)
        self.send_error("Invalid password")
        self._hang_up()

    def handle_post_auth(self, ctx) -> None:
        """Authenticated (at startup without a password, or after it): reads wait for the client as
        long as it likes; a reply must be sent whole within the send timeout (:class:`_ReplyWriter`),
        or the session ends."""
        server = self.server
        assert isinstance(server, KBServer)
        self.authenticated = True
        self._deadline.cancel()
        ctx.session.user = ctx.params.get("user")
        ctx.session.address = self.client_address[0] if isinstance(self.client_address, tuple) else None
        if server.config.policy is not None:  # authenticated as this user: the session sees its databases
            access = server.config.policy.users[ctx.params["user"]]
            ctx.session.access = None if access.sees_all else access  # "*": an admin browses the whole KB
        super().handle_post_auth(ctx)
        self.request.settimeout(None)
        self.wfile = _ReplyWriter(self.request, server.config.send_timeout)
        if isinstance(self.r, _BoundedBuffer):
            self.r.writer = self.wfile

    def send_error(self, exception, ctx=None) -> None:
        """ErrorResponse with severity, SQLSTATE and message (libpq prints ``ERROR:  message``)."""
        sqlstate = getattr(exception, "sqlstate", None)
        message = str(exception)
        if message == "Invalid password":
            sqlstate, message = "28P01", "password authentication failed (dbrouter serve --password-env)"
        elif isinstance(exception, TimeoutError):
            sqlstate, message = "08006", "the client did not start and authenticate in time: connection closed"
        buf = BVBuffer()
        for code, value in (("S", "ERROR"), ("V", "ERROR"), ("C", sqlstate or "XX000"), ("M", message)):
            buf.write_byte(code.encode())
            buf.write_string(value)
        buf.write_bytes(b"\x00")
        out = buf.get_value()
        with contextlib.suppress(OSError):  # the client is gone (or was cut off): nothing to tell
            self.wfile.write(struct.pack("!ci", ServerResponse.ERROR_RESPONSE, len(out) + 4) + out)
        if ctx:
            ctx.mark_error()

    def send_row_description(self, query_result) -> None:
        """RowDescription with each column's Postgres type and format (:mod:`dbrouter.serve.wire`)."""
        if isinstance(query_result, TypedResult):
            self.wfile.write(row_description(query_result))
        else:
            super().send_row_description(query_result)

    def send_data_rows(self, query_result, limit: int = 0) -> int:
        """DataRows in text or binary form per column, as the client asked (:mod:`dbrouter.serve.wire`).

        Raises:
            _RowsFailed: a value could not be read or encoded (the rows before it were sent): the
                caller answers with an ErrorResponse and the session goes on.
        """
        if isinstance(query_result, TypedResult):
            try:
                return data_rows(query_result, self.wfile.write, limit)
            except (OSError, TimeoutError):
                raise  # the client is gone or too slow: the connection ends
            except Exception as exc:  # noqa: BLE001 - any value's failure is the client's error, not the server's
                message = " ".join(str(exc).split()) or type(exc).__name__
                raise _RowsFailed(QueryRefused(f"a value of the result cannot be sent: {message}", "22000")) from exc
        return super().send_data_rows(query_result, limit)

    def handle_query(self, ctx, payload: bytes) -> None:
        """buenavista's simple query, with an ErrorResponse (not a closed connection) when a row fails."""
        try:
            super().handle_query(ctx, payload)
        except _RowsFailed as failed:
            self.send_error(failed.error)
            self.send_ready_for_query(ctx)

    def handle_execute(self, ctx, payload: bytes) -> None:
        """buenavista's Execute, with an ErrorResponse (not a closed connection) when a row fails."""
        try:
            super().handle_execute(ctx, payload)
        except _RowsFailed as failed:
            self.send_error(failed.error, ctx)

    def handle_bind(self, ctx, payload: bytes) -> None:
        """Bind parameters as Postgres sends them (buenavista 0.5 reads an untyped text parameter as a
        date with dateutil and a NULL as the rest of the message): text -> str, binary by type OID."""
        buf = BVBuffer(io.BytesIO(payload))
        portal, stmt = _cstring(buf), _cstring(buf)
        formats = [buf.read_int16() for _ in range(buf.read_int16())]
        sql, oids = ctx.stmts[stmt]
        cast = _inferred_types(sql)
        params = []
        for i in range(buf.read_int16()):
            size = buf.read_int32()
            raw = None if size < 0 else buf.read_bytes(size)
            fmt = formats[i] if len(formats) > 1 else (formats[0] if formats else 0)
            oid = (oids[i] if i < len(oids) else 0) or cast.get(i + 1, 0)  # as Describe announced it
            try:
                params.append(_param(raw, fmt, oid))
            except QueryRefused as exc:
                self.send_error(exc, ctx)
                return
        result_formats = [buf.read_int16() for _ in range(buf.read_int16())]
        # a new Bind replaces the portal: a result an Execute with a row limit left suspended on it is
        # gone (buenavista kept it, and the next Execute returned its exhausted rows: asyncpg's fetchval
        # got None for the statement after one of exactly `limit` rows)
        ctx.result_cache.pop(portal, None)
        ctx.add_portal(portal, stmt, params, result_formats)
        self.send_bind_complete()

    def handle_describe(self, ctx, payload: bytes) -> None:
        """Describe a statement or portal, always ending in RowDescription or NoData (buenavista 0.5
        sends nothing for a result without rows and runs a described statement with dummy dates).

        A statement is run with NULL parameters to learn its columns (text parameters are announced).
        """
        kind, name = payload[:1], payload[1:-1].decode("utf-8")
        try:
            if kind == b"S":
                sql, oids = ctx.stmts[name]
                count = max(len(oids), max((int(n) for n in _PLACEHOLDER.findall(sql)), default=0))
                cast = _inferred_types(sql)
                self.send_paramter_description([oids[i] if i < len(oids) and oids[i] else cast.get(i + 1, 25)
                                                for i in range(count)])
                result = ctx.execute_sql(sql, [None] * count)
            else:
                cursors = getattr(ctx.session, "cursors", {})
                result = ctx.describe_portal(name) if name in ctx.portals or name not in cursors else \
                    ctx.session.describe_cursor(name)
        except Exception as exc:  # noqa: BLE001 - every failure goes back to the client as an ErrorResponse
            self.send_error(exc, ctx)
            return
        if result.has_results():
            self.send_row_description(result)
        else:
            self.wfile.write(struct.pack("!ci", ServerResponse.NO_DATA, 4))

    def _cancel(self, key: bytes) -> None:
        """A CancelRequest: interrupt the query the session with this process id and secret key runs
        (buenavista 0.5 closed the session instead, under the client still using it)."""
        if len(key) != 8:
            return
        process_id, secret = struct.unpack("!II", key)
        server = self.server
        assert isinstance(server, KBServer)
        ctx = server.ctxts.get(process_id)
        if ctx is None or not hmac.compare_digest(struct.pack("!I", ctx.secret_key), struct.pack("!I", secret)):
            return
        cursor = getattr(ctx.session, "db_cursor", None)
        if cursor is not None:
            with contextlib.suppress(Exception):
                cursor.interrupt()

    def handle_startup(self, conn):
        """Answer a GSSAPI-encryption request with 'N' (as for SSL), then read the real startup."""
        peek = self.rfile.peek(8)[:8] if hasattr(self.rfile, "peek") else b""  # ty: ignore[not-callable] - a buffered reader
        if len(peek) == 8 and struct.unpack("!ii", peek)[1] == GSSENC_REQUEST:
            self.rfile.read(8)
            self.wfile.write(b"N")
        if len(peek) == 8 and struct.unpack("!ii", peek) == (16, CANCEL_REQUEST):
            self._cancel(self.rfile.read(16)[8:])
            return None
        if not isinstance(self.r, _BoundedBuffer):
            self.r = _BoundedBuffer(self.rfile, self)
        return super().handle_startup(conn)


class _AnyUser(dict):
    """buenavista's ``auth`` maps user -> password; every user name shares the one password."""

    def __init__(self, password: str) -> None:
        super().__init__()
        self.password = password

    def __missing__(self, user: str) -> str:
        return self.password


class _PolicyUsers(dict):
    """buenavista's ``auth`` under an access policy: each user's own password (from the variable the
    policy names); an unknown user or an unset variable gets a random one, so the login fails the
    same way a wrong password does."""

    def __init__(self, policy: AccessPolicy) -> None:
        super().__init__()
        self.policy = policy

    def __missing__(self, user: str) -> str:
        access = self.policy.users.get(user)
        password = os.environ.get(access.password_env, "") if access else ""
        return password or os.urandom(24).hex()


class KBServer(BuenaVistaServer):
    """The threaded server; accepts non-loopback clients only when ``allow_remote``."""

    daemon_threads = True

    def __init__(self, config: ServeConfig, kb: KnowledgeBase) -> None:
        auth = _PolicyUsers(config.policy) if config.policy else _AnyUser(config.password) if config.password else None
        self.config = config
        self.kb = kb
        self.active = 0
        self._slots = threading.Lock()
        self.logins = LoginThrottle(AUTH_FAILURES)  # failed logins per address
        super().__init__((config.host, config.port), KBConnection(kb), auth=auth)
        self.RequestHandlerClass = KBHandler

    def auth_blocked(self, address: str) -> bool:
        """True while ``address`` has :data:`AUTH_FAILURES` failed logins within the last minute."""
        return self.logins.blocked(address)

    def auth_failed(self, address: str) -> None:
        """Count a failed login of ``address``."""
        self.logins.failed(address)

    def verify_request(self, request, client_address) -> bool:
        return self.config.allow_remote or is_loopback(client_address[0])

    def take_slot(self) -> bool:
        """Count a new connection in; False when :attr:`ServeConfig.max_connections` are open."""
        with self._slots:
            if self.active >= self.config.max_connections:
                return False
            self.active += 1
            return True

    def release_slot(self) -> None:
        """A connection ended."""
        with self._slots:
            self.active -= 1


def make_server(config: ServeConfig) -> KBServer:
    """Open the warehouse and bind the address (not serving yet: call ``serve_forever``).

    Args:
        config: what and where to serve; port 0 picks a free port (see ``server.server_address``).

    Returns:
        The bound :class:`KBServer`.

    Raises:
        ServeError: non-loopback host without ``allow_remote``, a port outside 0-65535, or the address
            cannot be bound (in use, unknown host).
        WarehouseError, EmbedderMismatch: the warehouse cannot be opened with its UDFs.
    """
    check_host(config.host, config.allow_remote, config.password or ("policy" if config.policy else None))
    if not 0 <= config.port <= 65535:
        raise ServeError(f"--port {config.port} is not a TCP port: use 1-65535 (e.g. 5433), or 0 for any free one")
    kb = KnowledgeBase(config.warehouse, config.timeout, config.max_rows, config.query_log)
    try:
        if config.policy is not None:  # fail at start, not at each session (which fails closed too)
            with kb.cursor(shared=True) as con:
                check_scopable(con)
        return KBServer(config, kb)
    except AccessError:
        kb.close()
        raise
    except (OSError, socket.gaierror) as exc:
        kb.close()
        raise ServeError(f"cannot listen on {config.host}:{config.port}: {exc.strerror or exc}; choose another "
                         "--port (or stop what uses it)") from None


def start_in_thread(config: ServeConfig) -> tuple[KBServer, threading.Thread]:
    """Start serving in a daemon thread (tests, ``dbrouter eval serve``); stop with :func:`stop`.

    Returns:
        The server (its ``server_address`` has the bound port) and its thread.
    """
    server = make_server(config)
    thread = threading.Thread(target=server.serve_forever, name="dbrouter-serve", daemon=True)
    thread.start()
    return server, thread


def stop(server: KBServer) -> None:
    """Stop serving, close the socket and the warehouse."""
    server.shutdown()
    server.server_close()
    server.kb.close()
