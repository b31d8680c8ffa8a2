"""The read-only guard: refuse any SQL but one SELECT before it reaches a database.

:func:`check_read_only` parses the SQL with sqlglot and refuses anything but one SELECT
(``WITH ... SELECT``, ``UNION``/``INTERSECT``/``EXCEPT``): no DML/DDL anywhere in the tree (also
data-modifying CTEs), no PRAGMA/ATTACH/COPY/SET/... commands, no function that reads files, the
network or the environment, no DuckDB file-path table references (``FROM 'data.csv'``). It is the
first of three layers (see :mod:`dbrouter.execute.runners` for the other two).
"""

from __future__ import annotations

import logging
import re
from contextlib import contextmanager

from dbrouter.errors import DbrouterError, UnsafeSQL

DIALECTS = {"sqlite": "SQLite", "duckdb": "DuckDB", "snowflake": "Snowflake", "postgres": "PostgreSQL",
            "mysql": "MySQL", "tsql": "SQL Server (T-SQL)", "oracle": "Oracle", "redshift": "Redshift",
            "bigquery": "BigQuery", "trino": "Trino", "clickhouse": "ClickHouse"}
"""The sqlglot dialects SQL is checked, generated and run in, with the names prompts give them."""

_STATEMENT_NAMES = {
    "Insert": "INSERT", "Update": "UPDATE", "Delete": "DELETE", "Merge": "MERGE", "Create": "CREATE",
    "Drop": "DROP", "Alter": "ALTER", "TruncateTable": "TRUNCATE", "Pragma": "PRAGMA", "Attach": "ATTACH",
    "Detach": "DETACH", "Copy": "COPY", "Set": "SET", "Transaction": "BEGIN (transaction)", "Commit": "COMMIT",
    "Rollback": "ROLLBACK", "Use": "USE", "Install": "INSTALL", "Describe": "DESCRIBE", "Show": "SHOW",
    "Analyze": "ANALYZE", "Summarize": "SUMMARIZE", "Kill": "KILL", "Grant": "GRANT", "Revoke": "REVOKE",
    "LoadData": "LOAD DATA", "Refresh": "REFRESH", "Cache": "CACHE", "Uncache": "UNCACHE", "Comment": "COMMENT",
    "Export": "EXPORT", "Into": "SELECT ... INTO (creates a table)", "Command": "COMMAND",
}


# Never allowed anywhere in the tree (a data-modifying CTE, SELECT ... INTO, a nested command).
_FORBIDDEN_NODES = {name for name in _STATEMENT_NAMES if name not in ("Describe", "Show", "Summarize")}


_DENIED_FUNCTIONS = {
    "glob", "sniff_csv", "sqlite_scan", "sqlite_attach", "query", "query_table", "getenv", "load_extension",
    "readfile", "writefile", "edit", "system", "shell", "exec", "sys_exec", "sys_eval", "popen", "fsdir",
    "zipfile", "lines_read", "duckdb_secrets", "which_secret", "json_execute_serialized_sql",
    # PostgreSQL: server files, large objects, other servers, settings, other sessions, SQL in a string
    "set_config", "current_setting", "query_to_xml", "query_to_xml_and_xmlschema", "query_to_xmlschema",
    "cursor_to_xml", "cursor_to_xmlschema", "database_to_xml", "schema_to_xml", "table_to_xml",
    # MySQL/MariaDB: server files, busy loops
    "load_file", "benchmark", "sleep", "get_lock", "release_lock",
}


POSTGRES_FUNCTIONS = frozenset(["abs", "cbrt", "ceil", "ceiling", "degrees", "div", "exp", "factorial", "floor", "gcd", "lcm", "ln", "log", "log10", "mod", "pi", "power", "radians", "round", "scale", "sign", "sqrt", "trunc", "width_bucket", "random", "acos", "asin", "atan", "atan2", "cos", "cot", "sin", "tan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "ascii", "bit_length", "btrim", "char_length", "character_length", "chr", "concat", "concat_ws", "format", "initcap", "left", "length", "lower", "lpad", "ltrim", "md5", "octet_length", "overlay", "position", "quote_ident", "quote_literal", "quote_nullable", "regexp_match", "regexp_matches", "regexp_replace", "regexp_split_to_array", "regexp_split_to_table", "regexp_count", "regexp_instr", "regexp_like", "regexp_substr", "repeat", "replace", "reverse", "right", "rpad", "rtrim", "split_part", "starts_with", "strpos", "substr", "substring", "to_ascii", "to_hex", "translate", "trim", "upper", "encode", "decode", "sha224", "sha256", "sha384", "sha512", "unistr", "normalize", "string_to_array", "array_to_string", "string_agg", "age", "clock_timestamp", "current_date", "current_time", "current_timestamp", "date_bin", "date_part", "date_trunc", "extract", "isfinite", "justify_days", "justify_hours", "justify_interval", "localtime", "localtimestamp", "make_date", "make_interval", "make_time", "make_timestamp", "make_timestamptz", "now", "statement_timestamp", "timeofday", "transaction_timestamp", "to_timestamp", "to_date", "to_char", "to_number", "avg", "bit_and", "bit_or", "bit_xor", "bool_and", "bool_or", "count", "every", "max", "min", "sum", "array_agg", "json_agg", "jsonb_agg", "json_object_agg", "jsonb_object_agg", "corr", "covar_pop", "covar_samp", "regr_avgx", "regr_avgy", "regr_count", "regr_intercept", "regr_r2", "regr_slope", "regr_sxx", "regr_sxy", "regr_syy", "stddev", "stddev_pop", "stddev_samp", "variance", "var_pop", "var_samp", "mode", "percentile_cont", "percentile_disc", "rank", "dense_rank", "percent_rank", "cume_dist", "row_number", "ntile", "lag", "lead", "first_value", "last_value", "nth_value", "any_value", "coalesce", "nullif", "greatest", "least", "array_append", "array_cat", "array_dims", "array_fill", "array_length", "array_lower", "array_ndims", "array_position", "array_positions", "array_prepend", "array_remove", "array_replace", "array_upper", "cardinality", "unnest", "generate_series", "generate_subscripts", "to_json", "to_jsonb", "array_to_json", "row_to_json", "json_build_array", "jsonb_build_array", "json_build_object", "jsonb_build_object", "json_object", "jsonb_object", "json_array_length", "jsonb_array_length", "json_each", "jsonb_each", "json_each_text", "jsonb_each_text", "json_extract_path", "jsonb_extract_path", "json_extract_path_text", "jsonb_extract_path_text", "json_object_keys", "jsonb_object_keys", "json_array_elements", "jsonb_array_elements", "json_array_elements_text", "jsonb_array_elements_text", "json_typeof", "jsonb_typeof", "jsonb_strip_nulls", "json_strip_nulls", "jsonb_set", "jsonb_insert", "jsonb_pretty", "jsonb_path_exists", "jsonb_path_match", "jsonb_path_query", "jsonb_path_query_array", "jsonb_path_query_first", "num_nulls", "num_nonnulls"])
"""The PostgreSQL functions generated SQL may call beyond sqlglot's own typed functions: the built-in
maths, text, date, aggregate, window, array and JSON functions. Anything else (``ts_stat`` and
``ts_rewrite``, which run SQL written in a string; server files; a database's own functions) is
refused, whatever the role's privileges."""

_ALLOW_LISTED_DIALECTS = {"postgres": POSTGRES_FUNCTIONS, "redshift": POSTGRES_FUNCTIONS}


_SQL_IN_A_STRING = {"json_execute_serialized_sql", "query", "query_table", "query_to_xml", "query_to_xml_and_xmlschema",
                    "query_to_xmlschema", "ts_stat", "ts_rewrite"}
"""Functions that run SQL written in a string (the check cannot see that SQL)."""


_DENIED_PREFIXES = ("read_", "parquet_", "iceberg_", "delta_", "postgres_", "mysql_", "fts", "http", "sqlar_",
                    "json_read", "csv_", "s3_", "gcs_", "azure_", "shell", "system_", "pg_read", "pg_ls_",
                    "pg_stat_file", "pg_file", "pg_terminate", "pg_cancel", "pg_reload", "pg_rotate", "pg_promote",
                    "pg_sleep", "pg_advisory", "pg_notify", "pg_logical", "pg_replication", "pg_create",
                    "pg_drop", "pg_switch", "pg_backup", "pg_import", "lo_", "dblink", "xp_", "sp_")


_DENIED_SUFFIXES = ("_scan", "_attach")


_FILE_NAME = re.compile(r"[/\\:]|\.(csv|tsv|txt|parquet|json|jsonl|ndjson|gz|zst|zip|xlsx?|db|sqlite3?|duckdb|"
                        r"arrow|avro|orc|ipc|feather)$", re.IGNORECASE)


_FIRST_WORD = re.compile(r"^(?:\s|--[^\n]*(?:\n|$)|/\*.*?\*/|\()*([A-Za-z_]+)", re.DOTALL)


_NON_QUERY_WORDS = {
    "INSERT", "UPDATE", "DELETE", "MERGE", "CREATE", "DROP", "ALTER", "TRUNCATE", "REPLACE", "UPSERT", "PRAGMA",
    "ATTACH", "DETACH", "COPY", "INSTALL", "LOAD", "EXPORT", "IMPORT", "SET", "RESET", "CALL", "VACUUM",
    "CHECKPOINT", "BEGIN", "COMMIT", "ROLLBACK", "START", "END", "ABORT", "SAVEPOINT", "RELEASE", "EXPLAIN",
    "ANALYZE", "REINDEX", "DESCRIBE", "SHOW", "SUMMARIZE", "USE", "GRANT", "REVOKE", "COMMENT", "PREPARE",
    "EXECUTE", "DEALLOCATE", "FORCE", "UPDATE_EXTENSIONS", "PIVOT", "UNPIVOT",
}


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@contextmanager
def _quiet_sqlglot():
    """Silence sqlglot's "falling back to parsing as a Command" warnings (we report refusals ourselves)."""
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _parse(sql: str, dialect: str) -> list:
    import sqlglot
    from sqlglot import exp

    with _quiet_sqlglot():
        parsed = sqlglot.parse(sql, read=dialect)
    return [s for s in parsed if s is not None and not isinstance(s, exp.Semicolon)]


def _first_word(sql: str) -> str:
    match = _FIRST_WORD.match(sql)
    return match.group(1).upper() if match else ""


def _kind(node) -> str:
    """A statement's name for a refusal reason (``DELETE``, ``PRAGMA``, ``LOAD``...)."""
    from sqlglot import exp

    if isinstance(node, exp.Command):
        return str(node.this).upper()
    return _STATEMENT_NAMES.get(type(node).__name__, type(node).__name__.upper())


def _function_names(node) -> set[str]:
    from sqlglot import exp

    if isinstance(node, exp.Anonymous):
        return {str(node.name).lower()}
    names = {node.sql_name().lower()}
    names.update(n.lower() for n in getattr(type(node), "_sql_names", []) or [])
    return names


def _denied_function(name: str) -> bool:
    return (name in _DENIED_FUNCTIONS or name.startswith(_DENIED_PREFIXES) or name.endswith(_DENIED_SUFFIXES))


def _check_node(node, sql: str, internal: frozenset[str] = frozenset(), functions: frozenset[str] | None = None,
                dialect: str = "") -> None:
    """Raise UnsafeSQL for one forbidden node of the tree (statement, function, file reference);
    with ``functions``, also a function sqlglot does not know that is not among them."""
    from sqlglot import exp

    if functions is not None and isinstance(node, exp.Anonymous) and str(node.name).lower() not in functions:
        raise UnsafeSQL(f"function {str(node.name).lower()}() is not one of the built-in read-only functions "
                        f"{DIALECTS[dialect]} SQL may call here")

    name = type(node).__name__
    if name in _FORBIDDEN_NODES and isinstance(node, getattr(exp, name)):
        raise UnsafeSQL(f"{_kind(node)} inside the query")
    if isinstance(node, exp.Func):
        for fname in _function_names(node):
            if fname in _SQL_IN_A_STRING:
                raise UnsafeSQL(f"function {fname}() runs SQL written in a string, which is not checked")
            if _denied_function(fname):
                raise UnsafeSQL(f"function {fname}() can read or write files, the network or the environment")
            if fname.lower() in internal:
                raise UnsafeSQL(f"function {fname}() is internal to dbrouter's routing macros and not served: "
                                "call route_query and the other routing and retrieval functions")
        parent = node.parent
        if isinstance(parent, exp.Dot) and str(parent.this.name if hasattr(parent.this, "name") else "").lower() \
                .startswith("fts"):
            raise UnsafeSQL(f"full-text-search function {parent.this.name}.{node.name}()")
    if isinstance(node, exp.Table):
        if isinstance(node.this, exp.Func) and str(node.args.get("db") or "").lower().startswith("fts"):
            raise UnsafeSQL(f"full-text-search function {node.args['db']}.{node.this.sql()}")
        ident = node.this
        if isinstance(ident, exp.Identifier):
            start = ident.meta.get("start") if ident.meta else None
            if start is not None and 0 <= start < len(sql) and sql[start] == "'":
                raise UnsafeSQL(f"string-literal table reference '{ident.name}' (DuckDB reads it as a file)")
            if _FILE_NAME.search(ident.name):
                raise UnsafeSQL(f"table reference {ident.name!r} looks like a file or URL (DuckDB would read it)")


def _statement_text(sql: str, dialect: str) -> str:
    """``sql`` up to its last token that is not a semicolon (trailing ``;`` and comments dropped)."""
    import sqlglot

    try:
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)
    except Exception:  # noqa: BLE001 - parse succeeded, so the tokenizer will too; be safe anyway
        return sql.strip().rstrip(";").strip()
    from sqlglot.tokens import TokenType

    while tokens and tokens[-1].token_type == TokenType.SEMICOLON:
        tokens.pop()
    return sql[: tokens[-1].end + 1].strip() if tokens else sql.strip()


def _unparseable_reason(sql: str, dialect: str, exc: Exception) -> str:
    """Why SQL sqlglot cannot parse is refused: a statement keyword or a denied function when one is
    visible (``EXPORT DATABASE``, ``glob(...)`` in SQLite), else ``cannot parse: <sqlglot message>``."""
    import sqlglot
    from sqlglot.tokens import TokenType

    word = _first_word(sql)
    if word in _NON_QUERY_WORDS:
        return f"{word} statement (not a query)"
    try:
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)
    except Exception:  # noqa: BLE001 - the tokenizer failing is reported as the parse error below
        tokens = []
    for tok, nxt in zip(tokens, tokens[1:]):
        if nxt.token_type == TokenType.L_PAREN and _denied_function(tok.text.lower()):
            return f"function {tok.text.lower()}() can read or write files, the network or the environment"
    message = " ".join(_ANSI.sub("", str(exc)).split())
    return f"cannot parse: {message}"


MAX_SQL_CHARS = 200_000
"""The longest statement checked (and so run): ``ask``'s generated SQL and every endpoint query."""


def check_read_only(sql: str, dialect: str, internal: frozenset[str] = frozenset(), source: bool = True) -> str:
    """Return the single read-only statement in ``sql`` or raise :class:`UnsafeSQL`.

    Args:
        sql: SQL text (one statement; a trailing semicolon and trailing comments are fine).
        dialect: a sqlglot dialect name of :data:`DIALECTS` (``sqlite``, ``duckdb``, ``postgres``...).
        internal: lower-case names of functions the caller may not call directly (the endpoint's
            internal UDFs: the KB's macros call them on one question, a client could on a table).
        source: the SQL runs on a source database: in PostgreSQL (and Redshift) SQL only
            sqlglot's typed functions and :data:`POSTGRES_FUNCTIONS` may be called (False for the
            endpoint, which checks functions against the KB's own catalog).

    Returns:
        The statement as given, without the trailing semicolon (and comments after it).

    Raises:
        UnsafeSQL: empty input, unparseable SQL, more than one statement, anything but a query, a
            write/DDL/command anywhere in the tree, a file/network/environment function, or a
            file-path table reference; ``reason`` names what was found.
        DbrouterError: ``dialect`` is not one of :data:`DIALECTS`.
    """
    from sqlglot.errors import SqlglotError

    if dialect not in DIALECTS:
        raise DbrouterError(f"unknown SQL dialect {dialect!r}: use one of {', '.join(DIALECTS)}")
    if not isinstance(sql, str) or not sql.strip():
        raise UnsafeSQL("empty SQL (no statement given)")
    if len(sql) > MAX_SQL_CHARS:  # parsing time grows faster than the text: 1 MB took 86 s
        raise UnsafeSQL(f"the statement is {len(sql):,} characters long; at most {MAX_SQL_CHARS:,} are checked")
    try:
        statements = _parse(sql, dialect)
    except SqlglotError as exc:
        raise UnsafeSQL(_unparseable_reason(sql, dialect, exc)) from None
    except RecursionError:
        raise UnsafeSQL("the statement is nested too deeply to check") from None
    try:
        return _check_statements(statements, sql, dialect, internal, _ALLOW_LISTED_DIALECTS.get(dialect) if source else None)
    except RecursionError:
        raise UnsafeSQL("the statement is nested too deeply to check") from None


def _check_statements(statements: list, sql: str, dialect: str, internal: frozenset[str] = frozenset(),
                      functions: frozenset[str] | None = None) -> str:
    """The checks of :func:`check_read_only` on the parsed statements."""
    from sqlglot import exp

    if not statements:
        raise UnsafeSQL("empty SQL (only comments or semicolons)")
    if len(statements) > 1:
        kinds = ", ".join(_kind(s) if not isinstance(s, (exp.Select, exp.SetOperation)) else "SELECT"
                          for s in statements)
        raise UnsafeSQL(f"multiple statements ({len(statements)}: {kinds}); only one may run")
    root = statements[0]
    while isinstance(root, exp.Subquery):
        root = root.this
    if not isinstance(root, (exp.Select, exp.SetOperation)):
        name = type(root).__name__
        kind = _kind(root) if name in _STATEMENT_NAMES or name == "Values" else (_first_word(sql) or name.upper())
        raise UnsafeSQL(f"{kind} statement (not a query)")
    for node in statements[0].walk():
        _check_node(node, sql, internal, functions, dialect)
    return _statement_text(sql, dialect)


def has_order_by(sql: str, dialect: str) -> bool:
    """True when the outermost query of ``sql`` has an ORDER BY.

    Args:
        sql: one query.
        dialect: sqlglot dialect.

    Returns:
        Whether the outermost SELECT / set operation (or a parenthesised query around it) is
        ordered; False when the SQL cannot be parsed.
    """
    from sqlglot import exp

    try:
        statements = _parse(sql, dialect)
    except Exception:  # noqa: BLE001 - unparseable SQL is simply not known to be ordered
        return False
    if not statements:
        return False
    node = statements[0]
    while True:
        if node.args.get("order") is not None:
            return True
        if not isinstance(node, exp.Subquery):
            return False
        node = node.this


