"""Link with the linker a caller chose: what ``dbrouter link``, ``dbrouter ask`` and agents call.

The LLM-free linker (:mod:`dbrouter.linking.linker`) always answers; the agent
(:mod:`dbrouter.linking.agent`) needs an LLM and falls back to the LLM-free linker.
"""

from __future__ import annotations

from dbrouter.linking import MAX_COLUMNS
from dbrouter.linking.agent import link_schema_agent
from dbrouter.linking.linker import LinkedSchema, link_schema

NO_LLM_FOR_AGENT = ("the agent linker needs an LLM (DBROUTER_LLM_BASE_URL is unset): the schema was linked by "
                    "the LLM-free linker")


def link(con, question: str, db: str, linker: str = "retrieval", llm=None, target=None,
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

