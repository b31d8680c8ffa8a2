"""What a statement sent to `dbrouter serve` may name, read from DuckDB's own parse of it.

The sqlglot guard (:func:`dbrouter.query.guard.check_read_only`) refuses writes and names the
reason; this module is the allow-list behind it, and it reads the statement the way the engine
that runs it does: ``json_serialize_sql`` gives DuckDB's parse tree (only a SELECT serialises),
and every relation, table function and function in it is checked against what the endpoint
serves (:class:`Allowed`, read from the warehouse's own catalog once per opening). So a
spelling sqlglot reads differently from DuckDB cannot slip past, and nothing is judged by a
deny-list of names:

- **everyone**: table functions are the KB's routing and retrieval entry points, the session's
  catalog macros and a few row generators (``unnest``, ``range``, ...); ``query``,
  ``json_execute_serialized_sql``, ``pragma_*`` and ``duckdb_*`` (SQL in a string, storage and
  metadata) are not on it. Functions are DuckDB's built-ins and the KB's macros, less the internal
  UDFs; ``embed()``/``embed_phrase()`` take constants and parameters only (embedding a table
  is a build's work, and it held every other session's routing up).
- **a restricted session** (``serve --access``) may read one relation, ``kb_allowed_databases``,
  call the entry points (which filter on its databases) and DuckDB's built-in functions, and
  write no ``WITH``: no name can be shadowed, so the one relation is the view itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from dbrouter.errors import StatementRefused
from dbrouter.serve.pgtypes import TYPES, type_oid

ROW_GENERATORS = frozenset({"unnest", "range", "generate_series", "generate_subscripts", "json_each", "json_tree",
                            "repeat", "regexp_split_to_table"})
"""Built-in table functions any session may call: they make rows from their arguments, read nothing."""

SPECIAL_FORMS = frozenset({"unnest", "unlist", "row", "grouping", "grouping_id", "columns", "try", "count_star",
                           "unpack", "struct_pack"})
"""Built-in forms DuckDB's parser writes as function calls that are not in ``duckdb_functions()``."""

RESTRICTED_RELATIONS = frozenset({"kb_allowed_databases"})
"""The one relation a restricted session may read: its own databases."""

CONSTANT_ARGUMENT_UDFS = frozenset({"embed", "embed_phrase"})
"""UDFs a client may call on constants and parameters only, not on a table's rows."""

MAX_UDF_CALLS = 32
"""Calls of routing entry points and embedding UDFs written in one statement (each is one question's work)."""

_RESTRICTED_REF_TYPES = frozenset({"BASE_TABLE", "TABLE_FUNCTION", "SUBQUERY", "JOIN", "EMPTY", "EXPRESSION_LIST"})


@dataclass(frozen=True)
class Allowed:
    """What the endpoint serves, from one opening's catalog.

    Attributes:
        functions: scalar, aggregate and window functions and macros any session may call.
        table_functions: table functions and table macros any session may call.
        entry_points: the KB's routing and retrieval functions (each path's name too).
        builtin: DuckDB's own functions (a restricted session's functions are these and the entry points).
        catalog: the warehouse's catalog name (a relation may be qualified with it).
    """

    functions: frozenset[str]
    table_functions: frozenset[str]
    entry_points: frozenset[str]
    builtin: frozenset[str]
    catalog: str = ""


@dataclass(frozen=True)
class Calls:
    """The routing and retrieval calls of a statement, as DuckDB parsed it (what the query log records).

    Attributes:
        entry_points: the entry points called, in the order written.
        question: the first call's question when it is a string constant, else None.
        parameter: the first call's question when it is a parameter (``$2`` -> 1, ``?`` -> 0), else None.
        plain: the result is the entry point's own rows and columns (one call in FROM, or one scalar
            call, its columns selected as they are): a ranking read from it is dbrouter's, not the client's.
        column_names: the result's column names as Postgres gives them (:func:`pg_column_names`), or
            None where DuckDB's stand (a ``*`` in the select list).
        names: every function, table function and relation the statement names (lower case).
    """

    entry_points: tuple[str, ...] = ()
    question: str | None = None
    parameter: int | None = None
    plain: bool = False
    column_names: tuple[str, ...] | None = None
    names: frozenset[str] = frozenset()


@dataclass
class _Seen:
    relations: list[tuple[str, str, str]] = field(default_factory=list)
    table_functions: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)
    ctes: list[str] = field(default_factory=list)
    ref_types: set[str] = field(default_factory=set)
    column_udf_calls: list[str] = field(default_factory=list)
    udf_calls: int = 0
    entry_calls: list[dict] = field(default_factory=list)  # the entry points' FUNCTION nodes

    @property
    def first_call(self) -> dict | None:
        """The entry point call written first (the walk's order is not the text's)."""
        return min(self.entry_calls, key=lambda c: int(c.get("query_location") or 0), default=None)


def allowed_of(cur, internal_udfs: frozenset[str]) -> Allowed:
    """Read what the endpoint serves from a session cursor (its temporary catalog macros included).

    Args:
        cur: a cursor on the warehouse with the route-path macros and the session's catalog objects.
        internal_udfs: the Python UDFs no client calls directly.

    Returns:
        The :class:`Allowed` of this opening.
    """
    rows = cur.execute("select function_name, function_type, internal from duckdb_functions()").fetchall()
    scalar_types = ("scalar", "aggregate", "window", "macro")
    functions = ({n.lower() for n, t, _ in rows if t in scalar_types} | SPECIAL_FORMS) - set(internal_udfs)
    builtin = {n.lower() for n, t, internal in rows if t in scalar_types and internal} | SPECIAL_FORMS
    table = {n.lower() for n, t, internal in rows if t == "table_macro" and not internal}
    table |= {n.lower() for n, t, _ in rows if t == "table" and n.lower() in ROW_GENERATORS}
    try:
        names = [r[0] for r in cur.execute("select function_name from main.kb_sql_functions").fetchall()]
    except Exception:  # noqa: BLE001 - a KB built before kb_sql_functions: its entry points by prefix
        names = sorted({n for n, *_ in rows if n.startswith(("route_", "retrieve_")) and not n.endswith(("_udf", "_sql"))})
    entry = {f"{n}{suffix}".lower() for n in names for suffix in ("", "_udf", "_sql")}
    catalog = cur.execute("select current_database()").fetchall()[0][0] or ""
    return Allowed(frozenset(functions), frozenset(table), frozenset(entry & (functions | table)),
                   frozenset(builtin), catalog)


def parse_tree(cur, sql: str) -> dict:
    """DuckDB's parse of ``sql`` as JSON (``json_serialize_sql``).

    Raises:
        StatementRefused: DuckDB cannot serialise it: not one SELECT, or not valid SQL (25006).
    """
    text = cur.execute("select json_serialize_sql(?)", [sql]).fetchall()[0][0]
    tree = json.loads(text)
    if tree.get("error"):
        message = " ".join(str(tree.get("error_message", "")).split())
        raise StatementRefused(f"dbrouter serves the knowledge base read-only: DuckDB does not read this as one "
                               f"SELECT ({message})", "25006")
    statements = tree.get("statements") or []
    if len(statements) != 1:
        raise StatementRefused(f"dbrouter serves the knowledge base read-only: DuckDB reads this as "
                               f"{len(statements)} statements; send one SELECT", "25006")
    return statements[0]


def check_statement(cur, sql: str, allowed: Allowed, restricted: bool) -> Calls:
    """Refuse ``sql`` unless everything it names is on the endpoint's allow-list for this session.

    Args:
        cur: the session's cursor (only parses; nothing runs).
        sql: the statement as it will run.
        allowed: what the endpoint serves (:func:`allowed_of`).
        restricted: the session is scoped to some databases (``serve --access``).

    Returns:
        The routing and retrieval calls, as DuckDB parsed them (:class:`Calls`: what the query log
        records; a name in a comment or a string is not a call).

    Raises:
        StatementRefused: what it names is not served (the message names it and what to call instead).
    """
    seen = _Seen()
    tree = parse_tree(cur, sql)
    _walk(tree, seen, allowed)
    for name in seen.table_functions:
        if name not in allowed.table_functions:
            raise StatementRefused(f"table function {name}() is not served: call the routing and retrieval functions "
                                   "(route_query_ranked, retrieve_columns, ...) or read the knowledge base's tables",
                                   "42501")
    for name in seen.functions:
        if name not in allowed.functions:
            raise StatementRefused(f"function {name}() is not served by dbrouter (it is internal to the routing "
                                   "macros, or unknown): call route_query & co.", "42501")
    if seen.column_udf_calls:
        raise StatementRefused(f"{seen.column_udf_calls[0]}() takes constants or parameters here, not a table's "
                               "columns: embedding a table is a build's work (dbrouter build)", "54000")
    if seen.udf_calls > MAX_UDF_CALLS:
        raise StatementRefused(f"the statement calls the routing or embedding functions {seen.udf_calls} times; at "
                               f"most {MAX_UDF_CALLS} per statement (route a table of questions with one lateral "
                               "route_query_ranked)", "54000")
    if restricted:
        _check_restricted(seen, allowed)
    return _calls(tree, seen, allowed)


def _calls(tree: dict, seen: _Seen, allowed: Allowed) -> Calls:
    """What :func:`check_statement` returns: the entry points, the first call's question, whether
    the result is the call's own (a single SELECT over one call, columns selected as they are)."""
    names = tuple(n for n in seen.functions + seen.table_functions if n in allowed.entry_points)
    columns = pg_column_names(tree)
    named = frozenset(seen.functions) | frozenset(seen.table_functions) | {r[2].lower() for r in seen.relations}
    if not names or seen.first_call is None:
        return Calls(names, column_names=columns, names=named)
    arguments = seen.first_call.get("arguments") or []
    first = (arguments[0] or {}).get("expression", arguments[0]) if arguments else {}
    question = parameter = None
    if first.get("class") == "CONSTANT" and (first.get("value") or {}).get("type", {}).get("id") == "VARCHAR":
        question = (first.get("value") or {}).get("value")
    elif first.get("class") == "CONSTANT" and (first.get("literal") or {}).get("kind") == "STRING":
        question = first["literal"].get("text")
    elif first.get("class") == "PARAMETER":
        identifier = str(first.get("identifier") or "")
        parameter = int(identifier) - 1 if identifier.isdigit() else 0
    node = tree.get("node") or {}
    plain = (len(names) == 1 and node.get("type") == "SELECT_NODE" and not (node.get("cte_map") or {}).get("map")
             and not node.get("group_expressions") and _own_columns(node, seen.first_call))
    return Calls(names, question if isinstance(question, str) else None, parameter, bool(plain), columns, named)


_PG_FUNCTION_NAMES = {"count_star": "count"}
"""DuckDB's names of functions Postgres names otherwise (``count(*)`` parses as ``count_star``)."""

_PG_OPERATOR_NAMES = {"OPERATOR_COALESCE": "coalesce", "OPERATOR_NULLIF": "nullif"}


def pg_column_names(tree: dict) -> tuple[str, ...] | None:
    """The names Postgres gives a SELECT's result columns (its ``FigureColname``): an alias; a
    column's own name; a function's name (``count(*)`` -> ``count``, ``route_query($1)`` ->
    ``route_query``); ``case``, ``exists``, a cast's type; else ``?column?``. DuckDB names an
    unaliased expression by its text (``count_star()``), which BI tools show as the column's title.

    Args:
        tree: one statement of DuckDB's parse (:func:`parse_tree`).

    Returns:
        A name per select-list item, or None when the list has a ``*`` (then DuckDB's names stand).
    """
    node = tree.get("node") or {}
    while node.get("type") == "SET_OPERATION_NODE":  # a UNION is named by its first branch
        node = node.get("left") or {}
    if node.get("type") != "SELECT_NODE":
        return None
    names = []
    for item in node.get("select_list") or []:
        name = item.get("alias") or _figure_name(item)
        if name is None:
            return None
        names.append(name)
    return tuple(names)


def _figure_name(item: dict) -> str | None:
    cls = item.get("class")
    if cls == "STAR":
        return None
    if cls == "COLUMN_REF":
        return str((item.get("column_names") or ["?column?"])[-1])
    if cls in ("FUNCTION", "WINDOW"):
        name = str(item.get("function_name") or "")
        if item.get("is_operator") or not name.replace("_", "a").isalnum():
            return "?column?"
        return _PG_FUNCTION_NAMES.get(name, name)
    if cls == "CAST":
        inner = _figure_name(item.get("child") or {})
        if inner not in (None, "?column?"):
            return inner
        oid = type_oid(str((item.get("type_expr") or {}).get("type_name") or ""))
        return TYPES[oid].name if oid in TYPES else "?column?"
    if cls == "CASE":
        return "case"
    if cls == "SUBQUERY":
        if item.get("subquery_type") == "EXISTS":
            return "exists"
        if item.get("subquery_type") == "SCALAR":
            inner = pg_column_names(item.get("subquery") or {})
            return inner[0] if inner else "?column?"
        return "?column?"
    if cls == "OPERATOR":
        return _PG_OPERATOR_NAMES.get(str(item.get("type")), "?column?")
    return "?column?"


def _own_columns(node: dict, call: dict) -> bool:
    """The select list is the call itself (a scalar entry point) or its columns unrenamed (a table one)."""
    items = node.get("select_list") or []
    source = node.get("from_table") or {}
    if source.get("type") == "TABLE_FUNCTION" and source.get("function") is call:
        for item in items:
            if item.get("class") == "STAR" and not item.get("expr"):
                continue
            names = item.get("column_names") or []
            if item.get("class") != "COLUMN_REF" or (item.get("alias") or names[-1]) != names[-1]:
                return False
        return True
    return source.get("type") == "EMPTY" and len(items) == 1 and items[0] is call


def _check_restricted(seen: _Seen, allowed: Allowed) -> None:
    hint = ("under the access policy this user calls the routing and retrieval functions (route_query, "
            "route_query_ranked, retrieve_examples, ...), which see only the user's databases")
    if seen.ctes:
        raise StatementRefused(f"WITH is not served to a restricted user ({seen.ctes[0]}): {hint}", "42501")
    for kind in sorted(seen.ref_types - _RESTRICTED_REF_TYPES):
        raise StatementRefused(f"{kind.replace('_', ' ').lower()} is not served to a restricted user: {hint}", "42501")
    for catalog, schema, table in seen.relations:
        if table.lower() in RESTRICTED_RELATIONS and catalog in ("", allowed.catalog) and schema in ("", "main"):
            continue
        name = ".".join(p for p in (catalog, schema, table) if p)
        raise StatementRefused(f"permission denied for relation {name}: {hint}", "42501")
    for name in seen.table_functions:
        if name not in allowed.entry_points and name not in ROW_GENERATORS:
            raise StatementRefused(f"permission denied for function {name}(): {hint}", "42501")
    for name in seen.functions:
        if name not in allowed.entry_points and name not in allowed.builtin and name not in CONSTANT_ARGUMENT_UDFS:
            raise StatementRefused(f"permission denied for function {name}(): {hint}", "42501")


def _walk(node, seen: _Seen, allowed: Allowed) -> None:
    """Collect what a DuckDB parse tree names (iteratively: a deep tree cannot exhaust the stack)."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
            continue
        if not isinstance(item, dict):
            continue
        ctes = (item.get("cte_map") or {}).get("map") if isinstance(item.get("cte_map"), dict) else None
        if ctes:
            seen.ctes.extend(str(c.get("key")) for c in ctes)
        kind, cls = item.get("type"), item.get("class")
        if cls is None and isinstance(kind, str) and not kind.endswith("_NODE") and "alias" in item:
            seen.ref_types.add(kind)  # a table reference
            if kind == "BASE_TABLE":
                seen.relations.append((str(item.get("catalog_name") or ""), str(item.get("schema_name") or ""),
                                       str(item.get("table_name") or "")))
            elif kind == "TABLE_FUNCTION":
                function = item.get("function") or {}
                name = str(function.get("function_name") or "").lower()
                seen.table_functions.append(name)
                if name in allowed.entry_points:
                    seen.udf_calls += 1
                    seen.entry_calls.append(function)
                stack.append(function.get("arguments") or function.get("children") or [])
                stack.extend(v for k, v in item.items() if k != "function")
                continue
        elif cls in ("FUNCTION", "WINDOW") and not item.get("is_operator"):
            name = str(item.get("function_name") or "").lower()
            if name:
                seen.functions.append(name)
                if name in allowed.entry_points or name in CONSTANT_ARGUMENT_UDFS:
                    seen.udf_calls += 1
                if name in allowed.entry_points:
                    seen.entry_calls.append(item)
                if name in CONSTANT_ARGUMENT_UDFS and not _constant(item.get("arguments") or item.get("children")):
                    seen.column_udf_calls.append(name)
        stack.extend(item.values())


def _constant(arguments) -> bool:
    """True when no column, subquery or star occurs in ``arguments`` (constants and parameters only)."""
    stack = [arguments]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            if item.get("class") in ("COLUMN_REF", "SUBQUERY", "STAR", "POSITIONAL_REFERENCE"):
                return False
            stack.extend(item.values())
    return True
