"""What BI tools and Postgres clients ask the endpoint about its catalog, answered by DuckDB.

DuckDB ships much of ``pg_catalog`` (``pg_class``, ``pg_attribute``, ``pg_namespace``, ``pg_proc``,
``pg_type``, ``format_type``, ``pg_table_is_visible``...). What psql's meta-commands (``\\l \\dn \\dt
\\d TABLE \\df``), pgcli's completion queries, SQLAlchemy's PostgreSQL inspector (what Superset and
most BI tools call) and DBeaver also send, and DuckDB lacks, is filled in two ways:

* :func:`rewrite` turns Postgres spellings DuckDB cannot read into ones it can, outside string
  literals only: ``OPERATOR(pg_catalog.~)`` -> ``~``, ``COLLATE pg_catalog.default`` dropped,
  ``pg_catalog.`` qualifiers dropped (so the session's temporary objects below are found first),
  ``'name'::regclass`` and ``CAST(x AS REGCLASS)`` -> the table's oid, ``x::regtype`` -> its type
  name, ``::regproc`` and the like -> the plain oid;
* :data:`SESSION_DDL` creates, once per client session, temporary macros and views for the missing
  functions and catalog tables (``pg_get_userbyid``, ``pg_get_function_result``, ``pg_get_keywords``,
  ``pg_database`` with the columns psql reads, ``pg_roles``, empty ``pg_inherits``...). They describe
  the knowledge base as one database owned by ``dbrouter``; nothing is writable.
"""

from __future__ import annotations

import re

OWNER = "dbrouter"

PG_TYPE_NAMES = {"varchar": "character varying", "int8": "bigint", "int4": "integer", "int2": "smallint",
                 "int1": "smallint", "hugeint": "numeric", "ubigint": "numeric", "uinteger": "bigint",
                 "usmallint": "integer", "utinyint": "smallint", "float8": "double precision", "float4": "real",
                 "bool": "boolean", "timestamp": "timestamp without time zone",
                 "timestamptz": "timestamp with time zone", "time": "time without time zone", "blob": "bytea",
                 "list": "text[]", "array": "text[]", "map": "json", "struct": "json", "null": "text"}
"""What ``format_type`` says for DuckDB's type names: the Postgres name a client maps to its own type."""

SESSION_DDL: tuple[str, ...] = (
    f"CREATE OR REPLACE TEMP MACRO pg_get_userbyid(role_oid) AS '{OWNER}'",
    "CREATE OR REPLACE TEMP MACRO pg_encoding_to_char(enc) AS 'UTF8'",
    "CREATE OR REPLACE TEMP MACRO pg_get_function_result(fn) AS coalesce((SELECT lower(CAST(p.prorettype AS VARCHAR)) "
    "FROM pg_catalog.pg_proc AS p WHERE p.oid = fn LIMIT 1), 'any')",
    "CREATE OR REPLACE TEMP MACRO pg_get_function_arguments(fn) AS "
    "coalesce((SELECT array_to_string(p.proargnames, ', ') FROM pg_catalog.pg_proc AS p WHERE p.oid = fn LIMIT 1), '')",
    "CREATE OR REPLACE TEMP MACRO pg_get_function_identity_arguments(fn) AS pg_get_function_arguments(fn)",
    "CREATE OR REPLACE TEMP MACRO pg_get_viewdef(v, pretty := false) AS "
    "(SELECT sql FROM duckdb_views() WHERE view_oid = v LIMIT 1)",
    "CREATE OR REPLACE TEMP MACRO pg_get_indexdef(i, col := 0, pretty := false) AS ''",
    "CREATE OR REPLACE TEMP MACRO pg_get_statisticsobjdef_columns(s) AS ''",
    "CREATE OR REPLACE TEMP MACRO pg_relation_is_publishable(r) AS false",
    "CREATE OR REPLACE TEMP MACRO pg_is_other_temp_schema(s) AS false",
    "CREATE OR REPLACE TEMP MACRO pg_total_relation_size(r) AS 0",
    "CREATE OR REPLACE TEMP MACRO pg_relation_size(r) AS 0",
    "CREATE OR REPLACE TEMP MACRO pg_size_pretty(b) AS CAST(b AS VARCHAR) || ' bytes'",
    "CREATE OR REPLACE TEMP MACRO pg_backend_pid() AS 0",
    "CREATE OR REPLACE TEMP MACRO pg_postmaster_start_time() AS TIMESTAMP '2000-01-01'",
    "CREATE OR REPLACE TEMP MACRO txid_current() AS 0",
    "CREATE OR REPLACE TEMP MACRO dbrouter_regclass(name) AS "
    "(SELECT c.oid FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace "
    "WHERE c.relname = replace(split_part(name, '.', -1), '\"', '') "
    "AND (strpos(name, '.') = 0 OR n.nspname = replace(split_part(name, '.', 1), '\"', '')) "
    "ORDER BY n.nspname = current_schema() DESC LIMIT 1)",
    "CREATE OR REPLACE TEMP MACRO dbrouter_regtype(name) AS "
    "(SELECT t.oid FROM pg_catalog.pg_type AS t WHERE t.typname = lower(name) LIMIT 1)",
    "CREATE OR REPLACE TEMP MACRO to_regtype(name) AS dbrouter_regtype(name)",
    # Postgres's names for DuckDB's types: SQLAlchemy's inspector (Superset) maps these to its types
    "CREATE OR REPLACE TEMP MACRO format_type(t, m) AS coalesce(MAP {"
    + ", ".join(f"'{duck}': '{pg}'" for duck, pg in PG_TYPE_NAMES.items())
    + "}[pg_catalog.format_type(t, m)], pg_catalog.format_type(t, m))",
    # a DuckDB macro has no return type (NULL): Postgres's pseudo-type `any` keeps it in pgcli's list
    "CREATE OR REPLACE TEMP MACRO dbrouter_typename(t) AS CASE WHEN t IS NULL THEN 'any' "
    "WHEN TRY_CAST(t AS BIGINT) IS NULL THEN lower(CAST(t AS VARCHAR)) ELSE format_type(TRY_CAST(t AS BIGINT), NULL) END",
    "CREATE OR REPLACE TEMP MACRO pg_get_serial_sequence(t, c) AS CAST(NULL AS VARCHAR)",
    "CREATE OR REPLACE TEMP VIEW pg_opclass AS SELECT CAST(NULL AS BIGINT) AS oid, CAST(NULL AS BIGINT) AS opcmethod, "
    "'' AS opcname, CAST(NULL AS BIGINT) AS opcnamespace, false AS opcdefault, CAST(NULL AS BIGINT) AS opcintype "
    "WHERE false",
    "CREATE OR REPLACE TEMP MACRO to_regclass(name) AS dbrouter_regclass(name)",
    "CREATE OR REPLACE TEMP MACRO pg_get_keywords() AS TABLE "
    "SELECT keyword_name AS word, "
    "CASE keyword_category WHEN 'reserved' THEN 'R' WHEN 'type_function' THEN 'T' WHEN 'column_name' THEN 'C' "
    "ELSE 'U' END AS catcode, "
    "CASE keyword_category WHEN 'reserved' THEN 'reserved' WHEN 'type_function' THEN "
    "'reserved (can be function or type name)' WHEN 'column_name' THEN 'unreserved (cannot be function or type name)' "
    "ELSE 'unreserved' END AS catdesc, "
    "CASE keyword_category WHEN 'reserved' THEN 'reserved' ELSE 'unreserved' END AS barelabel "
    "FROM duckdb_keywords()",
    "CREATE OR REPLACE TEMP VIEW pg_database AS "
    "SELECT d.oid, d.datname, 10 AS datdba, 6 AS encoding, 'c' AS datlocprovider, 'C' AS datcollate, "
    "'C' AS datctype, NULL AS daticulocale, NULL AS datcollversion, d.datistemplate, d.datallowconn, "
    "-1 AS datconnlimit, 0 AS dattablespace, CAST(NULL AS VARCHAR[]) AS datacl "
    "FROM pg_catalog.pg_database AS d WHERE d.datname NOT IN ('system', 'temp')",
    "CREATE OR REPLACE TEMP VIEW pg_roles AS "
    f"SELECT 10 AS oid, '{OWNER}' AS rolname, false AS rolsuper, false AS rolinherit, false AS rolcreaterole, "
    "false AS rolcreatedb, true AS rolcanlogin, false AS rolreplication, -1 AS rolconnlimit, "
    "CAST(NULL AS TIMESTAMP) AS rolvaliduntil, false AS rolbypassrls, CAST(NULL AS VARCHAR[]) AS rolconfig",
    "CREATE OR REPLACE TEMP VIEW pg_user AS SELECT rolname AS usename, oid AS usesysid, false AS usecreatedb, "
    "false AS usesuper FROM pg_roles",
    "CREATE OR REPLACE TEMP VIEW pg_inherits AS "
    "SELECT CAST(NULL AS BIGINT) AS inhrelid, CAST(NULL AS BIGINT) AS inhparent, 0 AS inhseqno, "
    "false AS inhdetachpending WHERE false",
    "CREATE OR REPLACE TEMP VIEW pg_extension AS "
    "SELECT CAST(NULL AS BIGINT) AS oid, '' AS extname, 10 AS extowner, CAST(NULL AS BIGINT) AS extnamespace, "
    "'' AS extversion WHERE false",
    "CREATE OR REPLACE TEMP VIEW pg_matviews AS "
    "SELECT '' AS schemaname, '' AS matviewname, '' AS matviewowner, '' AS definition WHERE false",
    "CREATE OR REPLACE TEMP VIEW pg_partitioned_table AS "
    "SELECT CAST(NULL AS BIGINT) AS partrelid, '' AS partstrat WHERE false",
    "CREATE OR REPLACE TEMP VIEW pg_trigger AS "
    "SELECT CAST(NULL AS BIGINT) AS oid, CAST(NULL AS BIGINT) AS tgrelid, '' AS tgname, false AS tgisinternal "
    "WHERE false",
    "CREATE OR REPLACE TEMP VIEW pg_policy AS "
    "SELECT CAST(NULL AS BIGINT) AS oid, '' AS polname, CAST(NULL AS BIGINT) AS polrelid, '' AS polcmd, "
    "true AS polpermissive, CAST(NULL AS BIGINT[]) AS polroles, CAST(NULL AS VARCHAR) AS polqual, "
    "CAST(NULL AS VARCHAR) AS polwithcheck WHERE false",
    "CREATE OR REPLACE TEMP MACRO pg_get_function_sqlbody(fn) AS "
    "(SELECT p.prosrc FROM pg_catalog.pg_proc AS p WHERE p.oid = fn LIMIT 1)",
    "CREATE OR REPLACE TEMP VIEW pg_statistic_ext AS "
    "SELECT CAST(NULL AS BIGINT) AS oid, CAST(NULL AS BIGINT) AS stxrelid, '' AS stxname, "
    "CAST(NULL AS BIGINT) AS stxnamespace, CAST(NULL AS VARCHAR[]) AS stxkind, -1 AS stxstattarget, "
    "CAST(NULL AS BIGINT) AS stxowner WHERE false",
    "CREATE OR REPLACE TEMP VIEW pg_publication AS SELECT CAST(NULL AS BIGINT) AS oid, '' AS pubname, "
    "false AS puballtables WHERE false",
    "CREATE OR REPLACE TEMP VIEW pg_publication_rel AS SELECT CAST(NULL AS BIGINT) AS oid, "
    "CAST(NULL AS BIGINT) AS prpubid, CAST(NULL AS BIGINT) AS prrelid WHERE false",
    "CREATE OR REPLACE TEMP VIEW pg_collation AS "
    "SELECT c.oid, c.collname, 11 AS collnamespace, 10 AS collowner, 'c' AS collprovider, true AS collisdeterministic, "
    "-1 AS collencoding, 'C' AS collcollate, 'C' AS collctype FROM pg_catalog.pg_collation AS c",
    "CREATE OR REPLACE TEMP VIEW pg_class AS SELECT c.* REPLACE (CAST(NULL AS VARCHAR[]) AS reloptions, "
    "CAST(NULL AS VARCHAR[]) AS relacl), false AS relforcerowsecurity FROM pg_catalog.pg_class AS c",
    "CREATE OR REPLACE TEMP MACRO pg_get_expr(expr, rel) AS CAST(expr AS VARCHAR), "
    "(expr, rel, pretty) AS CAST(expr AS VARCHAR)",
    "CREATE OR REPLACE TEMP MACRO pg_tablespace_location(t) AS ''",
    "CREATE OR REPLACE TEMP VIEW pg_language AS SELECT 13 AS oid, 'sql' AS lanname, 10 AS lanowner, false AS lanispl, "
    "true AS lanpltrusted",
    "CREATE OR REPLACE TEMP VIEW pg_operator AS SELECT CAST(NULL AS BIGINT) AS oid, '' AS oprname, "
    "CAST(NULL AS BIGINT) AS oprnamespace, CAST(NULL AS BIGINT) AS oprleft, CAST(NULL AS BIGINT) AS oprright, "
    "CAST(NULL AS BIGINT) AS oprresult, CAST(NULL AS BIGINT) AS oprcode, '' AS oprkind WHERE false",
    "CREATE OR REPLACE TEMP VIEW pg_cast AS SELECT CAST(NULL AS BIGINT) AS oid, CAST(NULL AS BIGINT) AS castsource, "
    "CAST(NULL AS BIGINT) AS casttarget, CAST(NULL AS BIGINT) AS castfunc, '' AS castcontext, '' AS castmethod "
    "WHERE false",
    "CREATE OR REPLACE TEMP VIEW pg_conversion AS SELECT CAST(NULL AS BIGINT) AS oid, '' AS conname, "
    "CAST(NULL AS BIGINT) AS connamespace, 0 AS conforencoding, 0 AS contoencoding, false AS condefault WHERE false",
    "CREATE OR REPLACE TEMP VIEW pg_auth_members AS SELECT CAST(NULL AS BIGINT) AS oid, CAST(NULL AS BIGINT) AS roleid, "
    "CAST(NULL AS BIGINT) AS member, CAST(NULL AS BIGINT) AS grantor, false AS admin_option, false AS inherit_option, "
    "false AS set_option WHERE false",
    "CREATE OR REPLACE TEMP VIEW pg_range AS SELECT CAST(NULL AS BIGINT) AS rngtypid, "
    "CAST(NULL AS BIGINT) AS rngsubtype WHERE false",
)
"""Run once on each client session's cursor (temporary objects are per connection)."""


_STRING = re.compile(r"(?:[eE])?'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/", re.DOTALL)
_OPERATOR = re.compile(r"\bOPERATOR\s*\(\s*(?:\"?pg_catalog\"?\s*\.\s*)?([^)\s]+)\s*\)", re.IGNORECASE)
_COLLATE = re.compile(r"\s+COLLATE\s+(?:\"?pg_catalog\"?\s*\.\s*)?(?:\"default\"|default|\"C\"|\"POSIX\")",
                      re.IGNORECASE)
_QUALIFIER = re.compile(r"(?:\"pg_catalog\"|\bpg_catalog)\s*\.\s*(?=[A-Za-z_\"])", re.IGNORECASE)
_LITERAL_REGCLASS = re.compile(r"('(?:[^']|'')*')\s*::\s*regclass\b", re.IGNORECASE)
_LITERAL_REGTYPE = re.compile(r"('(?:[^']|'')*')\s*::\s*regtype\b", re.IGNORECASE)
_CAST_REG = re.compile(r"\bCAST\s*\(\s*([^()]+?)\s+AS\s+(REGCLASS|REGTYPE)\s*\)", re.IGNORECASE)
_JSON_BUILD = re.compile(r"\bjson_build_object\s*\(", re.IGNORECASE)
_CAST_OID = re.compile(r"\bAS\s+REG(?:CLASS|TYPE|PROC|PROCEDURE|NAMESPACE|ROLE)\b", re.IGNORECASE)
_IDENT = r"\b([A-Za-z_][A-Za-z0-9_]*(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)?)"
_COLUMN_REGTYPES = re.compile(_IDENT + r"\s*::\s*regtype\s*\[\s*\]", re.IGNORECASE)
_COLUMN_REGTYPE = re.compile(_IDENT + r"\s*::\s*regtype\b", re.IGNORECASE)
_OID_CASTS = re.compile(r"::\s*(?:regclass|regproc|regprocedure|regnamespace|regrole|regoper|regconfig|regtype)\b",
                        re.IGNORECASE)


def _unquoted(sql: str, fix) -> str:
    """Apply ``fix`` to the parts of ``sql`` outside string literals, quoted identifiers and comments."""
    out, last = [], 0
    for match in _STRING.finditer(sql):
        out.append(fix(sql[last:match.start()]))
        out.append(match.group(0))
        last = match.end()
    out.append(fix(sql[last:]))
    return "".join(out)


def _fix_plain(part: str) -> str:
    part = _OPERATOR.sub(lambda m: f" {m.group(1)} ", part)
    part = _JSON_BUILD.sub("json_object(", part)
    part = _COLLATE.sub("", part)
    part = _QUALIFIER.sub("", part)
    part = _CAST_REG.sub(lambda m: f"dbrouter_{m.group(2).lower()}({m.group(1)})", part)
    part = _CAST_OID.sub("AS BIGINT", part)  # CAST(<expression> AS REGCLASS): the oid as it is
    part = _COLUMN_REGTYPES.sub(lambda m: f"CAST({m.group(1)} AS VARCHAR[])", part)
    part = _COLUMN_REGTYPE.sub(lambda m: f"dbrouter_typename({m.group(1)})", part)
    return _OID_CASTS.sub("", part)


def rewrite(sql: str) -> str:
    """``sql`` with the Postgres catalog spellings DuckDB cannot read replaced (see the module docstring).

    Args:
        sql: one statement from a client.

    Returns:
        The statement to check and run; unchanged when it has none of them.
    """
    if not re.search(r"pg_catalog|OPERATOR|COLLATE|::\s*reg|\bAS\s+REG|json_build_object", sql, re.IGNORECASE):
        return sql
    sql = _LITERAL_REGCLASS.sub(lambda m: f"dbrouter_regclass({m.group(1)})", sql)
    sql = _LITERAL_REGTYPE.sub(lambda m: m.group(1), sql)  # a type name compares as text with dbrouter_typename
    sql = _unquoted(sql, _fix_plain)
    # a quoted "pg_catalog"."x" qualifier is an identifier pair the string scan kept whole
    return re.sub(r"\"pg_catalog\"\s*\.\s*", "", sql, flags=re.IGNORECASE)
