"""Tables the knowledge base keeps across ingests: statements and examples added with the CLI
(never rewritten), the query log as of the last build (rows only ever added) and what the LLM
derived (structured statements, example descriptors).

`dbrouter ingest` replaces only the raw snapshot; it calls :func:`ensure_tables` so these exist
(empty) for the dbt sources, and never touches their rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from dbrouter.connection import Connection
from dbrouter.feedback.log import LOG_TABLE, journal_rows

if TYPE_CHECKING:
    import duckdb

USER_SCHEMA = "dbrouter_user"
LLM_SCHEMA = "dbrouter_llm"

DDL = [
    f"create schema if not exists {USER_SCHEMA}",
    f"create schema if not exists {LLM_SCHEMA}",
    f"""create table if not exists {USER_SCHEMA}.statements (
        db_id varchar not null, statement varchar not null,
        added_at timestamp default current_timestamp, added_by varchar)""",
    f"""create table if not exists {USER_SCHEMA}.examples (
        db_id varchar not null, question varchar not null, sql_text varchar not null,
        added_at timestamp default current_timestamp, added_by varchar)""",
    f"""create table if not exists {USER_SCHEMA}.query_log (
        entry_id varchar primary key, logged_at timestamp, source varchar, tool varchar, question varchar,
        asked_by varchar, ranking varchar, chosen varchar, abstained boolean, sql_text varchar,
        status varchar, error varchar, seconds double)""",
    f"""create table if not exists {USER_SCHEMA}.query_log_journals (
        journal varchar primary key, inode bigint, loaded_bytes bigint)""",
    f"""create table if not exists {LLM_SCHEMA}.statement_structures (
        statement_hash varchar primary key, db_id varchar, statement varchar, expression varchar,
        snippet varchar, status varchar, "references" varchar[], problems varchar[], model varchar,
        created_at timestamp default current_timestamp)""",
    f"""create table if not exists {LLM_SCHEMA}.example_descriptors (
        example_hash varchar primary key, db_id varchar, question varchar, normalized_question varchar,
        main_clause varchar, requested_entities varchar[], paraphrases varchar[], model varchar,
        created_at timestamp default current_timestamp)""",
]


JOURNALS_TABLE = f"{USER_SCHEMA}.query_log_journals"
"""How far builds loaded each journal beside the warehouse (the query log's, the changes'): its
path, inode and byte offset, so a build reads only the lines appended since."""


def journal_offset(con: Connection, path) -> int:
    """Where the next load of the journal ``path`` starts: the recorded offset when the file is the
    same (path and inode) and not shorter, else 0 (rotated, replaced, or never loaded).

    Args:
        con: a connection to the warehouse (read-only is enough; a KB without the table gives 0).
        path: the journal, an existing file.

    Returns:
        A byte offset at a line start.
    """
    import duckdb

    stat = path.stat()
    try:
        done = con.execute(f"select inode, loaded_bytes from {JOURNALS_TABLE} where journal = ?",
                           [str(path.resolve())]).fetchall()
    except duckdb.CatalogException:  # a KB built before the table existed: nothing loaded
        return 0
    return int(done[0][1]) if done and done[0][0] == stat.st_ino and done[0][1] <= stat.st_size else 0


def record_journal_offset(con: Connection, path, offset: int) -> None:
    """Record that the journal ``path`` is loaded up to ``offset`` (read-write connection).

    Args:
        con: the warehouse (or a build's copy).
        path: the journal.
        offset: bytes loaded.
    """
    con.execute(f"insert or replace into {JOURNALS_TABLE} values (?, ?, ?)",
                [str(path.resolve()), path.stat().st_ino, offset]).fetchall()


def ensure_tables(con: Connection) -> None:
    """Create the persistent schemas/tables if missing (idempotent).

    Args:
        con: a read-write DuckDB connection to the warehouse.
    """
    for sql in DDL:
        con.execute(sql)


def check_statement(db_id: str, statement: str) -> None:
    """What :func:`add_statement` refuses, without a connection.

    Raises:
        ValueError: empty db id or statement.
    """
    if not db_id or not db_id.strip():
        raise ValueError("--db is required and must not be empty")
    if not statement or not statement.strip():
        raise ValueError("the statement is empty")


def check_example(db_id: str, question: str, sql: str) -> None:
    """What :func:`add_example` refuses, without a connection.

    Raises:
        ValueError: an empty database, question or SQL.
    """
    if not db_id or not db_id.strip():
        raise ValueError("--db is required and must not be empty")
    if not question or not question.strip():
        raise ValueError("the question is empty")
    if not sql or not sql.strip():
        raise ValueError("the SQL is empty")


def add_statement(con: Connection, db_id: str, statement: str, added_by: str = "cli") -> None:
    """Append one user statement (the original text is stored verbatim, never edited).

    Args:
        con: read-write connection.
        db_id: its database.
        statement: the statement text.
        added_by: who added it.

    Raises:
        ValueError: empty db id or statement.
    """
    check_statement(db_id, statement)
    ensure_tables(con)
    con.execute(f"insert into {USER_SCHEMA}.statements (db_id, statement, added_by) values (?, ?, ?)",
                [db_id.strip(), statement, added_by])


def add_example(con: Connection, db_id: str, question: str, sql: str, added_by: str = "cli") -> None:
    """Append one verified question/SQL example (used by the next build).

    Args:
        con: read-write connection.
        db_id: its database.
        question: the question.
        sql: the SQL that answers it.
        added_by: who added it.

    Raises:
        ValueError: an empty database, question or SQL.
    """
    check_example(db_id, question, sql)
    ensure_tables(con)
    con.execute(f"insert into {USER_SCHEMA}.examples (db_id, question, sql_text, added_by) values (?, ?, ?, ?)",
                [db_id.strip(), question.strip(), sql.strip(), added_by])


LOAD_CHUNK = 50_000
"""Journal lines per insert (bounds the build's memory whatever the journal's size)."""


def load_query_log(con: duckdb.DuckDBPyConnection, path: Path | None, table: str = LOG_TABLE) -> int:
    """Add the query log journal's entries (:mod:`dbrouter.feedback.log`) that the warehouse table does not
    hold yet (DuckDB).

    Reading resumes where the last load of the same journal file stopped (same path and inode, not
    shorter): a build reads the lines appended since, not the whole journal again. A journal that
    was rotated or replaced is read from its start; rows already held are skipped by ``entry_id``.

    Args:
        con: a read-write DuckDB connection to the warehouse being built (the tables exist).
        path: the journal (None or a missing file: nothing to load).
        table: the table.

    Returns:
        How many rows were added.
    """
    if path is None or not path.is_file():
        return 0
    import pyarrow as pa

    cur = con.cursor()  # its own results: the caller's connection may hold one unfinished
    try:
        offset = journal_offset(cur, path)
        before = cur.execute(f"select count(*) from {table}").fetchall()[0][0]
        while True:
            rows, offset, read_lines = journal_rows(path, offset, LOAD_CHUNK)
            if rows["entry_id"]:
                cur.register("dbrouter_journal", pa.table(rows))
                cur.execute(f"""insert into {table}
                    select distinct on (entry_id) entry_id, make_timestamp((logged_at * 1e6)::bigint), source, tool,
                           question, asked_by, ranking, chosen, abstained, sql_text, status, error, seconds
                    from dbrouter_journal where entry_id not in (select entry_id from {table})""").fetchall()
                cur.unregister("dbrouter_journal")
            if read_lines < LOAD_CHUNK:
                break
        record_journal_offset(cur, path, offset)
        return cur.execute(f"select count(*) from {table}").fetchall()[0][0] - before
    finally:
        cur.close()
