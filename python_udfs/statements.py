"""Rule-based structuring of domain statements into ``'<text>' refers to <SQL snippet>``.

Handles the common shapes ``X refers to Y`` (also "refer to", "stands for", "indicates"),
``X means Y`` (either side may be the SQL), ``X = Y`` and ``<literal> is <column phrase>``.
Every snippet is checked against the database's schema: its column references must exist
(``table.column`` or a column name unique enough to resolve); unknown ones are flagged.
Statements that fit no shape are marked ``unstructured``; nothing is dropped.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from functools import lru_cache

from python_udfs.text import canonicalize, words

SQL_WORDS = {
    "select", "from", "where", "and", "or", "not", "null", "is", "in", "like", "between", "count", "sum",
    "avg", "max", "min", "divide", "cast", "as", "real", "integer", "int", "text", "date", "order", "by",
    "desc", "asc", "limit", "group", "having", "distinct", "case", "when", "then", "else", "end", "join",
    "on", "substr", "strftime", "iif", "round", "abs", "subtract", "multiply", "add", "length", "year",
    "datetime", "julianday", "instr", "lower", "upper", "true", "false", "all", "any", "exists", "float",
    "coalesce", "ifnull", "total", "percent", "percentage", "if", "sqrt", "power", "mod", "left", "right",
}
STOP = {"the", "a", "an", "of", "in", "for", "to", "is", "are", "its", "their", "that",
        "which", "with", "on", "by", "as", "be", "this", "those", "these"}
_REFERS = re.compile(r"\s+(?:refers?|referring)\s+to\s+|\s+stands?\s+for\s+|\s+indicates?\s+|\s+refer\s+as\s+",
                     re.IGNORECASE)
_MEANS = re.compile(r"\s+means?\s+|\s+represents?\s+", re.IGNORECASE)
_EQUALS = re.compile(r"\s*(?<![<>!=])=(?!=)\s*")
_IS = re.compile(r"\s+(?:is|are)\s+(?:also\s+)?", re.IGNORECASE)
_QUOTED = re.compile(r"""^\s*(["'‘’“”`])(.+?)(["'‘’“”`])\s*$""")
_IDENT = re.compile(r"`[^`]+`|\[[^\]]+\]|\"[^\"]+\"|[A-Za-z_][\w]*(?:\.(?:`[^`]+`|[A-Za-z_]\w*))?")


@dataclass
class Schema:
    """Columns of one database: (table, column, label) triples."""

    columns: list[tuple[str, str, str]]

    @property
    def by_column(self) -> dict[str, list[tuple[str, str]]]:
        out: dict[str, list[tuple[str, str]]] = {}
        for t, c, _ in self.columns:
            out.setdefault(c.lower(), []).append((t, c))
        return out

    @property
    def tables(self) -> dict[str, str]:
        return {t.lower(): t for t, _, _ in self.columns}


@lru_cache(maxsize=256)
def schema_from_json(text: str) -> Schema:
    """Schema from ``[[table, column, label], ...]`` JSON (what the dbt model passes)."""
    rows = json.loads(text or "[]")
    return Schema([(str(r[0]), str(r[1]), str(r[2] if len(r) > 2 and r[2] else r[1])) for r in rows])


MAX_STATEMENT_CHARS = 2000
"""Longer texts are kept verbatim but not structured (a domain statement is one sentence)."""


@dataclass
class Structured:
    """The structured form of one statement (the original is kept elsewhere, untouched)."""

    expression: str | None = None
    snippet: str | None = None
    shape: str = "none"
    status: str = "unstructured"
    references: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def canonical_expression(self) -> str | None:
        return canonicalize(self.expression)

    def to_json(self) -> str:
        d = asdict(self)
        d["canonical_expression"] = self.canonical_expression
        d["expression_words"] = len(words(self.canonical_expression)) if self.expression else None
        return json.dumps(d)


def _unquote(text: str) -> str:
    text = text.strip().rstrip(".;,").strip()
    m = _QUOTED.match(text)
    return m.group(2).strip() if m else text


def looks_like_sql(text: str, schema: Schema) -> bool:
    """True when ``text`` reads as SQL: operators, function calls, quotes or schema identifiers."""
    if re.search(r"[=<>()]|\bis\s+(?:not\s+)?null\b|\blike\b|\bbetween\b", text, re.IGNORECASE):
        return True
    cols = schema.by_column
    toks = re.findall(r"[A-Za-z_][\w.]*", text)
    return bool(toks) and all(t.lower() in cols or "." in t or "_" in t for t in toks)


def _strip_ident(tok: str) -> str:
    return tok.strip("`[]\"")


def resolve_references(snippet: str, schema: Schema) -> tuple[list[str], list[str]]:
    """Column references of ``snippet`` resolved against ``schema``.

    Args:
        snippet: SQL snippet (need not parse as a whole).
        schema: the database's columns.

    Returns:
        (resolved ``table.column`` list, problems for unknown tables/columns)
    """
    cols, tables = schema.by_column, schema.tables
    resolved: list[str] = []
    problems: list[str] = []
    body = re.sub(r"'[^']*'", "''", snippet)  # string literals are values, not identifiers
    for m in _IDENT.finditer(body):
        tok = m.group(0)
        after = body[m.end():m.end() + 1]
        if after == "(":  # a function name
            continue
        if "." in tok and not tok.startswith(("`", "[", '"')):
            table, column = (_strip_ident(p) for p in tok.split(".", 1))
            if re.fullmatch(r"T\d+", table, re.IGNORECASE):  # alias like T1.col
                table = ""
            hits = [(t, c) for t, c in cols.get(column.lower(), []) if not table or t.lower() == table.lower()]
            if hits:
                resolved.append(f"{hits[0][0]}.{hits[0][1]}")
            elif table and table.lower() not in tables:
                problems.append(f"unknown table {table!r}")
            else:
                problems.append(f"unknown column {tok!r}")
            continue
        name = _strip_ident(tok)
        if name.lower() in cols:  # a real column wins over a same-named SQL word (Date, year)
            t, c = cols[name.lower()][0]
            resolved.append(f"{t}.{c}")
        elif name.lower() in SQL_WORDS or name.isdigit() or name.lower() in tables:
            continue
        elif tok.startswith(("`", "[", '"')) or "_" in name or re.search(r"[a-z][A-Z]", name):
            problems.append(f"unknown column {name!r}")
    # multi-word column names such as "Customer Names" (BIRD has them)
    for t, c, _ in schema.columns:
        if " " in c and c.lower() in snippet.lower():
            resolved.append(f"{t}.{c}")
    return list(dict.fromkeys(resolved)), list(dict.fromkeys(problems))


def _label_words(text: str) -> set[str]:
    """Lower-case words of a phrase or identifier (``ProductName``/``city_name`` split up)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text).replace("_", " ")
    return {w.lower() for w in words(spaced)}


def _column_for_phrase(phrase: str, schema: Schema) -> tuple[str, str] | None:
    """Best column for a natural phrase ("the name of state") by word overlap with labels."""
    want = _label_words(phrase) - STOP or _label_words(phrase)
    best, best_score = None, 0.0
    for t, c, label in schema.columns:
        have = _label_words(label) | _label_words(c)
        tab = _label_words(t)
        score = len(want & have) + 0.5 * len(want & tab) - 0.01 * len(have - want)
        if score > best_score:
            best, best_score = (t, c), score
    return best if best_score >= 1 else None


def _finish(expr: str, snippet: str, shape: str, schema: Schema) -> Structured:
    expr, snippet = _unquote(expr), snippet.strip().rstrip(";").strip()
    if not expr or not snippet:
        return Structured(shape=shape, problems=["empty text or snippet"])
    refs, problems = resolve_references(snippet, schema)
    if not refs and not problems:
        problems = ["snippet names no column of this database"]
    status = "structured" if refs and not problems else "invalid_reference"
    return Structured(expr, snippet, shape, status, refs, problems)


def structure_statement(text: str | None, schema: Schema) -> Structured:
    """Structure one statement with the rules (no LLM).

    Args:
        text: the statement as written.
        schema: its database's columns.

    Returns:
        The :class:`Structured` form; ``status`` says whether it is usable.
    """
    if not text or not text.strip():
        return Structured(problems=["empty statement"])
    if len(text) > MAX_STATEMENT_CHARS:  # a pasted document, not a statement: no 98 kB "snippet"
        return Structured(problems=[f"statement has {len(text):,} characters (more than {MAX_STATEMENT_CHARS:,}): "
                                    "not structured; split it into single statements"])
    text = " ".join(text.split())
    parts = _REFERS.split(text, maxsplit=1)
    if len(parts) == 2:
        left, right = parts
        if looks_like_sql(left, schema) and not looks_like_sql(right, schema):  # "pos = 'RW' refers to right winger"
            return _finish(right, left, "refers_to", schema)
        return _finish(left, right, "refers_to", schema)
    parts = _MEANS.split(text, maxsplit=1)
    if len(parts) == 2:
        left, right = parts
        if looks_like_sql(left, schema) and not looks_like_sql(right, schema):
            return _finish(right, left, "means", schema)
        return _finish(left, right, "means", schema)
    parts = _EQUALS.split(text, maxsplit=1)
    if len(parts) == 2 and not looks_like_sql(parts[0], schema):
        return _finish(parts[0], parts[1], "equals", schema)
    parts = _IS.split(text, maxsplit=1)
    if len(parts) == 2:
        left, right = parts
        if _QUOTED.match(left):  # 'Montana' is the name of state -> state.name = 'Montana'
            hit = _column_for_phrase(right, schema)
            value = _unquote(left).replace("'", "''")
            if hit:
                return _finish(left, f"{hit[0]}.{hit[1]} = '{value}'", "is", schema)
            return Structured(_unquote(left), None, "is", "unstructured",
                              problems=[f"no column matches {right!r}"])
        if looks_like_sql(left, schema):
            return _finish(right, left, "is", schema)
    if len(parts) == 2 and looks_like_sql(parts[1], schema):
        return _finish(parts[0], parts[1], "equals", schema)
    return Structured(problems=["no known shape (X refers to Y, X means Y, X = Y, 'v' is <column>)"])
