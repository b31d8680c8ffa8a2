"""Gold schema elements of a benchmark question: the tables and columns its gold SQL uses,
resolved against the database's schema with sqlglot's scopes (aliases such as ``T1`` mean
different tables in different sub-queries, so resolution is per scope)."""

from __future__ import annotations

from dataclasses import dataclass, field


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


def _resolve(column, scope, schema: Schema) -> list[str]:
    """The ``table.column`` names one column reference can mean in its scope."""
    from sqlglot import exp

    name = column.name.lower()
    if not name or name == "*":
        return []
    qualifier = column.table.lower() if column.table else ""
    sources = {alias.lower(): src for alias, src in scope.sources.items()}
    if qualifier:
        src = sources.get(qualifier)
        table = src.name.lower() if isinstance(src, exp.Table) else (qualifier if qualifier in schema else None)
        return [f"{table}.{name}"] if table and name in schema.get(table, set()) else []
    tables = [s.name.lower() for s in sources.values() if isinstance(s, exp.Table)]
    matches = [t for t in tables if name in schema.get(t, set())]
    return [f"{matches[0]}.{name}"] if matches else []


def gold_schema(sql: str, schema: Schema, dialect: str = "sqlite") -> GoldSchema:
    """Tables and columns ``sql`` uses.

    Args:
        sql: the gold SQL.
        schema: the database's tables and columns (lower-case).
        dialect: sqlglot dialect of ``sql``.

    Returns:
        The :class:`GoldSchema` (with ``error`` set when the SQL cannot be parsed).
    """
    import sqlglot
    from sqlglot import exp
    from sqlglot.optimizer.scope import traverse_scope

    try:
        tree = sqlglot.parse_one(sql, read=dialect)
        scopes = traverse_scope(tree)
    except Exception as exc:  # sqlglot raises ParseError, OptimizeError, and others on odd SQL
        return GoldSchema(error=f"{type(exc).__name__}: {str(exc)[:200]}")
    out = GoldSchema()
    for table in tree.find_all(exp.Table):
        if table.name.lower() in schema:
            out.tables.add(table.name.lower())
    for scope in scopes:
        for column in scope.columns:
            out.columns.update(_resolve(column, scope, schema))
    return out
