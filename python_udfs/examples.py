"""Rule-based descriptors of question/SQL examples (the non-LLM path).

* normalised question: values from the SQL and constants replaced by generic terms, time
  conditions generalised ("in 2023" -> "for some time range"), display words removed
  ("Show sales data" -> "sales data"), identifiers (snake_case names) dropped, lower case;
* main clause: the normalised question cut before its first modifier (filters, grouping,
  ordering): "number of active users by country" -> "number of active users";
* requested entities: the SELECT list read from the SQL ("count of singer", "name of stadium");
* tables and columns used: :func:`python_udfs.sql_usage.sql_usage` (aliases resolved per scope).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field

from python_udfs.text import DATE_PLACEHOLDER, canonicalize

DISPLAY = re.compile(
    r"^(?:please\s+)?(?:(?:can|could|would)\s+you\s+)?(?:show(?:\s+me)?|display|list(?:\s+all)?|give(?:\s+me)?|"
    r"get|find(?:\s+out)?|return|tell\s+me|provide|retrieve|fetch|report|generate(?:\s+a\s+chart\s+of)?|"
    r"what\s+(?:is|are|was|were)|which\s+(?:is|are)|who\s+(?:is|are))\s+", re.IGNORECASE)
TIME_CONDITION = re.compile(
    rf"\b(?:in|during|since|before|after|from|until|by|on|between)\s+(?:the\s+(?:year|month|date)\s+)?"
    rf"(?:{re.escape(DATE_PLACEHOLDER)}|year\s+100|100)(?:\s+(?:and|to)\s+(?:{re.escape(DATE_PLACEHOLDER)}|100))?",
    re.IGNORECASE)
MODIFIER = re.compile(
    r"\s(?:by|in|over|during|from|where|whose|who|that|which|with|without|sorted|ordered|order|since|"
    r"before|after|between|whose|having|than|when|if|at|on|under|above|below)\s|,", re.IGNORECASE)


@dataclass
class ExampleDescriptors:
    normalized_question: str
    main_clause: str
    requested_entities: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    sql_parsed: bool = True

    def to_json(self) -> str:
        return json.dumps(asdict(self))


def _literals(sql: str | None) -> list[str]:
    return [m for m in re.findall(r"'([^']{1,80})'|\"([^\"]{1,80})\"", sql or "") for m in m if m]


def normalize_question(question: str | None, sql: str | None = None) -> str | None:
    """Normalised form of a question (see module doc).

    Args:
        question: the question.
        sql: its SQL when known (its string literals mark the values to abstract).

    Returns:
        The normalised question, or None for an empty question.
    """
    if not question or not question.strip():
        return None
    q = question.strip()
    # longest literal first, ties by text (a set's order would vary with the hash seed);
    # whole words only, through a placeholder that later literals cannot match
    for lit in sorted(set(_literals(sql)), key=lambda v: (-len(v), v)):
        if re.search(r"\w", lit):
            q = re.sub(rf"(?<!\w){re.escape(lit)}(?!\w)", "\x00", q, flags=re.IGNORECASE)
    q = q.replace("\x00", "some value")
    q = re.sub(r"[\"“”‘’']([^\"“”‘’']{1,80})[\"“”‘’']", "some value", q)
    q = canonicalize(q) or ""
    q = TIME_CONDITION.sub("for some time range", q)
    q = q.replace(DATE_PLACEHOLDER, "some time").replace(" 100 ", " some number ")
    q = re.sub(r"\b100\b", "some number", q)
    q = re.sub(r"\b[a-z]+_[a-z_0-9]+\b", "", q, flags=re.IGNORECASE)  # snake_case identifiers
    q = re.sub(r"[?!.;:]+$", "", q.strip())
    prev = None
    while prev != q:
        prev = q
        q = DISPLAY.sub("", q).strip()
    q = re.sub(r"^(?:the|a|an|all|me)\s+", "", q, flags=re.IGNORECASE)
    return " ".join(q.lower().split()) or question.strip().lower()


def main_clause(normalized: str | None) -> str | None:
    """The primary data request: the normalised question cut before its first modifier."""
    if not normalized:
        return None
    text = f" {normalized} "
    m = MODIFIER.search(text, 1)
    head = text[:m.start()] if m and m.start() > 1 else text
    return " ".join(head.split()) or normalized


def _label(name: str) -> str:
    return re.sub(r"[_\s]+", " ", re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)).strip().lower()


def parse_sql(sql: str | None, schema: dict[str, list[str]] | None = None
              ) -> tuple[list[str], list[str], list[str], bool]:
    """Tables, columns and SELECT-list entities of a SQL query.

    Args:
        sql: the query (SQLite dialect, as in the benchmarks).
        schema: table -> column names, to place unqualified columns (optional).

    Returns:
        (tables, table.column list, requested entities, parsed?)
    """
    from sqlglot import exp  # sqlglot loads in 0.2 s: not on the path of a process that only routes

    from python_udfs.sql_usage import sql_usage

    usage = sql_usage(sql, schema)
    tree = usage.tree
    if usage.error or tree is None:
        return [], [], [], False
    alias = {(t.alias or t.name).lower(): t.name for t in tree.find_all(exp.Table) if t.name}
    tables, columns = usage.tables, usage.columns
    entities: list[str] = []
    select = tree if isinstance(tree, exp.Select) else tree.find(exp.Select)
    for e in (select.expressions if select else []):
        inner = e.this if isinstance(e, exp.Alias) else e
        agg = inner.key if isinstance(inner, exp.AggFunc) else ""
        col = inner.find(exp.Column)
        star = inner.find(exp.Star)
        owner = alias.get(col.table.lower(), tables[0] if tables else "") if col is not None and col.table else (tables[0] if tables else "")
        what = _label(col.name) if col is not None else ("rows" if star is not None else _label(inner.sql()))
        text = f"{ {'avg': 'average', 'count': 'count', 'sum': 'total', 'max': 'maximum', 'min': 'minimum'}.get(agg, agg)} {what}".strip()
        entities.append(f"{text} of {_label(owner)}" if owner else text)
    return tables, columns, list(dict.fromkeys(entities)), True


def describe_example(question: str | None, sql: str | None, schema: dict[str, list[str]] | None = None
                     ) -> ExampleDescriptors:
    """All rule-based descriptors of one example.

    Args:
        question: the example question.
        sql: its SQL.
        schema: table -> columns of its database (optional).

    Returns:
        The :class:`ExampleDescriptors`.
    """
    normalized = normalize_question(question, sql) or ""
    tables, columns, entities, ok = parse_sql(sql, schema)
    return ExampleDescriptors(normalized, main_clause(normalized) or "", entities, tables, columns, ok)
