"""Columns of the KB for schema linking: retrieval by meaning, lookup by name, and the compact
M-Schema-like rendering used in LLM prompts.

The retrieval itself is the warehouse's ``retrieve_columns(question, db, k, exclude)`` table
macro (``macros/routing/retrieve_columns_function.sql``); this module wraps it and reads
``kb_columns``/``kb_join_edges`` for the rest.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from dbrouter.connection import Connection, entry
from dbrouter.retrieval import require_database

_COLUMN_FIELDS = ("table_name, column_name, data_type, is_primary_key, is_foreign_key, references_text, "
                  "coalesce(column_description, value_description), sample_values")


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

    @classmethod
    def from_row(cls, row: tuple) -> SchemaColumn:
        """Build from a row of :data:`_COLUMN_FIELDS` order."""
        table, column, dtype, pk, fk, refs, desc, samples = row
        return cls(table, column, dtype, bool(pk), bool(fk), refs, desc, tuple(samples or ()))


@dataclass(frozen=True)
class ScoredColumn:
    """A retrieved column with its cosine score."""

    column: SchemaColumn
    score: float


def retrieve_columns(con: Connection, question: str, db: str, k: int = 10, exclude: Iterable[str] = ()) -> list[ScoredColumn]:
    """Top-``k`` columns of ``db`` for ``question``, skipping ``exclude``.

    Args:
        con: connection from :func:`dbrouter.connect`.
        question: the question or any search text (None/empty give an empty list).
        db: the database (must be in the KB).
        k: how many.
        exclude: ``table.column`` names already seen (case-insensitive).

    Returns:
        Ranked :class:`ScoredColumn` list (best first).

    Raises:
        DbrouterError: ``db`` is not a database of the knowledge base.
    """

    require_database(con, db)
    rows = con.execute(
        "select table_name, column_name, data_type, is_primary_key, is_foreign_key, references_text, "
        "coalesce(column_description, value_description), sample_values, score "
        f"from {entry(con, 'retrieve_columns')}(?, ?, k := ?, exclude := ?)",
        [question, db, int(k), [str(x).lower() for x in exclude]]).fetchall()
    return [ScoredColumn(SchemaColumn.from_row(r[:8]), float(r[8])) for r in rows]


def all_columns(con: Connection, db: str) -> list[SchemaColumn]:
    """Every column of ``db`` in table and ordinal order.

    Args:
        con: connection from :func:`dbrouter.connect`.
        db: the database.

    Returns:
        The columns.
    """
    rows = con.execute(f"select {_COLUMN_FIELDS} from kb_columns where db_id = ? "
                       "order by table_name, ordinal_position, column_name", [db]).fetchall()
    return [SchemaColumn.from_row(r) for r in rows]


def table_names(con: Connection, db: str) -> list[str]:
    """Every table of ``db``, sorted.

    Args:
        con: connection from :func:`dbrouter.connect`.
        db: the database.

    Returns:
        Table names.
    """
    return [r[0] for r in con.execute("select table_name from kb_tables where db_id = ? order by table_name",
                                      [db]).fetchall()]


def _clean_name(raw: str) -> str:
    return raw.strip().strip("`\"'[] ").replace('"', "").replace("`", "")


def lookup_columns(con: Connection, db: str, names: Iterable[str]) -> tuple[list[SchemaColumn], list[str]]:
    """Resolve ``table.column`` names (case-insensitive; quotes, backticks and a leading
    ``db.`` tolerated).

    Args:
        con: connection from :func:`dbrouter.connect`.
        db: the database.
        names: the names to resolve.

    Returns:
        (found columns in the order asked, without duplicates; names that match no column).
    """
    by_name = {c.name.lower(): c for c in all_columns(con, db)}
    found: list[SchemaColumn] = []
    unknown: list[str] = []
    for raw in names:
        name = _clean_name(str(raw))
        parts = [p.strip().strip("`\"'[]") for p in name.split(".")]
        if len(parts) == 3 and parts[0].lower() == db.lower():
            parts = parts[1:]
        col = by_name.get(".".join(parts).lower()) if len(parts) == 2 else None
        if col is None:
            if name:
                unknown.append(name)
        elif col not in found:
            found.append(col)
    return found, unknown


def join_edges(con: Connection, db: str, tables: Iterable[str] | None = None) -> list[tuple[str, str, str, str, bool]]:
    """Join edges of ``db`` (declared foreign keys and implied ones), one per unordered pair.

    Args:
        con: connection from :func:`dbrouter.connect`.
        db: the database.
        tables: keep only edges whose both ends are in these tables (None = all).

    Returns:
        (from_table, from_column, to_table, to_column, is_declared) tuples.
    """
    rows = con.execute("select from_table, from_column, to_table, to_column, is_declared from kb_join_edges "
                       "where db_id = ? order by from_table, from_column, to_table, to_column", [db]).fetchall()
    keep = {t.lower() for t in tables} if tables is not None else None
    seen, out = set(), []
    for ft, fc, tt, tc, declared in rows:
        key = tuple(sorted([(ft.lower(), fc.lower()), (tt.lower(), tc.lower())]))
        if key in seen or (keep is not None and (ft.lower() not in keep or tt.lower() not in keep)):
            continue
        seen.add(key)
        out.append((ft, fc, tt, tc, bool(declared)))
    return out


def _render_column(c: SchemaColumn, max_samples: int, max_chars: int) -> str:
    parts = [f"{c.column}: {c.data_type or 'unknown'}"]
    if c.primary_key:
        parts.append("primary key")
    if c.references:
        parts.append(f"references {c.references}")
    if c.samples:
        vals = [s if len(s) <= max_chars else s[:max_chars] + "..." for s in c.samples[:max_samples]]
        parts.append("examples: [" + ", ".join(vals) + "]")
    if c.description:
        parts.append(c.description if len(c.description) <= 200 else c.description[:200] + "...")
    return "(" + ", ".join(parts) + ")"


def render_schema(con: Connection, db: str, columns: Iterable[SchemaColumn], max_samples: int = 3,
                  max_value_chars: int = 40) -> str:
    """M-Schema-like text of ``columns`` grouped by table, with the join edges between those tables.

    Args:
        con: connection from :func:`dbrouter.connect`.
        db: the database.
        columns: the columns to show (order within a table follows the given order).
        max_samples: sample values per column.
        max_value_chars: longer sample values are cut.

    Returns:
        Text such as ``[DB_ID] concert_singer`` / ``# Table: singer`` / ``(Name: text, examples: [...])``
        / ``[Foreign keys]`` / ``concert.Stadium_ID = stadium.Stadium_ID``.
    """
    by_table: dict[str, list[SchemaColumn]] = {}
    for c in columns:
        if c not in by_table.setdefault(c.table, []):
            by_table[c.table].append(c)
    lines = [f"[DB_ID] {db}"]
    for table, cols in by_table.items():
        lines.append(f"# Table: {table}")
        lines.extend(_render_column(c, max_samples, max_value_chars) for c in cols)
    edges = join_edges(con, db, by_table)
    if edges:
        lines.append("[Foreign keys]")
        lines.extend(f"{ft}.{fc} = {tt}.{tc}" + ("" if declared else " (implied by names and types)")
                     for ft, fc, tt, tc, declared in edges)
    return "\n".join(lines)
