"""What BI tools and Postgres clients ask the endpoint about its catalog, answered by DuckDB.

DuckDB ships much of ``pg_catalog`` (``pg_class``, ``pg_attribute``, ``pg_namespace``, ``pg_proc``,
``pg_type``, ``format_type``, ``pg_table_is_visible``...). What psql's meta-commands (``\\l \\dn \\dt
\\d TABLE \\df``), pgcli's completion queries, SQLAlchemy's PostgreSQL inspector (what Superset and
most BI tools call) and DBeaver also send, and DuckDB lacks, is filled in two ways:

* :func:`rewrite` turns Postgres spellings DuckDB cannot read into ones it can, outside string
  literals only: ``OPERATOR(pg_catalog.~)`` -> ``~``, ``COLLATE pg_catalog.default`` dropped,
  ``pg_catalog.`` qualifiers dropped (so the session's temporary objects below are found first),
  ``'name'::regclass`` and ``CAST(x AS REGCLASS)`` -> the table's oid, ``x::regtype`` -> its type
  name, ``::regproc`` and the like -> the plain oid, ``current_setting``/``set_config`` -> the
  served settings, ``= ANY('{r,p}')`` -> a list;
* :func:`catalog_ddl` creates, on a session's first statement that names one of them
  (:func:`needs_catalog`), temporary macros and views for the missing functions and catalog tables
  (``pg_get_userbyid``, ``pg_get_keywords``, ``pg_database`` with the columns psql reads, ``pg_type``
  and ``pg_attribute`` with Postgres's OIDs from :mod:`dbrouter.serve.pgtypes`, ``pg_index`` from
  the KB's keys, ``pg_settings``...). They describe the knowledge base as one database owned by
  ``dbrouter``; nothing is writable.
"""

from __future__ import annotations

import re

from dbrouter.serve.pgtypes import TEXT_ARRAYS, TYPES, oid_macro_sql, pg_array, pg_type_rows, typmod_macro_sql

OWNER = "dbrouter"
SERVER_VERSION = "14.0"
PG_CATALOG_OID = 11

SETTINGS: dict[str, str] = {
    "server_version": SERVER_VERSION, "server_version_num": "140000", "server_encoding": "UTF8",
    "client_encoding": "UTF8", "datestyle": "ISO, MDY", "timezone": "UTC", "intervalstyle": "postgres",
    "integer_datetimes": "on", "standard_conforming_strings": "on", "max_identifier_length": "63",
    "max_index_keys": "32", "search_path": "main", "lc_collate": "C", "lc_ctype": "C", "lc_messages": "C",
    "default_transaction_isolation": "read committed", "transaction_isolation": "read committed",
    "transaction_read_only": "on", "default_transaction_read_only": "on", "is_superuser": "off",
    "application_name": "", "extra_float_digits": "1", "bytea_output": "hex", "statement_timeout": "0",
    "block_size": "8192", "max_connections": "100",
}
"""The settings a client may read (``SHOW x``, ``current_setting('x')``, ``pg_settings``): harmless,
fixed, and Postgres's spelling; nothing of DuckDB's own configuration (paths, memory) is served."""

SESSION_DDL: tuple[str, ...] = (
    f"CREATE OR REPLACE TEMP MACRO pg_get_userbyid(role_oid) AS '{OWNER}'",
    "CREATE OR REPLACE TEMP MACRO pg_encoding_to_char(enc) AS 'UTF8'",
    "CREATE OR REPLACE TEMP MACRO pg_get_function_result(fn) AS coalesce((SELECT lower(CAST(dbrouter_fn.prorettype AS VARCHAR)) "
    "FROM pg_catalog.pg_proc AS dbrouter_fn WHERE dbrouter_fn.oid = fn LIMIT 1), 'any')",
    "CREATE OR REPLACE TEMP MACRO pg_get_function_arguments(fn) AS "
    "coalesce((SELECT array_to_string(dbrouter_fn.proargnames, ', ') FROM pg_catalog.pg_proc AS dbrouter_fn "
    "WHERE dbrouter_fn.oid = fn LIMIT 1), '')",
    "CREATE OR REPLACE TEMP MACRO pg_get_function_identity_arguments(fn) AS pg_get_function_arguments(fn)",
    "CREATE OR REPLACE TEMP MACRO pg_get_viewdef(v, pretty := false) AS "
    "(SELECT sql FROM duckdb_views() WHERE view_oid = v LIMIT 1)",
    "CREATE OR REPLACE TEMP MACRO pg_get_statisticsobjdef_columns(s) AS ''",
    "CREATE OR REPLACE TEMP MACRO pg_relation_is_publishable(r) AS false",
    "CREATE OR REPLACE TEMP MACRO pg_is_other_temp_schema(s) AS false",
    "CREATE OR REPLACE TEMP MACRO pg_total_relation_size(r) AS 0",
    "CREATE OR REPLACE TEMP MACRO pg_relation_size(r) AS 0",
    "CREATE OR REPLACE TEMP MACRO pg_stat_get_numscans(r) AS 0",
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
    "(SELECT dbrouter_fn.prosrc FROM pg_catalog.pg_proc AS dbrouter_fn WHERE dbrouter_fn.oid = fn LIMIT 1)",
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
    "CAST(NULL AS BIGINT) AS rngsubtype, CAST(NULL AS BIGINT) AS rngmultitypid WHERE false",
)
"""Run once on each client session's cursor (temporary objects are per connection)."""

TYPE_NAMES = "MAP {" + ", ".join(f"{oid}: '{t.sql_name.replace(chr(39), chr(39) * 2)}'" for oid, t in TYPES.items()) + "}"
"""``format_type``'s names by OID, as a literal (a macro's subquery would capture its caller's aliases)."""

_SETTING_ROWS = ", ".join(f"('{k}', '{v}')" for k, v in SETTINGS.items())

SESSION_DDL += (
    # the types Postgres has, with its OIDs: what RowDescription announces (dbrouter.serve.pgtypes)
    f"CREATE OR REPLACE TEMP VIEW pg_type AS {pg_type_rows(PG_CATALOG_OID)}",
    f"CREATE OR REPLACE TEMP VIEW pg_namespace AS SELECT oid, nspname, nspowner, nspacl FROM "
    f"pg_catalog.pg_namespace UNION ALL SELECT {PG_CATALOG_OID}, 'pg_catalog', 10, CAST(NULL AS VARCHAR[])",
    f"CREATE OR REPLACE TEMP MACRO dbrouter_pg_oid(dt) AS {oid_macro_sql()}",
    f"CREATE OR REPLACE TEMP MACRO dbrouter_pg_typmod(dt) AS {typmod_macro_sql()}",
    # DuckDB's pg_attribute holds its own type ids, which join no pg_type row: BI tools saw no columns
    "CREATE OR REPLACE TEMP VIEW pg_attribute AS SELECT c.table_oid AS attrelid, c.column_name AS attname, "
    "CAST(dbrouter_pg_oid(c.data_type) AS UINTEGER) AS atttypid, -1 AS attstattarget, "
    "coalesce((SELECT t.typlen FROM pg_type AS t WHERE t.oid = dbrouter_pg_oid(c.data_type)), -1) AS attlen, "
    "CAST(c.column_index AS SMALLINT) AS attnum, CASE WHEN c.data_type LIKE '%]' THEN 1 ELSE 0 END AS attndims, "
    "-1 AS attcacheoff, dbrouter_pg_typmod(c.data_type) AS atttypmod, false AS attbyval, 'p' AS attstorage, "
    "'i' AS attalign, NOT c.is_nullable AS attnotnull, c.column_default IS NOT NULL AS atthasdef, "
    "false AS atthasmissing, '' AS attidentity, '' AS attgenerated, false AS attisdropped, true AS attislocal, "
    "0 AS attinhcount, 0 AS attcollation, '' AS attcompression, CAST(NULL AS VARCHAR[]) AS attacl, "
    "CAST(NULL AS VARCHAR[]) AS attoptions, CAST(NULL AS VARCHAR[]) AS attfdwoptions, "
    "CAST(NULL AS VARCHAR) AS attmissingval FROM duckdb_columns() AS c",
    # by Postgres OID; DuckDB's pg_proc names its types (prorettype 'VARCHAR'): those are lower-cased
    "CREATE OR REPLACE TEMP MACRO format_type(t, m) AS CASE "
    "WHEN TRY_CAST(t AS INTEGER) = 1700 AND m >= 4 THEN 'numeric(' || ((m - 4) >> 16) || ',' || ((m - 4) & 65535) || ')' "
    f"WHEN TRY_CAST(t AS INTEGER) IN (1043, 1042) AND m >= 4 THEN {TYPE_NAMES}[TRY_CAST(t AS INTEGER)] || '(' || (m - 4) || ')' "
    f"WHEN TRY_CAST(t AS INTEGER) IS NULL THEN lower(CAST(t AS VARCHAR)) "
    f"ELSE coalesce({TYPE_NAMES}[TRY_CAST(t AS INTEGER)], '???') END",
    # keys: a primary key or unique constraint is an index of its table (pgjdbc's getPrimaryKeys reads pg_index)
    "CREATE OR REPLACE TEMP VIEW dbrouter_keys AS SELECT k.table_oid * 1000000 + k.constraint_index AS oid, "
    "k.table_oid, k.schema_oid, k.constraint_type, "
    "coalesce(k.constraint_name, k.table_name || '_' || array_to_string(k.constraint_column_names, '_') || "
    "CASE k.constraint_type WHEN 'PRIMARY KEY' THEN '_pkey' ELSE '_key' END) AS name, "
    "list_transform(k.constraint_column_indexes, lambda i: CAST(i + 1 AS SMALLINT)) AS columns, "
    "k.constraint_column_names AS column_names, k.schema_name || '.' || k.table_name AS table_name "
    "FROM duckdb_constraints() AS k WHERE k.constraint_type IN ('PRIMARY KEY', 'UNIQUE')",
    "CREATE OR REPLACE TEMP VIEW pg_index AS SELECT k.oid AS indexrelid, k.table_oid AS indrelid, "
    "CAST(len(k.columns) AS SMALLINT) AS indnatts, CAST(len(k.columns) AS SMALLINT) AS indnkeyatts, "
    "true AS indisunique, k.constraint_type = 'PRIMARY KEY' AS indisprimary, false AS indisexclusion, "
    "true AS indimmediate, false AS indisclustered, true AS indisvalid, false AS indcheckxmin, true AS indisready, "
    "true AS indislive, false AS indisreplident, k.columns AS indkey, CAST(NULL AS BIGINT[]) AS indcollation, "
    "CAST(NULL AS BIGINT[]) AS indclass, list_transform(k.columns, lambda c: CAST(0 AS SMALLINT)) AS indoption, CAST(NULL AS VARCHAR) AS indexprs, "
    "CAST(NULL AS VARCHAR) AS indpred, false AS indnullsnotdistinct FROM dbrouter_keys AS k",
    "CREATE OR REPLACE TEMP VIEW pg_constraint AS SELECT k.oid, k.name AS conname, k.schema_oid AS connamespace, "
    "CASE k.constraint_type WHEN 'PRIMARY KEY' THEN 'p' ELSE 'u' END AS contype, false AS condeferrable, "
    "false AS condeferred, true AS convalidated, k.table_oid AS conrelid, 0 AS contypid, k.oid AS conindid, "
    "0 AS conparentid, 0 AS confrelid, ' ' AS confupdtype, ' ' AS confdeltype, ' ' AS confmatchtype, "
    "true AS conislocal, 0 AS coninhcount, true AS connoinherit, k.columns AS conkey, "
    "CAST(NULL AS SMALLINT[]) AS confkey, CAST(NULL AS BIGINT[]) AS conpfeqop, CAST(NULL AS BIGINT[]) AS conppeqop, "
    "CAST(NULL AS BIGINT[]) AS conffeqop, CAST(NULL AS BIGINT[]) AS conexclop, CAST(NULL AS VARCHAR) AS conbin "
    "FROM dbrouter_keys AS k",
    "CREATE OR REPLACE TEMP VIEW pg_class AS SELECT c.* REPLACE (CAST(NULL AS VARCHAR[]) AS reloptions, "
    "CAST(NULL AS VARCHAR[]) AS relacl, c.oid IN (SELECT table_oid FROM dbrouter_keys) AS relhasindex), "
    "false AS relforcerowsecurity FROM pg_catalog.pg_class AS c "
    "UNION ALL BY NAME SELECT k.oid, k.name AS relname, k.schema_oid AS relnamespace, 'i' AS relkind, "
    "10 AS relowner, 403 AS relam, 'p' AS relpersistence, CAST(len(k.columns) AS SMALLINT) AS relnatts, "
    "false AS relhasindex, false AS relisshared, false AS relispartition, false AS relforcerowsecurity, "
    "false AS relrowsecurity, true AS relispopulated FROM dbrouter_keys AS k",
    "CREATE OR REPLACE TEMP VIEW pg_am AS SELECT * FROM (VALUES (403, 'btree', 'i'), (405, 'hash', 'i')) "
    "AS a(oid, amname, amtype)",
    # an index's definition, or with col > 0 the name of its col-th column (pgjdbc's getIndexInfo)
    "CREATE OR REPLACE TEMP MACRO pg_get_indexdef(i, col := 0, pretty := false) AS "
    "(SELECT CASE WHEN col > 0 THEN dbrouter_k.column_names[col] ELSE 'CREATE UNIQUE INDEX ' || dbrouter_k.name || "
    "' ON ' || dbrouter_k.table_name || ' USING btree (' || array_to_string(dbrouter_k.column_names, ', ') || ')' END "
    "FROM dbrouter_keys AS dbrouter_k WHERE dbrouter_k.oid = i)",
    # set-returning as in Postgres: one row per element, (x, n) = (the element, its position)
    "CREATE OR REPLACE TEMP MACRO _pg_expandarray(a) AS "
    "unnest(list_transform(range(1, len(a) + 1), lambda i: {'x': a[i], 'n': i}))",
    "CREATE OR REPLACE TEMP MACRO array_upper(a, d) AS CASE WHEN d = 1 AND len(a) > 0 THEN len(a) END",
    "CREATE OR REPLACE TEMP MACRO array_lower(a, d) AS CASE WHEN d = 1 AND len(a) > 0 THEN 1 END",
    f"CREATE OR REPLACE TEMP VIEW pg_settings AS SELECT name, setting, CAST(NULL AS VARCHAR) AS unit, "
    f"'' AS category, '' AS short_desc, 'user' AS context, 'string' AS vartype, 'default' AS source "
    f"FROM (VALUES {_SETTING_ROWS}) AS s(name, setting)",
    "CREATE OR REPLACE TEMP MACRO dbrouter_current_setting(n) AS (SELECT setting FROM pg_settings WHERE name = lower(n)), "
    "(n, missing_ok) AS (SELECT setting FROM pg_settings WHERE name = lower(n))",
    # like SET (accepted, changes nothing: the session's settings are fixed); asyncpg turns off `jit` so
    "CREATE OR REPLACE TEMP MACRO dbrouter_set_config(n, v, is_local) AS CAST(v AS VARCHAR)",
)


CATALOG_NAMES = frozenset(m.group(1).lower() for d in SESSION_DDL
                           if (m := re.match(r"CREATE OR REPLACE TEMP (?:VIEW|MACRO) (\w+)", d)))
"""The names :data:`SESSION_DDL` defines."""

_CATALOG_WORD = re.compile(r"\b(?:pg_catalog|information_schema|current_setting|set_config|current_user|"
                           r"session_user|current_role|"
                           + "|".join(sorted(CATALOG_NAMES, key=len, reverse=True)) + r")\b", re.IGNORECASE)


def catalog_ddl(user: str | None = None) -> tuple[str, ...]:
    """What a cursor runs to have the catalog: :data:`SESSION_DDL`, and macros naming the login user
    as Postgres does (``current_user``, ``session_user``: DuckDB says ``duckdb``).

    Args:
        user: the user name the client logged in as (None: none given, the owner's).
    """
    name = (user or OWNER).replace("'", "''")
    return SESSION_DDL + tuple(f"CREATE OR REPLACE TEMP MACRO {fn}() AS '{name}'"
                               for fn in ("current_user", "session_user", "current_role", "user"))


def needs_catalog(sql: str) -> bool:
    """Whether ``sql`` names an object of :func:`catalog_ddl` (or a catalog schema): a session
    creates them before its first such statement, not before every routing call (they cost ~30 ms
    of binding; most sessions only route)."""
    return _CATALOG_WORD.search(sql) is not None


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
_SCHEMA_FUNCTION = re.compile(r"\binformation_schema\s*\.\s*(?=_pg_expandarray\b)", re.IGNORECASE)
_SETTING_CALL = re.compile(r"\b(current_setting|set_config)\s*\(", re.IGNORECASE)
_ANY_LITERAL = re.compile(r"\b(ANY|ALL)\s*\(\s*'((?:[^']|'')*)'\s*(?:::\s*(?:\"?[A-Za-z_ ]+\"?)\s*\[\s*\])?\s*\)",
                          re.IGNORECASE)
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
    part = _SCHEMA_FUNCTION.sub("", part)
    part = _SETTING_CALL.sub(lambda m: f"dbrouter_{m.group(1).lower()}(", part)  # the served settings, not DuckDB's
    part = _QUALIFIER.sub("", part)
    part = _CAST_REG.sub(lambda m: f"dbrouter_{m.group(2).lower()}({m.group(1)})", part)
    part = _CAST_OID.sub("AS BIGINT", part)  # CAST(<expression> AS REGCLASS): the oid as it is
    part = _COLUMN_REGTYPES.sub(lambda m: f"CAST({m.group(1)} AS VARCHAR[])", part)
    part = _COLUMN_REGTYPE.sub(lambda m: f"dbrouter_typename({m.group(1)})", part)
    return _OID_CASTS.sub("", part)


def _any_list(match: re.Match) -> str:
    """``= ANY('{r,p,""}')`` (pgspecial's ``\\dt``): the array literal as a DuckDB list (DuckDB does not
    cast a string to a list there)."""
    try:
        items = pg_array(match.group(2).replace("''", "'"), TEXT_ARRAYS[1009])
    except ValueError:
        return match.group(0)
    quoted = ", ".join("NULL" if v is None else "'" + v.replace("'", "''") + "'" for v in items)
    return f"{match.group(1)}([{quoted}])"


def rewrite(sql: str) -> str:
    """``sql`` with the Postgres catalog spellings DuckDB cannot read replaced (see the module docstring).

    Args:
        sql: one statement from a client.

    Returns:
        The statement to check and run; unchanged when it has none of them.
    """
    if not re.search(r"pg_catalog|OPERATOR|COLLATE|::\s*reg|\bAS\s+REG|json_build_object|_pg_expandarray|"
                     r"current_setting|set_config|(?:ANY|ALL)\s*\(\s*'", sql, re.IGNORECASE):
        return sql
    sql = _ANY_LITERAL.sub(_any_list, sql)
    sql = _LITERAL_REGCLASS.sub(lambda m: f"dbrouter_regclass({m.group(1)})", sql)
    sql = _LITERAL_REGTYPE.sub(lambda m: m.group(1), sql)  # a type name compares as text with dbrouter_typename
    sql = _unquoted(sql, _fix_plain)
    # a quoted "pg_catalog"."x" qualifier is an identifier pair the string scan kept whole
    return re.sub(r"\"pg_catalog\"\s*\.\s*", "", sql, flags=re.IGNORECASE)
