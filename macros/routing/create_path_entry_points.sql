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

  Both read the entry points with paths from sql_entry_points (not those marked plain: false).
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
{%- set entries = [] -%}
{%- for e in dbrouter.sql_entry_points() if e.paths and e.get('plain', true) -%}
  {%- set params = [] -%}
  {%- set args = [] -%}
  {%- for p, t, d in e.params -%}
    {%- do params.append(p ~ (' := ' ~ (d | tojson if d is iterable and d is not string else d) if d is not none else '')) -%}
    {%- do args.append(p ~ (' := ' ~ p if d is not none else '')) -%}
  {%- endfor -%}
  {%- do entries.append((e.name, params | join(', '), args | join(', '), e.kind)) -%}
{%- endfor -%}
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
