"""A small client of a running `dbrouter serve`, for the CLI's ``--endpoint``.

A cold `dbrouter route` that opens the warehouse itself spends about a second of CPU before it
routes (importing duckdb and numpy, loading two models, DuckDB binding the routing macros the
first time); a running endpoint has done all of that once. This client speaks just the part of
the Postgres wire protocol the CLI needs (startup, cleartext/MD5 password, one extended-protocol
statement at a time with text results), so a routed question through it imports neither duckdb,
numpy nor psycopg (whose import alone is 0.3 s). It reads like a DuckDB connection to the code
that routes: ``con.execute(sql, params).fetchall()``, ``?`` placeholders.

Not a general driver: no TLS, no COPY, no binary results. Anything else is psycopg's job.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import struct
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from dbrouter.errors import EndpointError

PROTOCOL_3 = 196608
MAX_MESSAGE = 256 * 1024 * 1024  # a larger length means the peer is not a Postgres server
_INTS = {20, 21, 23, 26}  # int8, int2, int4, oid
_FLOATS = {700, 701, 1700}  # float4, float8, numeric


@dataclass(frozen=True)
class EndpointAddress:
    """Where a `dbrouter serve` listens.

    Attributes:
        host: host name or address.
        port: TCP port.
        user: user name sent at startup (any name: the endpoint has one password).
        database: database name sent at startup.
    """

    host: str
    port: int
    user: str
    database: str

    @classmethod
    def parse(cls, url: str) -> EndpointAddress:
        """Read ``postgresql://[user@]host[:port][/database]``.

        Args:
            url: the endpoint URL (``--endpoint`` or ``$DBROUTER_ENDPOINT``).

        Returns:
            The address (port 5433, user ``dbrouter``, database ``dbrouter`` when not given).

        Raises:
            EndpointError: not a postgresql:// URL, or it holds a password (command lines and shell
                histories are readable: give it in ``$PGPASSWORD``).
        """
        parts = urlsplit(url.strip())
        if parts.scheme not in ("postgresql", "postgres") or not parts.hostname:
            raise EndpointError(f"endpoint {url!r} is not a postgresql://host[:port] URL (the address `dbrouter serve` "
                                "prints)")
        if parts.password is not None:
            raise EndpointError("the endpoint URL holds a password: remove it and set $PGPASSWORD instead")
        try:
            port = parts.port or 5433
        except ValueError as exc:
            raise EndpointError(f"endpoint {url!r}: {exc}") from exc
        return cls(parts.hostname, port, unquote(parts.username or "dbrouter"),
                   unquote(parts.path.lstrip("/")) or "dbrouter")


class EndpointCursor:
    """The rows of one statement, as a DuckDB result reads (``fetchall``, ``fetchone``, ``description``)."""

    def __init__(self, columns: list[tuple[str, int]], rows: list[tuple]) -> None:
        self.description = [(name, oid, None, None, None, None, None) for name, oid in columns]
        self._rows = rows
        self._next = 0

    def fetchall(self) -> list[tuple]:
        """The remaining rows."""
        rows, self._next = self._rows[self._next:], len(self._rows)
        return rows

    def fetchone(self) -> tuple | None:
        """The next row, or None."""
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]


class EndpointConnection:
    """One session on a `dbrouter serve` endpoint.

    Args:
        url: ``postgresql://[user@]host[:port][/database]``.
        password: the endpoint's password (default ``$PGPASSWORD``; none when unset).
        timeout: seconds for connecting and for each statement's answer.

    Raises:
        EndpointError: the endpoint cannot be reached or refused the login.
    """

    def __init__(self, url: str, password: str | None = None, timeout: float = 120.0) -> None:
        self.address = EndpointAddress.parse(url)
        self._password = password if password is not None else os.environ.get("PGPASSWORD")
        where = f"{self.address.host}:{self.address.port}"
        try:
            self._sock = socket.create_connection((self.address.host, self.address.port), timeout=timeout)
        except OSError as exc:
            raise EndpointError(f"cannot reach the endpoint at {where}: {exc}. Is `dbrouter serve` running "
                                "there?") from exc
        self._file = self._sock.makefile("rb")
        try:
            self._startup()
        except (OSError, EndpointError) as exc:
            self.close()
            if isinstance(exc, EndpointError):
                raise
            raise EndpointError(f"the endpoint at {where} closed the connection during login: {exc}") from exc

    def _send(self, kind: bytes, body: bytes = b"") -> None:
        self._sock.sendall(kind + struct.pack("!i", len(body) + 4) + body)

    def _read(self) -> tuple[bytes, bytes]:
        head = self._file.read(5)
        if len(head) < 5:
            raise EndpointError("the endpoint closed the connection")
        kind, size = head[:1], struct.unpack("!i", head[1:])[0]
        if not 4 <= size <= MAX_MESSAGE:
            raise EndpointError(f"the endpoint sent a message of {size} bytes: it is not a dbrouter endpoint")
        body = self._file.read(size - 4)
        if len(body) < size - 4:
            raise EndpointError("the endpoint closed the connection mid-message")
        return kind, body

    def _startup(self) -> None:
        params = b"".join(k.encode() + b"\0" + v.encode() + b"\0" for k, v in (
            ("user", self.address.user), ("database", self.address.database), ("application_name", "dbrouter-cli")))
        body = struct.pack("!i", PROTOCOL_3) + params + b"\0"
        self._sock.sendall(struct.pack("!i", len(body) + 4) + body)
        while True:
            kind, body = self._read()
            if kind == b"R":
                self._authenticate(struct.unpack("!i", body[:4])[0], body[4:])
            elif kind == b"E":
                raise EndpointError(f"the endpoint refused the login: {_error_text(body)}")
            elif kind == b"Z":
                return

    def _authenticate(self, code: int, extra: bytes) -> None:
        if code == 0:
            return
        if code not in (3, 5):
            raise EndpointError(f"the endpoint asks for authentication method {code}, which this client does not "
                                "speak (cleartext and MD5 only): use psql or psycopg")
        if self._password is None:
            raise EndpointError("the endpoint requires a password: set $PGPASSWORD")
        secret = self._password
        if code == 5:
            inner = hashlib.md5((secret + self.address.user).encode()).hexdigest()
            secret = "md5" + hashlib.md5(inner.encode() + extra[:4]).hexdigest()
        self._send(b"p", secret.encode() + b"\0")

    def execute(self, sql: str, params: list | tuple | None = None) -> EndpointCursor:
        """Run one statement; ``?`` placeholders take ``params`` in order (as in DuckDB).

        Args:
            sql: one SQL statement.
            params: values for its placeholders: str, int, float, bool or None.

        Returns:
            The statement's rows: integers, floats and booleans by their column types, the rest as text.

        Raises:
            EndpointError: the endpoint failed the statement (its message) or the connection broke.
        """
        params = list(params or [])
        oids, formats, values = [], [], []
        for value in params:
            oid, fmt, raw = _encode(value)
            oids.append(oid)
            formats.append(fmt)
            values.append(raw)
        parse = b"\0" + _numbered(sql).encode() + b"\0" + struct.pack(f"!h{len(oids)}i", len(oids), *oids)
        bind = b"\0\0" + struct.pack(f"!h{len(formats)}h", len(formats), *formats) + struct.pack("!h", len(values))
        for raw in values:
            bind += struct.pack("!i", -1) if raw is None else struct.pack("!i", len(raw)) + raw
        bind += struct.pack("!h", 0)
        try:
            for kind, body in ((b"P", parse), (b"B", bind), (b"D", b"P\0"), (b"E", b"\0" + struct.pack("!i", 0)),
                               (b"S", b"")):
                self._send(kind, body)
            return self._result()
        except OSError as exc:
            raise EndpointError(f"the connection to the endpoint broke: {exc}") from exc

    def _result(self) -> EndpointCursor:
        columns: list[tuple[str, int]] = []
        rows: list[tuple] = []
        failure = None
        while True:
            kind, body = self._read()
            if kind == b"T":
                columns = _row_description(body)
            elif kind == b"D":
                rows.append(_data_row(body, columns))
            elif kind == b"E":
                failure = _error_text(body)
            elif kind == b"Z":
                if failure is not None:
                    raise EndpointError(f"the endpoint failed the statement: {failure}")
                return EndpointCursor(columns, rows)

    def close(self) -> None:
        """Say goodbye and close the socket (idempotent)."""
        with contextlib.suppress(OSError):
            self._send(b"X")
        try:
            self._file.close()
        finally:
            self._sock.close()


def _encode(value: Any) -> tuple[int, int, bytes | None]:
    """(type OID, format, bytes) of one parameter: integers and floats in binary, the rest as text."""
    if value is None:
        return 0, 0, None
    if isinstance(value, bool):
        return 16, 1, b"\x01" if value else b"\x00"
    if isinstance(value, int):
        return 20, 1, struct.pack("!q", value)
    if isinstance(value, float):
        return 701, 1, struct.pack("!d", value)
    return 25, 0, str(value).encode("utf-8")


def _numbered(sql: str) -> str:
    """``?`` placeholders as ``$1, $2, ...``, leaving quoted strings and identifiers alone."""
    out, n, quote = [], 0, None
    for ch in sql:
        if quote:
            quote = None if ch == quote else quote
        elif ch in ("'", '"'):
            quote = ch
        elif ch == "?":
            n += 1
            out.append(f"${n}")
            continue
        out.append(ch)
    return "".join(out)


def _row_description(body: bytes) -> list[tuple[str, int]]:
    count, at, columns = struct.unpack("!h", body[:2])[0], 2, []
    for _ in range(count):
        end = body.index(b"\0", at)
        name = body[at:end].decode("utf-8")
        oid = struct.unpack("!i", body[end + 7:end + 11])[0]
        columns.append((name, oid))
        at = end + 19
    return columns


def _data_row(body: bytes, columns: list[tuple[str, int]]) -> tuple:
    count, at, values = struct.unpack("!h", body[:2])[0], 2, []
    for i in range(count):
        size = struct.unpack("!i", body[at:at + 4])[0]
        at += 4
        if size < 0:
            values.append(None)
            continue
        text = body[at:at + size].decode("utf-8")
        at += size
        oid = columns[i][1] if i < len(columns) else 25
        values.append(int(text) if oid in _INTS else float(text) if oid in _FLOATS else
                      text in ("t", "true") if oid == 16 else text)
    return tuple(values)


def _error_text(body: bytes) -> str:
    fields = {}
    for part in body.split(b"\0"):
        if part:
            fields[part[:1]] = part[1:].decode("utf-8", "replace")
    return fields.get(b"M", "unknown error") + (f" (SQLSTATE {fields[b'C']})" if b"C" in fields else "")
