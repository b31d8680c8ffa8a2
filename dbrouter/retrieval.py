"""Statements and examples from Python: typed wrappers over the warehouse's ``retrieve_statements``
and ``retrieve_examples`` table macros (the SQL is the one implementation) and over
``kb_domain_statements`` (the structured form of every statement)."""

from __future__ import annotations

from dataclasses import dataclass

from dbrouter.connection import Connection, entry
from dbrouter.errors import DbrouterError


@dataclass
class RetrievedStatement:
    """One statement found by sub-string based retrieval."""

    rank: int
    db_id: str
    statement_id: str
    statement: str
    expression: str | None
    snippet: str | None
    structure_status: str
    score: float
    matched_text: str


@dataclass
class RetrievedExample:
    """One example found by the cascade; ``stage`` says which stage answered."""

    rank: int
    stage: str
    db_id: str
    example_id: str
    question: str
    sql: str
    tables_used: list[str]
    score: float
    threshold: float
    similarity: float | None = None
    """What the stage compared with ``threshold`` (``score`` orders; the expanded stage re-ranks)."""


@dataclass
class StructuredStatement:
    """One statement of the KB with its structured form (``expression`` refers to ``snippet``)."""

    db_id: str
    structure_status: str
    structured_by: str
    statement: str
    expression: str | None
    snippet: str | None
    problems: list[str] | None


def list_statements(con: Connection, db: str | None = None) -> list[StructuredStatement]:
    """Every statement of the KB (or of one database), as structured by the last build.

    Args:
        con: connection from :func:`dbrouter.connect`.
        db: only this database (None = all).

    Returns:
        :class:`StructuredStatement` list ordered by database, then statement text.
    """
    where, params = ("where db_id = ?", [db]) if db else ("", [])
    rows = con.execute(
        "select db_id, structure_status, structured_by, statement_text, expression, snippet, problems "
        f"from kb_domain_statements {where} order by db_id, statement_text", params).fetchall()
    return [StructuredStatement(*r) for r in rows]


def retrieve_statements(con: Connection, question: str | None, db: str | None = None, k: int = 4) -> list[RetrievedStatement]:
    """Top-``k`` domain statements for ``question`` (SbR).

    Args:
        con: connection from :func:`dbrouter.connect`.
        question: the question (None/empty give an empty list).
        db: restrict to one database (None = all).
        k: how many.

    Returns:
        Ranked :class:`RetrievedStatement` list.

    Raises:
        DbrouterError: ``db`` is not a database of the knowledge base.
    """
    return _rows(con, RetrievedStatement, "select rank, db_id, statement_id, statement_text, expression, snippet, "
                 f"structure_status, score, matched_text from {entry(con, 'retrieve_statements')}(?, ?, ?)",
                 question, db, k)


def retrieve_examples(con: Connection, question: str | None, db: str | None = None, k: int = 3) -> list[RetrievedExample]:
    """Examples for ``question`` from the progressive cascade.

    Args:
        con: connection from :func:`dbrouter.connect`.
        question: the question (None/empty give an empty list).
        db: restrict to one database (None = all).
        k: how many.

    Returns:
        Ranked :class:`RetrievedExample` list (all from the same, first successful stage).
    """
    return _rows(con, RetrievedExample, "select rank, stage, db_id, example_id, question, sql_text, tables_used, "
                 f"score, threshold, similarity from {entry(con, 'retrieve_examples')}(?, ?, ?)", question, db, k)


def _rows(con: Connection, cls, sql: str, question: str | None, db: str | None, k: int) -> list:
    if db is not None:
        require_database(con, db)
    return [cls(*r) for r in con.execute(sql, [question, db, int(k)]).fetchall()]


def require_database(con: Connection, db: str) -> None:
    """Raise unless ``db`` is a database of the knowledge base (a typo must not read as "nothing found").

    Args:
        con: connection from :func:`dbrouter.connect`.
        db: the db_id asked for.

    Raises:
        DbrouterError: ``db`` is not in ``kb_databases``; the message lists close names.
    """
    import difflib

    import duckdb

    try:  # the databases this session may see (kb_allowed_databases reads its access variable)
        known = [r[0] for r in con.execute("select db_id from kb_allowed_databases order by db_id").fetchall()]
    except duckdb.CatalogException:  # a KB built before access scopes existed
        known = [r[0] for r in con.execute("select db_id from kb_databases order by db_id").fetchall()]
    if db not in known:
        close = difflib.get_close_matches(db, known, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else f" ({len(known)} databases known)."
        raise DbrouterError(f"database {db!r} is not in the knowledge base{hint} Check --db, or ingest it first")
