"""The query log: every routing and answer through `dbrouter mcp` and the CLI, one JSON line each.

The log lives beside the warehouse (``<warehouse stem>.query_log.jsonl``), not in it: the warehouse
is opened read-only by every reader and replaced whole by each build, so a table in it could neither
be written while an endpoint serves nor survive a rebuild. Lines are appended with one ``write`` on
a file opened for appending, so processes logging at once do not interleave within a line.
``DBROUTER_LOG`` names another file, or ``off`` turns logging off (``--no-log`` on the CLI).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dbrouter.errors import DbrouterError

MAX_TEXT = 4000
"""Characters of a question or SQL text kept in a log line."""
MAX_LOG_BYTES = 256 * 2**20
"""A log past this size is not appended to (a warning says so): rotate it (move it away)."""


@dataclass
class LogEntry:
    """One routed or answered question.

    Attributes:
        source: ``mcp`` or ``cli``.
        tool: ``route``, ``link``, ``ask`` or ``run_sql``.
        question: the question (None for ``run_sql``).
        user: who asked (the policy's user; None without a policy).
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
    setting = os.environ.get("DBROUTER_LOG", "").strip()
    if setting.lower() in ("off", "0", "false", "no"):
        return None
    if setting:
        return Path(setting)
    w = Path(warehouse)
    return w.with_name(f"{w.stem}.query_log.jsonl")


def _cut(text: str | None) -> str | None:
    return text if text is None or len(text) <= MAX_TEXT else text[:MAX_TEXT] + "..."


def append(path: Path | None, entry: LogEntry) -> bool:
    """Append one entry; a log that cannot be written never fails the call it records.

    Args:
        path: from :func:`log_path` (None: logging is off).
        entry: the entry.

    Returns:
        Whether it was written.
    """
    if path is None:
        return False
    entry.question, entry.sql, entry.error = _cut(entry.question), _cut(entry.sql), _cut(entry.error)
    line = (json.dumps(asdict(entry), default=str) + "\n").encode()
    try:
        if path.exists() and path.stat().st_size > MAX_LOG_BYTES:
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    except OSError:
        return False
    return True


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
    names = set(LogEntry.__dataclass_fields__)
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict) and {"source", "tool"} <= set(obj):
                yield LogEntry(**{k: v for k, v in obj.items() if k in names})
