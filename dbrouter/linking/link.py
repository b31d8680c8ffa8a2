"""Link with the linker a caller chose: what ``dbrouter link``, ``dbrouter ask`` and agents call.

The LLM-free linker (:mod:`dbrouter.linking.linker`) always answers; the agent
(:mod:`dbrouter.linking.agent`) needs an LLM and falls back to the LLM-free linker.
:func:`link_question` is the whole step for a client: route unless a database is given, link,
render the schema text.
"""

from __future__ import annotations

from dataclasses import dataclass

from dbrouter.connection import Connection
from dbrouter.errors import NoDataSource
from dbrouter.execute.runners import target_for
from dbrouter.linking import MAX_COLUMNS
from dbrouter.linking.agent import link_schema_agent
from dbrouter.linking.columns import render_schema
from dbrouter.linking.linker import LinkedSchema, link_schema
from dbrouter.retrieval import require_database
from dbrouter.routing.route import route_database

NO_LLM_FOR_AGENT = ("the agent linker needs an LLM (DBROUTER_LLM_BASE_URL is unset): the schema was linked by "
                    "the LLM-free linker")


def link(con: Connection, question: str, db: str, linker: str = "retrieval", llm=None, target=None,
         max_columns: int = MAX_COLUMNS) -> LinkedSchema:
    """Link with the chosen linker (what ``dbrouter link`` and ``dbrouter ask`` call).

    Args:
        con: connection from :func:`dbrouter.connect`.
        question: the question.
        db: the database.
        linker: ``retrieval`` (LLM-free) or ``agent``.
        llm: the LLM client (None = not configured: the agent is replaced by the LLM-free linker,
            and the first note says so).
        target: where the agent's exploration SQL runs (None = the database has no data source).
        max_columns: most columns the LLM-free linker hands on (wider selections and wide
            databases without examples are linked tables first).

    Returns:
        The :class:`LinkedSchema`.
    """
    if linker == "agent" and llm is not None:
        return link_schema_agent(con, llm, target, question, db)
    linked = link_schema(con, question, db, max_columns=max_columns)
    if linker == "agent":
        linked.notes.insert(0, NO_LLM_FOR_AGENT)
    return linked


@dataclass
class LinkedQuestion:
    """A question linked to one database (:func:`link_question`).

    Attributes:
        db_id: the database.
        routed: it was chosen by routing (not given).
        linked: the tables and columns (:class:`LinkedSchema`; its ``notes`` say what to know).
        schema: the prompt-ready schema text of those columns.
    """

    db_id: str
    routed: bool
    linked: LinkedSchema
    schema: str


def link_question(con: Connection, question: str, db: str | None = None, linker: str = "retrieval", llm=None,
                  max_columns: int = MAX_COLUMNS, flag: str = "--db") -> LinkedQuestion:
    """Route ``question`` unless ``db`` is given (as `dbrouter route` routes it, with ``llm``'s
    phrase mapping when there is one), then link it: the one linking call of the CLI and MCP.

    Args:
        con: connection from :func:`dbrouter.connect`.
        question: the question (checked by the caller).
        db: the database (None: routed).
        linker: ``retrieval`` or ``agent`` (the agent explores the database's data source when it has one).
        llm: the configured LLM, or None.
        max_columns: most columns the LLM-free linker hands on.
        flag: how the caller names a database, for the error when routing gives none.

    Returns:
        The :class:`LinkedQuestion`.

    Raises:
        NoDatabase: routing abstained (the message names the closest databases).
        DbrouterError: ``db`` is not in the knowledge base.
    """
    if db is None:
        db, _ = route_database(con, question, "link against", llm=llm, flag=flag)
        routed = True
    else:
        require_database(con, db)
        routed = False
    target, notes = None, []
    if linker == "agent" and llm is not None:
        try:
            target = target_for(con, db)
        except NoDataSource as exc:
            notes.append(f"{exc}; the agent links without exploring data")
    linked = link(con, question, db, linker, llm, target, max_columns=max_columns)
    linked.notes[:0] = notes
    return LinkedQuestion(db, routed, linked, render_schema(con, db, linked.columns))
