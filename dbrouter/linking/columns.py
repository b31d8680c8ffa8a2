"""Columns of the KB for schema linking (STUB: interface fixed, body to come)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable


@dataclass(frozen=True)
class SchemaColumn:
    """One column of a database as the KB knows it."""

    table: str
    column: str
    data_type: str | None = None
    primary_key: bool = False
    foreign_key: bool = False
    references: str | None = None
    """``table.column`` this column refers to (declared foreign key), or None."""
    description: str | None = None
    samples: tuple[str, ...] = field(default_factory=tuple)

    @property
    def name(self) -> str:
        """``table.column``."""
        return f"{self.table}.{self.column}"


@dataclass(frozen=True)
class ScoredColumn:
    """A retrieved column with its score."""

    column: SchemaColumn
    score: float


def retrieve_columns(con, question: str, db: str, k: int = 10, exclude: Iterable[str] = ()) -> list[ScoredColumn]:
    """Top-``k`` columns of ``db`` for ``question``, skipping ``exclude`` (``table.column`` names)."""
    raise NotImplementedError


def table_names(con, db: str) -> list[str]:
    """Every table of ``db``."""
    raise NotImplementedError


def lookup_columns(con, db: str, names: Iterable[str]) -> tuple[list[SchemaColumn], list[str]]:
    """Resolve ``table.column`` names (case-insensitive): (found columns, unknown names)."""
    raise NotImplementedError


def render_schema(con, db: str, columns: Iterable[SchemaColumn]) -> str:
    """M-Schema-like text of ``columns`` grouped by table, with the foreign keys between them."""
    raise NotImplementedError
