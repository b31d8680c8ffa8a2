"""Gold schema elements of a benchmark question: the tables and columns its gold SQL uses,
resolved against the database's schema by the extractor the KB's examples use
(:func:`python_udfs.sql_usage.sql_usage`: aliases such as ``T1`` mean different tables in different
sub-queries, so resolution is per scope)."""

from __future__ import annotations

from dataclasses import dataclass, field

from python_udfs.sql_usage import sql_usage


@dataclass
class GoldSchema:
    """The schema elements a gold SQL needs (lower-case ``table`` / ``table.column`` names)."""

    tables: set[str] = field(default_factory=set)
    columns: set[str] = field(default_factory=set)
    error: str | None = None
    """Why the SQL could not be parsed (the question is then left out of the evaluation)."""

    def covered_by(self, linked: set[str]) -> bool:
        """True when ``linked`` (lower-case ``table.column`` names) holds every gold column and at
        least one column of every gold table (``count(*)`` and ``*`` need the table, not a column).

        Args:
            linked: the linked columns.

        Returns:
            Strict recall of this question (all or nothing).
        """
        if not self.columns <= linked:
            return False
        linked_tables = {n.split(".", 1)[0] for n in linked}
        return self.tables <= linked_tables


Schema = dict[str, set[str]]
"""lower-case table name -> lower-case column names."""


def gold_schema(sql: str, schema: Schema, dialect: str = "sqlite") -> GoldSchema:
    """Tables and columns ``sql`` uses (:func:`python_udfs.sql_usage.sql_usage`, lower-cased).

    Args:
        sql: the gold SQL.
        schema: the database's tables and columns (lower-case).
        dialect: sqlglot dialect of ``sql``.

    Returns:
        The :class:`GoldSchema` (with ``error`` set when the SQL cannot be parsed).
    """
    usage = sql_usage(sql, {t: sorted(cols) for t, cols in schema.items()}, dialect)
    if usage.error:
        return GoldSchema(error=usage.error)
    return GoldSchema(tables={t.lower() for t in usage.tables if t.lower() in schema},
                      columns={c.lower() for c in usage.columns})
