"""A client-side deadline on reads from a database server: the watchdog.

Socket options and server-side statement timeouts need a server that answers; one that completes
the handshake and then goes silent (or a listener that never speaks) held `dbrouter ingest` past
every documented bound. :class:`Watchdog` watches the connections an engine opens: when no
statement has finished for ``seconds``, it shuts their sockets down from another thread, so the
blocked read fails at once with the driver's own error and the caller reports it.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import Any


def socket_of(dbapi_con: Any) -> socket.socket | None:
    """A socket object on the connection's file descriptor (psycopg 3, psycopg2, pymysql), or None.

    Args:
        dbapi_con: a DBAPI connection.

    Returns:
        A socket sharing the connection's descriptor (shutting it down ends the connection's reads),
        or None for a driver whose socket is not reachable.
    """
    fd = None
    with contextlib.suppress(Exception):
        pgconn = getattr(dbapi_con, "pgconn", None)
        if pgconn is not None:
            fd = pgconn.socket
        elif hasattr(dbapi_con, "fileno"):
            fd = dbapi_con.fileno()
        elif getattr(dbapi_con, "_sock", None) is not None:
            fd = dbapi_con._sock.fileno()
    if fd is None or fd < 0:
        return None
    with contextlib.suppress(OSError):
        return socket.socket(fileno=socket.dup(fd))
    return None


class Watchdog:
    """Ends the watched connections when no progress is reported for ``seconds``.

    Args:
        seconds: the longest wait for a statement (or the handshake) to finish.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.fired = False
        self._sockets: list[socket.socket] = []
        self._watched: set[int] = set()
        self._last = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="dbrouter-source-watchdog", daemon=True)
        self._thread.start()

    def watch(self, dbapi_con: Any) -> None:
        """Watch a new connection (and count its opening as progress); watching it again is a no-op."""
        with self._lock:
            self._last = time.monotonic()
            if id(dbapi_con) in self._watched:
                return
            self._watched.add(id(dbapi_con))
        sock = socket_of(dbapi_con)
        if sock is not None:
            with self._lock:
                self._sockets.append(sock)

    def progress(self) -> None:
        """A statement finished: the wait starts again."""
        with self._lock:
            self._last = time.monotonic()

    def _watch(self) -> None:
        while not self._stop.wait(min(1.0, self.seconds / 4)):
            with self._lock:
                stalled = time.monotonic() - self._last > self.seconds
                sockets = list(self._sockets) if stalled else []
            if stalled:
                self.fired = True
                for sock in sockets:
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)
                with self._lock:
                    self._last = time.monotonic()

    def close(self) -> None:
        """Stop watching and release the duplicated descriptors."""
        self._stop.set()
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.close()


def watch_engine(engine: Any, seconds: float) -> Watchdog:
    """A :class:`Watchdog` over every connection ``engine`` opens and every statement it runs.

    Args:
        engine: a SQLAlchemy engine (before its first connection).
        seconds: the longest silence allowed.

    Returns:
        The watchdog (close it with the engine).
    """
    from sqlalchemy import event

    dog = Watchdog(seconds)
    # first_connect runs before connect (the dialect's own first queries): both, so no query is unwatched
    for name in ("first_connect", "connect"):
        event.listen(engine, name, lambda dbapi_con, _record: dog.watch(dbapi_con), insert=True)
    event.listen(engine, "after_cursor_execute", lambda *_args: dog.progress())
    return dog
