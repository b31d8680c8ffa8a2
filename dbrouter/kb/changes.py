"""Changes to the examples and statements users add (add one, remove some) that reach the
knowledge base even while `dbrouter serve` or `dbrouter mcp` hold its warehouse open.

A change is applied to the warehouse's user tables (``dbrouter_user.examples`` /
``statements``) at once when the warehouse can be opened for writing. When another process holds it
(a server, a reader), the change is appended instead to the changes journal beside it,
``<warehouse stem>.changes.jsonl``, one JSON line each, and the next build applies the lines it
has not applied yet, in order, to its copy before `dbt build` (:func:`load_into`, called by
ingest; how far it got is kept like the query log's: :func:`dbrouter.kb.tables.journal_offset`). Either
way the routing functions use a change from the next build on.

Removal is by the id the KB shows (``kb_examples.example_id``, ``kb_domain_statements.statement_id``:
md5 of the database, question and SQL / statement, as the dbt models compute it); only what was
added with the CLI can be removed this way - an example of a sources-file is removed from its file.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dbrouter.connection import Connection
from dbrouter.kb.tables import (
    USER_SCHEMA,
    add_example,
    add_statement,
    check_example,
    check_statement,
    ensure_tables,
    journal_offset,
    record_journal_offset,
)

OPS = ("add_example", "add_statement", "remove_examples", "remove_statements")
"""The kinds of change."""
MAX_LINE_BYTES = 1 << 20
"""A journal line longer than this is not a change dbrouter wrote: skipped and counted as bad."""

_ID = {"remove_examples": ("examples", "md5(db_id || chr(0) || question || chr(0) || sql_text)"),
       "remove_statements": ("statements", "md5(db_id || chr(0) || statement)")}


@dataclass(frozen=True)
class Change:
    """One change of the user's examples or statements."""

    op: str
    db_id: str | None = None
    question: str | None = None
    sql: str | None = None
    statement: str | None = None
    ids: tuple[str, ...] = ()
    added_by: str = "cli"
    ts: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"unknown change {self.op!r} (known: {', '.join(OPS)})")

    def check(self) -> None:
        """Refuse what applying would refuse (an add with an empty database, question, SQL or statement).

        Raises:
            ValueError: the reason.
        """
        if self.op == "add_example":
            check_example(self.db_id or "", self.question or "", self.sql or "")
        elif self.op == "add_statement":
            check_statement(self.db_id or "", self.statement or "")

    def describe(self) -> str:
        """One line saying what the change does."""
        if self.op == "add_example":
            return f"add example for {self.db_id}: {self.question}"
        if self.op == "add_statement":
            return f"add statement for {self.db_id}: {self.statement}"
        return f"remove {self.op.removeprefix('remove_')[:-1]}s {', '.join(self.ids)}"


def changes_path(warehouse: str | Path) -> Path:
    """The changes journal of a warehouse.

    Args:
        warehouse: the KB file.

    Returns:
        ``<warehouse stem>.changes.jsonl`` beside it.
    """
    w = Path(warehouse)
    return w.with_name(f"{w.stem}.changes.jsonl")


def apply(con: Connection, change: Change) -> int:
    """Apply one change to the user tables of a read-write connection.

    Args:
        con: a read-write DuckDB connection to the warehouse (or to a build's copy).
        change: the change.

    Returns:
        Rows added or removed.

    Raises:
        ValueError: an add with an empty database, question, SQL or statement.
    """
    ensure_tables(con)
    if change.op == "add_example":
        add_example(con, change.db_id or "", change.question or "", change.sql or "", added_by=change.added_by)
        return 1
    if change.op == "add_statement":
        add_statement(con, change.db_id or "", change.statement or "", added_by=change.added_by)
        return 1
    table, key = _ID[change.op]
    if not change.ids:
        return 0
    marks = ", ".join("?" for _ in change.ids)
    before = con.execute(f"select count(*) from {USER_SCHEMA}.{table}").fetchone()[0]
    con.execute(f"delete from {USER_SCHEMA}.{table} where {key} in ({marks})", list(change.ids))
    return before - con.execute(f"select count(*) from {USER_SCHEMA}.{table}").fetchone()[0]


def append(warehouse: str | Path, change: Change) -> Path:
    """Append a change to the warehouse's journal (one line, under an exclusive lock).

    Args:
        warehouse: the KB file.
        change: the change.

    Returns:
        The journal's path.
    """
    path = changes_path(warehouse)
    line = (json.dumps(asdict(change), ensure_ascii=False) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def _parse(raw: bytes) -> Change | None:
    try:
        obj = json.loads(raw)
        obj["ids"] = tuple(obj.get("ids") or ())
        return Change(**obj)
    except (ValueError, TypeError, KeyError):
        return None


def read(path: Path, offset: int = 0) -> tuple[list[Change], int, int]:
    """The journal's changes from ``offset`` on.

    Args:
        path: the journal.
        offset: a byte offset at a line start.

    Returns:
        (changes, the offset after the last whole line, bad lines skipped). A last line without its
        newline (being written) is left for the next read.
    """
    out, bad = [], 0
    with path.open("rb") as f:
        f.seek(offset)
        while True:
            raw = f.readline(MAX_LINE_BYTES + 1)
            if not raw or not raw.endswith(b"\n"):
                if len(raw) > MAX_LINE_BYTES:  # an over-long line: skip it whole
                    bad += 1
                    while raw and not raw.endswith(b"\n"):
                        raw = f.readline(MAX_LINE_BYTES + 1)
                    offset = f.tell()
                    continue
                break
            offset = f.tell()
            change = _parse(raw)
            if change is None:
                bad += 1
            else:
                out.append(change)
    return out, offset, bad


def pending(con: Connection, warehouse: str | Path) -> list[Change]:
    """The journal's changes that no build has applied yet.

    Args:
        con: a connection to the warehouse (read-only is enough).
        warehouse: the KB file.

    Returns:
        The changes, oldest first.
    """
    path = changes_path(warehouse)
    if not path.is_file():
        return []
    return read(path, journal_offset(con, path))[0]


@dataclass
class Applied:
    """What :func:`load_into` did."""

    changes: int = 0
    rows: int = 0
    bad: int = 0
    refused: list[str] = field(default_factory=list)


def load_into(con: Connection, path: Path | None) -> Applied:
    """Apply the journal's changes not applied yet to a build's copy of the warehouse.

    Args:
        con: a read-write DuckDB connection to the copy being built.
        path: the journal (:func:`changes_path` of the real warehouse, not of the copy; None: none).

    Returns:
        How many changes and rows; lines that are not changes and changes the tables refuse (an
        empty question) are skipped and counted, never fatal.
    """
    done = Applied()
    if path is None or not path.is_file():
        return done
    ensure_tables(con)
    changes, offset, done.bad = read(path, journal_offset(con, path))
    for change in changes:
        try:
            done.rows += apply(con, change)
            done.changes += 1
        except ValueError as exc:
            done.refused.append(f"{change.describe()}: {exc}")
    record_journal_offset(con, path, offset)
    return done


@dataclass(frozen=True)
class StoredItem:
    """An example or statement of the KB as of its last build (or pending in the journal)."""

    kind: str
    item_id: str
    db_id: str
    text: str
    sql: str | None
    origin: str
    pending: bool = False

    @property
    def removable(self) -> bool:
        """Added with the CLI (an example of a sources-file is removed from its file)."""
        return self.pending or self.origin.startswith("cli:")


_ITEMS = {"example": ("kb_examples", "example_id", "question", "sql_text"),
          "statement": ("kb_domain_statements", "statement_id", "statement_text", "null")}


def item_id(kind: str, db_id: str, text: str, sql: str | None = None) -> str:
    """The id the KB gives an example (database, question, SQL) or a statement (database, text).

    Args:
        kind: ``example`` or ``statement``.
        db_id: its database.
        text: the question or the statement.
        sql: the example's SQL.

    Returns:
        The md5 hex digest the dbt models compute.
    """
    import hashlib

    key = f"{db_id}\0{text}\0{sql}" if kind == "example" else f"{db_id}\0{text}"
    return hashlib.md5(key.encode("utf-8")).hexdigest()


def stored_items(con: Connection, warehouse: str | Path, kind: str, db_id: str | None = None,
                 text: str | None = None) -> list[StoredItem]:
    """The examples or statements of the last build, then those pending in the journal.

    Args:
        con: a connection to the warehouse.
        warehouse: the KB file (for its journal).
        kind: ``example`` or ``statement``.
        db_id: only this database.
        text: only this question / statement (case and surrounding space ignored).

    Returns:
        The items, built ones by database and text, pending additions after them; a pending removal
        drops the items it names.
    """
    table, id_col, text_col, sql_col = _ITEMS[kind]
    rows = con.execute(
        f"select {id_col}, db_id, {text_col}, {sql_col}, origin from {table} "
        f"where (? is null or db_id = ?) and (? is null or lower(trim({text_col})) = lower(trim(?))) "
        f"order by db_id, {text_col}", [db_id, db_id, text, text]).fetchall()
    items = [StoredItem(kind, i, d, t, s, o) for i, d, t, s, o in rows]
    built = {it.item_id for it in items}
    user_table, user_text, user_sql = ("examples", "question", "sql_text") if kind == "example" else \
        ("statements", "statement", "null")
    with contextlib.suppress(Exception):  # stored with the CLI since the last build (a KB without the table: none)
        for d, t, sql, by in con.execute(
                f"select db_id, {user_text}, {user_sql}, added_by from {USER_SCHEMA}.{user_table} "
                f"where (? is null or db_id = ?) and (? is null or lower(trim({user_text})) = lower(trim(?))) "
                "order by added_at", [db_id, db_id, text, text]).fetchall():
            key = item_id(kind, d, t, sql)
            if key not in built:
                built.add(key)
                items.append(StoredItem(kind, key, d, t, sql, f"pending:{by}", pending=True))
    add_op, remove_op = f"add_{kind}", f"remove_{kind}s"
    for change in pending(con, warehouse):
        if change.op == remove_op:
            items = [it for it in items if it.item_id not in change.ids]
        elif change.op == add_op and (db_id is None or change.db_id == db_id):
            body = change.question if kind == "example" else change.statement
            if text is None or (body or "").strip().lower() == text.strip().lower():
                stored = (body or "").strip() if kind == "example" else (body or "")  # as add_example/add_statement store it
                items.append(StoredItem(kind, item_id(kind, (change.db_id or "").strip(), stored,
                                                      (change.sql or "").strip() if kind == "example" else None),
                                        change.db_id or "", body or "", change.sql, f"pending:{change.added_by}",
                                        pending=True))
    return items
