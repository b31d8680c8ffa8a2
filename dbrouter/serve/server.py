"""`dbrouter serve`: the knowledge base over the Postgres wire protocol (psql, psycopg, BI tools).

The protocol is spoken by `buenavista <https://github.com/jwills/buenavista>`_ (0.5); this module
plugs dbrouter in behind it: every client session's statement goes to the shared
:class:`~dbrouter.serve.knowledge.KnowledgeBase` (a cursor per session, one checked read-only
SELECT or a session statement - ``PREPARE``/``EXECUTE``, ``DECLARE``/``FETCH``/``CLOSE``, probes:
see :mod:`dbrouter.serve.session`; anything else comes back as an ErrorResponse naming the
reason, and the session goes on), and this module bounds the connections: a startup deadline, a
cap on each message, a send timeout, a cap on sessions, failed passwords slowed and counted.

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
import logging
import os
import re
import socket
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from buenavista.core import Connection, Session
from buenavista.postgres import BuenaVistaHandler, BuenaVistaServer, BVBuffer, ServerResponse

from dbrouter.access import AccessError, AccessPolicy, LoginThrottle, check_scopable
from dbrouter.errors import ServeError
from dbrouter.serve import (
    AUTH_FAILURE_DELAY,
    AUTH_FAILURES,
    MAX_CONNECTIONS,
    MAX_MESSAGE_BYTES,
    MAX_ROWS,
    MAX_STARTUP_BYTES,
    QUERY_TIMEOUT,
    SEND_TIMEOUT,
    STARTUP_TIMEOUT,
)
from dbrouter.serve.endpoint import check_host, is_loopback
from dbrouter.serve.knowledge import KnowledgeBase
from dbrouter.serve.pgtypes import TEXT_ARRAYS, decode_binary, parameter_types, pg_array
from dbrouter.serve.session import SERVER_VERSION, KBSession, QueryRefused
from dbrouter.serve.wire import TypedResult, data_rows, row_description

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 5433
_PLACEHOLDER = re.compile(r"\$(\d+)")
_ANY_PARAM = re.compile(r"\b(?:ANY|ALL)\s*\(\s*\$(\d+)\s*\)", re.IGNORECASE)
SSL_REQUEST, GSSENC_REQUEST, CANCEL_REQUEST = 80877103, 80877104, 80877102

logging.getLogger("buenavista").setLevel(logging.CRITICAL)  # it logs every refused query as a traceback


@dataclass(frozen=True)
class ServeConfig:
    """How to serve: the warehouse, the address, the optional password, the query timeout and bounds."""

    warehouse: Path
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    password: str | None = None
    allow_remote: bool = False
    timeout: float = QUERY_TIMEOUT
    startup_timeout: float = STARTUP_TIMEOUT
    send_timeout: float = SEND_TIMEOUT
    max_connections: int = MAX_CONNECTIONS
    max_running: int | None = None  # statements running at once (None: serve.default_max_running())
    max_rows: int = MAX_ROWS
    policy: AccessPolicy | None = None
    query_log: Path | None = None


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
        ctx.session.client = (ctx.session.address, ctx.session.user if server.config.policy is not None else None)
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
        cancelled = getattr(ctx.session, "cancelled", None)
        if cancelled is not None:  # a statement waiting its turn (KnowledgeBase._turn)
            cancelled.set()
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
    kb = KnowledgeBase(config.warehouse, config.timeout, config.max_rows, config.query_log, config.max_running)
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
