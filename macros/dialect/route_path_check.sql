{#- Raises unless `path` is a routing path this adapter has: 'udf' (the UDF embedders) everywhere,
    'sql' (the static embedder materialised in the KB) on DuckDB. `step` names the calling macro. -#}
{% macro route_path_check(step, path) -%}
  {{ return(adapter.dispatch('route_path_check', 'dbrouter')(step, path)) }}
{%- endmacro %}

{% macro default__route_path_check(step, path) -%}
{%- if path != 'udf' -%}
  {{ exceptions.raise_compiler_error(step ~ ": adapter " ~ adapter.type() ~ ", argument path '" ~ path ~ "': this adapter has the UDF path only (the pure-SQL path is DuckDB's)") }}
{%- endif -%}
{%- endmacro %}

{% macro duckdb__route_path_check(step, path) -%}
{%- if path not in ('udf', 'sql') -%}
  {{ exceptions.raise_compiler_error(step ~ ": adapter " ~ adapter.type() ~ ", argument path must be 'udf' or 'sql', got " ~ path) }}
{%- endif -%}
{%- endmacro %}
