"""How many MCP sessions over HTTP one caller may hold (`dbrouter mcp --http`).

The MCP SDK keeps every streamable-HTTP session until it has been idle for its timeout, up to one
cap for the whole server: one client opening sessions in a loop (10,000 in 25 s, about 680 MiB)
filled it and every other client was refused. :func:`session_limits` is ASGI middleware that
counts the sessions each caller opened - the policy's user, or else the client's address - and
answers a caller over :data:`MAX_SESSIONS_PER_CALLER` live sessions with HTTP 429 instead of
opening another; a session is live until it is deleted or idle for :data:`SESSION_IDLE_SECONDS`,
the idle timeout the SDK is given too (:func:`dbrouter.serve.mcp.run`).
"""

from __future__ import annotations

import threading
import time

MAX_SESSIONS_PER_CALLER = 16
"""Live MCP sessions one user (or, without a policy, one client address) may hold at once."""
MAX_SESSIONS = 1_000
"""Live MCP sessions of the whole server (the SDK's own cap)."""
SESSION_IDLE_SECONDS = 600.0
"""A session with no request for this long is closed (the SDK's idle timeout)."""

_HEADER = b"mcp-session-id"


class SessionTable:
    """Session id -> (caller, last request), pruned of idle and deleted sessions."""

    def __init__(self, idle: float = SESSION_IDLE_SECONDS, per_caller: int = MAX_SESSIONS_PER_CALLER) -> None:
        self.idle = idle
        self.per_caller = per_caller
        self._sessions: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def live(self, caller: str) -> int:
        """How many live sessions ``caller`` holds (idle ones are dropped first)."""
        now = time.monotonic()
        with self._lock:
            for sid in [s for s, (_, seen) in self._sessions.items() if now - seen > self.idle]:
                del self._sessions[sid]
            return sum(1 for who, _ in self._sessions.values() if who == caller)

    def seen(self, sid: str, caller: str) -> None:
        """A request of session ``sid`` (a new one is recorded as ``caller``'s)."""
        with self._lock:
            who = self._sessions.get(sid, (caller, 0.0))[0]
            self._sessions[sid] = (who, time.monotonic())

    def ended(self, sid: str) -> None:
        """Session ``sid`` was deleted by its client."""
        with self._lock:
            self._sessions.pop(sid, None)


def session_limits(app, caller_of, table: SessionTable | None = None):
    """ASGI middleware capping each caller's live MCP sessions.

    Args:
        app: the MCP streamable-HTTP application (behind the authentication guard).
        caller_of: ``scope -> str``, who asks (the policy's user, or the client's address).
        table: the session table (a new one by default).

    Returns:
        The guarded application: a request that would open a session beyond the caller's cap gets
        HTTP 429 with what to do; requests of existing sessions pass.
    """
    sessions = table or SessionTable()

    async def limited(scope, receive, send):
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        caller = caller_of(scope)
        sid = dict(scope.get("headers") or []).get(_HEADER, b"").decode("latin-1")
        if scope.get("method") == "DELETE" and sid:
            sessions.ended(sid)
        elif sid:
            sessions.seen(sid, caller)
        elif scope.get("method") == "POST" and sessions.live(caller) >= sessions.per_caller:
            body = (f"dbrouter mcp: {caller} holds {sessions.per_caller} open sessions, the limit per caller: "
                    "reuse one, or end one (HTTP DELETE) or wait until one has been idle "
                    f"{sessions.idle:.0f} s").encode()
            await send({"type": "http.response.start", "status": 429,
                        "headers": [(b"content-type", b"text/plain"), (b"retry-after", b"60")]})
            await send({"type": "http.response.body", "body": body})
            return

        async def recording(message):
            if message["type"] == "http.response.start" and not sid:
                opened = dict(message.get("headers") or []).get(_HEADER)
                if opened:
                    sessions.seen(opened.decode("latin-1"), caller)
            await send(message)

        await app(scope, receive, recording)

    return limited


def caller_of_scope(scope, credentials) -> str:
    """Who an HTTP request comes from: the Basic user when ``credentials`` reads one, else its address.

    Args:
        scope: the ASGI scope.
        credentials: ``header -> (user, password) | None`` (:func:`dbrouter.serve.mcp.basic_credentials`).

    Returns:
        ``user:<name>`` or ``address:<ip>``.
    """
    header = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
    found = credentials(header)
    if found:
        return f"user:{found[0]}"
    client = scope.get("client") or ("?", 0)
    return f"address:{client[0]}"
