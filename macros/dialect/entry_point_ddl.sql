{#-
  Naming and creating one declared SQL entry point (sql_entry_points) on this adapter:

    route_paths()                          the routing paths this adapter has
    entry_point_name(name, path)           the function a body calls (DuckDB `<name>_<path>`,
                                           Snowflake `<kb schema>.<name>`)
    call_table_entry_point(name, path, args)  a FROM-clause call of a table entry point
    create_entry_point(entry, path, body)  the CREATE statement (no trailing semicolon)
-#}
{% macro route_paths() -%}
  {{ return(adapter.dispatch('route_paths', 'dbrouter')()) }}
{%- endmacro %}

{% macro default__route_paths() -%}
{{ return(['udf']) }}
{%- endmacro %}

{#- DuckDB: every routing function also exists in pure SQL over the static embedder's tables. -#}
{% macro duckdb__route_paths() -%}
{{ return(['udf', 'sql']) }}
{%- endmacro %}

{% macro entry_point_name(name, path=none) -%}
  {{ return(adapter.dispatch('entry_point_name', 'dbrouter')(name, path)) }}
{%- endmacro %}

{% macro default__entry_point_name(name, path=none) -%}
{{ name }}{{ '_' ~ path if path else '' }}
{%- endmacro %}

{% macro snowflake__entry_point_name(name, path=none) -%}
{{ dbrouter.snowflake_kb_schema() }}.{{ name }}
{%- endmacro %}

{% macro call_table_entry_point(name, path, args) -%}
  {{ return(adapter.dispatch('call_table_entry_point', 'dbrouter')(name, path, args)) }}
{%- endmacro %}

{% macro default__call_table_entry_point(name, path, args) -%}
{{ dbrouter.entry_point_name(name, path) }}({{ args }})
{%- endmacro %}

{% macro snowflake__call_table_entry_point(name, path, args) -%}
table({{ dbrouter.entry_point_name(name, path) }}({{ args }}))
{%- endmacro %}

{% macro create_entry_point(entry, path, body) -%}
  {{ return(adapter.dispatch('create_entry_point', 'dbrouter')(entry, path, body)) }}
{%- endmacro %}

{#- DuckDB: a scalar or table macro stored in the warehouse; defaults as `name := value`. -#}
{% macro default__create_entry_point(entry, path, body) -%}
create or replace macro {{ dbrouter.entry_point_name(entry.name, path if entry.paths else none) }}(
    {%- for p, t, d in entry.params %}{{ p }}{% if d is not none %} := {{ dbrouter.array_literal(d) if d is iterable and d is not string else d }}{% endif %}{{ ', ' if not loop.last }}{% endfor -%}
) as {% if entry.kind == 'table' %}table
{{ body }}
{%- else %}(
{{ body }}
)
{%- endif %}
{%- endmacro %}

{#- Snowflake: a SQL UDF or UDTF in the KB schema, typed, with DEFAULT arguments. -#}
{% macro snowflake__create_entry_point(entry, path, body) -%}
create or replace function {{ dbrouter.entry_point_name(entry.name, path) }}(
    {%- for p, t, d in entry.params %}{{ p }} {{ dbrouter.sql_type(t, 'param') }}{% if d is not none %} default {{ dbrouter.array_literal(d) if d is iterable and d is not string else d }}{% endif %}{{ ', ' if not loop.last }}{% endfor -%}
)
returns {% if entry.kind == 'table' %}table ({% for c, t in entry.returns %}{{ c }} {{ dbrouter.sql_type(t) }}{{ ', ' if not loop.last }}{% endfor %}){% else %}{{ dbrouter.sql_type(entry.returns) }}{% endif %}
language sql
as $$
{{ body }}
$$
{%- endmacro %}
