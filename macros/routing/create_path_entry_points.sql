{#-
  The plain-named entry points (route_query, route_query_json, route_query_ranked, ...,
  retrieve_statements, retrieve_examples, retrieve_columns) over one of the two paths that
  create_route_functions and create_retrieval_functions create for each (`<name>_udf`,
  `<name>_sql`). Called last by create_retrieval_functions, when both exist.

    - in the warehouse: `<name>` calls `<name>_sql`, so a plain DuckDB client (CLI, any driver)
      that registered nothing gets answers;
    - `dbrouter_route_path_ddl(path)`: the text of CREATE TEMP MACRO statements that shadow every
      `<name>` with `<name>_<path>` for one connection (temp macros are searched first);
      `dbrouter.connect()` / `dbrouter serve` run it with 'udf' once the UDFs are registered.

  The signatures below are the one list both use.
-#}
{% macro create_path_entry_points() -%}
  {{ return(adapter.dispatch('create_path_entry_points', 'dbrouter')()) }}
{%- endmacro %}

{% macro default__create_path_entry_points() -%}
  {{ exceptions.raise_compiler_error("create_path_entry_points: adapter " ~ adapter.type() ~ " is not supported yet (argument: none); DuckDB is supported") }}
{%- endmacro %}

{#- DuckDB: scalar macros wrap with `as (...)`, table macros with `as table select * from`; the
    DDL macro is a constant string with the path spliced in, checked by error(). -#}
{% macro duckdb__create_path_entry_points() -%}
{%- set sk = dbrouter.get_var('dbrouter__shortlist_k') | int -%}
{#- (name, parameters with defaults, arguments passed on, kind) -#}
{%- set entries = [
    ('route_shortlist', 'question, k := 10', 'question, k := k', 'table'),
    ('route_phrase_mappings', 'question, k := 10', 'question, k := k', 'table'),
    ('route_query_ranked', 'question, k := 5, shortlist_k := ' ~ sk, 'question, k := k, shortlist_k := shortlist_k', 'table'),
    ('route_query_ranked_mapped', 'question, mappings, k := 5, shortlist_k := ' ~ sk, 'question, mappings, k := k, shortlist_k := shortlist_k', 'table'),
    ('route_query', 'question', 'question', 'scalar'),
    ('route_query_json', 'question, k := 5', 'question, k := k', 'scalar'),
    ('retrieve_statements', 'question, db, k := 4', 'question, db, k := k', 'table'),
    ('retrieve_examples', 'question, db, k := 3', 'question, db, k := k', 'table'),
    ('retrieve_columns', 'question, db, k := 10, exclude := []', 'question, db, k := k, exclude := exclude', 'table'),
] -%}
{%- for name, params, args, kind in entries %}
{{ dbrouter._path_wrapper(name, params, args, kind, name ~ '_sql', false) }};
{%- endfor %}

create or replace macro dbrouter_route_path_ddl(path) as (
    case when path in ('udf', 'sql') then ''
         else error('dbrouter_route_path_ddl: path must be ''udf'' or ''sql'', got ' || coalesce(path, 'NULL')) end
{%- for name, params, args, kind in entries %}
    || '{{ dbrouter._path_wrapper(name, params, args, kind, name ~ "_' || path || '", true) }}; '
{%- endfor %}
)
{%- endmacro %}

{#- One CREATE MACRO of a plain-named entry point calling `target`. -#}
{% macro _path_wrapper(name, params, args, kind, target, temp) -%}
create or replace {{ 'temp ' if temp else '' }}macro {{ name }}({{ params }}) as {% if kind == 'table' %}table select * from {{ target }}({{ args }}){% else %}({{ target }}({{ args }})){% endif %}
{%- endmacro %}
