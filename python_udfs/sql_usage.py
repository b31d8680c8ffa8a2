"""Which tables and columns a SQL query uses: the one extractor, for example descriptors and evaluation.

Resolution follows sqlglot's scopes, so an alias such as ``T1`` can mean different tables in
different sub-queries, a CTE's or derived table's columns are not mistaken for a base table's, and
an unqualified column belongs to the base table of its own scope that has it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope


@dataclass
class SqlUsage:
    """The schema elements one query uses.

    Attributes:
        tables: base tables, in the order the query names them (the query's spelling, or the
            schema's when the schema has the table).
        columns: ``table.column`` names (the schema's spelling when known), in query order.
        error: why the SQL could not be parsed (then both lists are empty).
        tree: the parsed query (None when it could not be parsed), for callers reading more of it.
    """

    tables: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    error: str | None = None
    tree: exp.Expr | None = field(default=None, repr=False, compare=False)


def _lookup(schema: dict[str, list[str]] | None) -> dict[str, tuple[str, dict[str, str]]]:
    """lower table -> (table as the schema spells it, lower column -> column as spelled)."""
    return {t.lower(): (t, {c.lower(): c for c in cols}) for t, cols in (schema or {}).items()}


def sql_usage(sql: str | None, schema: dict[str, list[str]] | None = None, dialect: str = "sqlite") -> SqlUsage:
    """Tables and columns ``sql`` uses.

    Args:
        sql: the query.
        schema: table -> column names of its database (optional: without it an unqualified column
            is placed only when its scope reads a single base table).
        dialect: sqlglot dialect of ``sql``.

    Returns:
        The :class:`SqlUsage` (``error`` set when the SQL cannot be parsed).
    """
    if not sql or not sql.strip():
        return SqlUsage(error="empty SQL")
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
        scopes = traverse_scope(tree) if tree is not None else []
    except Exception as exc:  # noqa: BLE001 - sqlglot raises ParseError, TokenError, OptimizeError, ValueError ...
        return SqlUsage(error=f"{type(exc).__name__}: {str(exc)[:200]}")
    if tree is None:
        return SqlUsage(error="no statement")
    known = _lookup(schema)
    out = SqlUsage(tree=tree)
    for table in tree.find_all(exp.Table):
        if table.name:
            out.tables.append(known.get(table.name.lower(), (table.name, {}))[0])
    out.tables = list(dict.fromkeys(out.tables))
    order = {id(column): i for i, column in enumerate(tree.find_all(exp.Column))}
    found: list[tuple[int, str]] = []
    # sqlglot's scopes leave out some columns (those inside HAVING's aggregates, e.g.
    # `HAVING avg(mean_humidity) < 70`): each such column is resolved in its nearest SELECT's scope.
    listed = {id(column) for scope in scopes for column in scope.columns}
    by_select = {id(scope.expression): scope for scope in scopes}
    extra: dict[int, list[exp.Column]] = {}
    for column in tree.find_all(exp.Column):
        if id(column) in listed:
            continue
        node = column.parent
        while node is not None and id(node) not in by_select:
            node = node.parent
        if node is not None:
            extra.setdefault(id(node), []).append(column)
    for scope in scopes:
        sources = {alias.lower(): src for alias, src in scope.sources.items()}
        bases = [src.name for src in sources.values() if isinstance(src, exp.Table) and src.name]
        for column in [*scope.columns, *extra.get(id(scope.expression), [])]:
            name = column.name
            if not name or name == "*":
                continue
            owner: str | None = None
            if column.table:
                src = sources.get(column.table.lower())
                owner = src.name if isinstance(src, exp.Table) else None
            else:
                having = [t for t in bases if name.lower() in known.get(t.lower(), ("", {}))[1]]
                owner = having[0] if having else (bases[0] if len(bases) == 1 and not known else None)
            if owner is None:
                continue
            table, cols = known.get(owner.lower(), (owner, {}))
            if known and name.lower() not in cols:
                continue  # a select-list alias or a column the schema does not have
            found.append((order.get(id(column), len(order)), f"{table}.{cols.get(name.lower(), name)}"))
    columns = [name for _, name in sorted(found, key=lambda f: f[0])]  # query order
    out.columns = list(dict.fromkeys(columns))
    return out
