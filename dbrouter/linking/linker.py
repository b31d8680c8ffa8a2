"""The LLM-free schema linker (STUB: interface fixed, body to come)."""

from __future__ import annotations

from dataclasses import dataclass, field

from dbrouter.linking.columns import SchemaColumn


@dataclass
class LinkedSchema:
    """The columns linked for a question, how, and what it cost."""

    db_id: str
    columns: list[SchemaColumn]
    method: str
    """``retrieval`` (LLM-free) or ``agent``."""
    notes: list[str] = field(default_factory=list)
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def names(self) -> list[str]:
        """``table.column`` of every linked column."""
        return [c.name for c in self.columns]


def link_schema(con, question: str, db: str) -> LinkedSchema:
    """Link ``question`` to columns of ``db`` without an LLM."""
    raise NotImplementedError
