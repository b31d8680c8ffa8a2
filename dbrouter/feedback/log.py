"""The query log: every routing and answer through the CLI, `dbrouter mcp` and `dbrouter serve`, one JSON
line each.

Calls are appended to a journal beside the warehouse (``<warehouse stem>.query_log.jsonl``): the
warehouse is opened read-only by every reader and replaced whole by each build, so a call can not
write into it while an endpoint serves. Lines are appended with one ``write`` on a file opened for
appending, so processes logging at once do not interleave within a line. ``DBROUTER_LOG`` names
another file, or ``off`` turns logging off (``--no-log`` on route, ask, serve and mcp).

Each build copies the journal into the warehouse (:func:`dbrouter.kb.tables.load_query_log`, table
``dbrouter_user.query_log``, read by SQL clients as ``kb_query_log``). Rows are only ever added,
keyed by a hash of their line, so loading twice adds nothing and rows stay after the journal is
rotated (moved away).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from dbrouter import settings
from dbrouter.connection import Connection
from dbrouter.errors import DbrouterError, NoDatabase

T = TypeVar("T")
_log = logging.getLogger(__name__)

MAX_TEXT = 4000
"""Characters of a question or SQL text kept in a log line."""
MAX_LOG_BYTES = 256 * 2**20
"""A log past this size is not appended to (one warning on stderr says so): rotate it (move it away)."""


@dataclass
class LogEntry:
    """One routed or answered question.

    Attributes:
        source: ``cli``, ``mcp`` or ``serve``.
        tool: ``route``, ``link``, ``ask`` or ``run_sql`` (CLI, mcp); the function a SQL client
            called (serve: ``route_query``, ``route_query_ranked``, ``retrieve_examples``, ...).
        question: the question (None for ``run_sql``).
        user: who asked (the policy's user, or serve's login name; None when unknown).
        ranking: the databases routed, best first.
        chosen: the database answered from (or linked against, or run on).
        abstained: routing declined to answer.
        sql: the SQL run or generated.
        status: ``ok``, ``error``, ``abstained``, ``needs_llm``, ``not_run``.
        error: the error message, if any.
        seconds: wall time of the call.
        ts: Unix time it ended.
    """

    source: str
    tool: str
    question: str | None = None
    user: str | None = None
    ranking: list[str] = field(default_factory=list)
    chosen: str | None = None
    abstained: bool = False
    sql: str | None = None
    status: str = "ok"
    error: str | None = None
    seconds: float = 0.0
    ts: float = field(default_factory=time.time)


def log_path(warehouse: str | Path) -> Path | None:
    """Where the warehouse's query log goes (None when ``DBROUTER_LOG=off``).

    Args:
        warehouse: the KB file.

    Returns:
        ``$DBROUTER_LOG``, or ``<warehouse stem>.query_log.jsonl`` beside the warehouse.
    """
    setting = settings.get("DBROUTER_LOG") or ""
    if setting.lower() in ("off", "0", "false", "no"):
        return None
    if setting:
        return Path(setting)
    w = Path(warehouse)
    return w.with_name(f"{w.stem}.query_log.jsonl")


def _cut(text: str | None) -> str | None:
    return text if text is None or len(text) <= MAX_TEXT else text[:MAX_TEXT] + "..."


CLIENT_BUDGET_BYTES = 8 * 2**20
"""What one client (an address of `dbrouter serve`, a caller of `dbrouter mcp`) may add to the journal
in :data:`CLIENT_BUDGET_SECONDS`: one client filled the 256 MiB cap in 4 minutes and silenced
everyone's log."""
CLIENT_BUDGET_SECONDS = 3600.0


class ClientBudget:
    """Bytes each client may append per hour (:data:`CLIENT_BUDGET_BYTES`); over it, its entries are
    dropped (one warning per client and hour) and the others' still written."""

    def __init__(self, limit: int = CLIENT_BUDGET_BYTES, window: float = CLIENT_BUDGET_SECONDS) -> None:
        self.limit, self.window = limit, window
        self._used: dict[str, tuple[float, int]] = {}
        self._lock = threading.Lock()

    def take(self, client: str, size: int) -> bool:
        """Count ``size`` bytes of ``client``'s; False (nothing counted) when over its budget."""
        now = time.monotonic()
        with self._lock:
            start, used = self._used.get(client, (now, 0))
            if now - start > self.window:
                start, used = now, 0
            if used + size > self.limit:
                if used <= self.limit:
                    _log.warning(f"dbrouter: the query log drops {client}'s entries for up to an hour: it wrote "
                                 f"{used >> 20} MiB in this hour, the limit per client")
                    self._used[client] = (start, self.limit + 1)
                return False
            if len(self._used) >= 100_000 and client not in self._used:
                self._used.pop(next(iter(self._used)))
            self._used[client] = (start, used + size)
            return True


def append(path: Path | None, entry: LogEntry, budget: ClientBudget | None = None, client: str = "") -> bool:
    """Append one entry; a log that cannot be written never fails the call it records.

    Args:
        path: from :func:`log_path` (None: logging is off).
        entry: the entry.
        budget: the journal budget of each client (None: not limited; the CLI's own calls).
        client: who made the call (an address, a user), counted against ``budget``.

    Returns:
        Whether it was written.
    """
    if path is None:
        return False
    entry.question, entry.sql, entry.error = _cut(entry.question), _cut(entry.sql), _cut(entry.error)
    line = (json.dumps(asdict(entry), default=str) + "\n").encode()
    if budget is not None and not budget.take(client, len(line)):
        return False
    try:
        if path.is_file() and path.stat().st_size > MAX_LOG_BYTES:
            _warn_once(path, f"the query log {path} is over {MAX_LOG_BYTES >> 20} MiB and no longer appended to: "
                       "run `dbrouter build` (it adds the log to the warehouse's kb_query_log), then move it away")
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    except OSError as exc:
        _warn_once(path, f"cannot append to the query log {path}: {exc.strerror or exc} (the call itself went on)")
        return False
    return True


def record(path: Path | None, base: LogEntry, call: Callable[[], T],
           entry_of: Callable[[T, LogEntry], LogEntry] | None = None,
           budget: ClientBudget | None = None, client: str = "") -> T:
    """Run one call and append its entry, failed or not: the one way a client logs a call.

    Args:
        path: from :func:`log_path` (None: logging is off; the call still runs).
        base: what is known before the call (source, tool, question, user, the database or SQL given).
        call: the call (no arguments).
        entry_of: the entry of its result, from ``base`` (``RouteResult.log_entry``,
            ``Answer.log_entry``); None: ``base`` as it is.
        budget: the journal budget of each client (None: not limited).
        client: who made the call, counted against ``budget``.

    Returns:
        The call's result.

    Raises:
        Whatever the call raised, after logging it (``status`` error; ``abstained`` when routing
        gave no database).
    """
    started = time.perf_counter()
    entry = base
    try:
        out = call()
    except BaseException as exc:  # an interrupted call too: logged as what it is, never as "ok"
        entry = replace(base, status="error", error=str(exc) or type(exc).__name__,
                        abstained=isinstance(exc, NoDatabase))
        raise
    else:
        if entry_of is not None:
            entry = entry_of(out, base)
        return out
    finally:
        entry.seconds = round(time.perf_counter() - started, 4)
        append(path, entry, budget, client)


_warned: set[Path] = set()


def _warn_once(path: Path, message: str) -> None:
    """One warning per log and process (on stderr through the CLI's handler; never stdout, which
    may be a protocol: MCP over stdio)."""
    if path not in _warned:
        _warned.add(path)
        _log.warning(f"dbrouter: {message}")


def read(path: Path) -> Iterator[LogEntry]:
    """The entries of a log, skipping lines that are not entries (a torn last line, edits).

    Args:
        path: the log file.

    Yields:
        Its entries in order.

    Raises:
        DbrouterError: the file does not exist.
    """
    if not path.is_file():
        raise DbrouterError(f"no query log at {path}: route or ask something first (logging is on unless "
                            "DBROUTER_LOG=off), or pass --log FILE")
    for _, entry, _ in _lines(path):
        if entry is not None:
            yield entry


def _lines(path: Path, offset: int = 0) -> Iterator[tuple[str, LogEntry | None, int]]:
    """(line, its entry or None, byte offset after it) for each complete line from ``offset``; a last
    line without its newline (being written, or torn) is left for the next read."""
    names = set(LogEntry.__dataclass_fields__)
    with open(path, "rb") as fh:
        fh.seek(offset)
        for raw in fh:
            if not raw.endswith(b"\n"):
                return
            offset += len(raw)
            line = raw.decode("utf-8", "replace").strip()
            try:
                obj = json.loads(line)
                entry = LogEntry(**{k: v for k, v in obj.items() if k in names}) \
                    if isinstance(obj, dict) and {"source", "tool"} <= set(obj) else None
            except (json.JSONDecodeError, TypeError):
                entry = None
            yield line, entry, offset


LOG_TABLE = "dbrouter_user.query_log"
"""The warehouse table a build loads the journal into (created by :mod:`dbrouter.kb.tables`)."""


def _text(value) -> str | None:
    return None if value is None else str(value)


LOG_COLUMNS = ("entry_id", "logged_at", "source", "tool", "question", "asked_by", "ranking", "chosen", "abstained",
               "sql_text", "status", "error", "seconds")
"""The columns of :data:`LOG_TABLE`, in order (``logged_at`` as Unix seconds here)."""


def _row(line: str, e: LogEntry | None) -> tuple | None:
    """One line's row of :data:`LOG_COLUMNS` (None for a line that is no entry)."""
    if e is None:
        return None
    try:
        ts, seconds = float(e.ts), float(e.seconds)
    except (TypeError, ValueError):
        return None
    return (hashlib.sha1(line.encode()).hexdigest(), ts, _text(e.source), _text(e.tool), _text(e.question),
            _text(e.user), json.dumps(e.ranking if isinstance(e.ranking, list) else []), _text(e.chosen),
            bool(e.abstained), _text(e.sql), _text(e.status), _text(e.error), seconds)


def journal_rows(path: Path | None, offset: int = 0, limit: int | None = None) -> tuple[dict[str, list], int, int]:
    """The journal's entries as columns of :data:`LOG_TABLE` (``entry_id``: sha1 of the line).

    Args:
        path: the journal (None or a missing file: no rows).
        offset: the byte offset to start at (the start of a line).
        limit: at most this many lines (None: to the end).

    Returns:
        One list per column of :data:`LOG_COLUMNS` (all of the same length), the byte offset after
        the last line read, and how many lines were read (entries or not).
    """
    rows: dict[str, list] = {k: [] for k in LOG_COLUMNS}
    if path is None or not path.is_file():
        return rows, offset, 0
    read_lines = 0
    for line, e, end in _lines(path, offset):
        read_lines, offset = read_lines + 1, end
        values = _row(line, e)
        if values is not None:
            for key, value in zip(rows, values):
                rows[key].append(value)
        if limit is not None and read_lines >= limit:
            break
    return rows, offset, read_lines


def read_table(con: Connection, relation: str = "kb_query_log") -> list[LogEntry]:
    """The entries a warehouse holds (its view ``kb_query_log``, as of its last build), oldest first.

    Args:
        con: a DuckDB connection to the warehouse.
        relation: the view.

    Returns:
        The entries.
    """
    rows = con.execute(f"""select source, tool, question, asked_by, ranking_json, chosen_db_id, abstained, sql_text,
        status, error_message, seconds, epoch(logged_at) from {relation} order by logged_at, entry_id""").fetchall()
    out = []
    for source, tool, question, user, ranking, chosen, abstained, sql, status, error, seconds, ts in rows:
        try:
            parsed = json.loads(ranking) if ranking else []
        except json.JSONDecodeError:
            parsed = []
        out.append(LogEntry(source, tool, question, user, parsed if isinstance(parsed, list) else [], chosen,
                            bool(abstained), sql, status or "ok", error, float(seconds or 0.0), float(ts or 0.0)))
    return out


_SQL_CALL = re.compile(r"\b((?:route_query|route_shortlist|route_phrase_mappings|retrieve_)\w*)\s*\(\s*(?:'((?:[^']|'')*)')?",
                       re.IGNORECASE)
"""A call of a routing or retrieval function, with its question when that is a string literal."""
_LITERAL = re.compile(r"'(?:[^']|'')*'")


def from_sql_call(sql: str, params, table, error: str | None, seconds: float, user: str | None,
                  function: str | None = None, question: str | None = None) -> LogEntry | None:
    """The log entry of one statement a SQL client ran through ``dbrouter serve``, if it routed.

    Statements that call no routing or retrieval function (catalog probes of BI tools, plain reads)
    are not logged. The question is the call's string literal, or else the statement's first text
    parameter; the ranking is read from the result: its ``db_id`` column, or ``route_query``'s one
    value, or the ranking of ``route_query_json`` (``route_query_json_mapped``).

    Args:
        sql: the statement as the client sent it.
        params: its parameters (PREPARE/EXECUTE, extended protocol), or None.
        table: its result (a ``pyarrow.Table``), or None when it failed.
        error: the error message when it failed.
        seconds: wall time.
        user: the session's user.
        function: the entry point called, as the engine's parse found it (`dbrouter serve`); None:
            found in the text.
        question: its question, from the same parse (with ``function``).

    Returns:
        The entry, or None for a statement that routed nothing.
    """
    if function is None:
        literals = [m.span() for m in _LITERAL.finditer(sql)]
        match = next((m for m in _SQL_CALL.finditer(sql) if not any(a <= m.start() < b for a, b in literals)), None)
        if match is None:
            return None
        function = match.group(1)
        question = match.group(2).replace("''", "'") if match.group(2) is not None else None
    function = re.sub(r"_(udf|sql)$", "", function.lower())  # route_query_json_sql: route_query_json
    if question is None and params:
        first = next(iter(params.values() if isinstance(params, dict) else params), None)
        question = first if isinstance(first, str) else None
    entry = LogEntry("serve", function, question, user=user, sql=sql, seconds=seconds,
                     status="error" if error else "ok", error=error)
    if table is None or table.num_rows == 0 or question is None:  # a batch's rows mix many questions
        return entry
    names = table.column_names
    if "db_id" in names:
        ranking = [v for v in table.column("db_id").to_pylist()[:10] if isinstance(v, str)]
        entry.ranking = list(dict.fromkeys(ranking))
    elif len(names) == 1 and table.num_rows == 1:
        value = table.column(0)[0].as_py()
        if function == "route_query":
            entry.ranking = [value] if isinstance(value, str) else []
            entry.abstained = value is None
        elif function in ("route_query_json", "route_query_json_mapped") and isinstance(value, str):
            try:
                obj = json.loads(value)
            except json.JSONDecodeError:
                obj = {}
            if isinstance(obj, dict):
                entry.ranking = [r.get("db_id") for r in obj.get("ranking") or [] if isinstance(r, dict)][:10]
                entry.abstained = bool(obj.get("abstained"))
    entry.chosen = None if entry.abstained or not entry.ranking else entry.ranking[0]
    if entry.abstained:
        entry.status = "abstained"
    return entry
