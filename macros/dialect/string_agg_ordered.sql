{#- The strings of `expr` joined by `sep` in the order of `order_by` (an aggregate). -#}
{% macro string_agg_ordered(expr, sep, order_by) -%}
  {{ return(adapter.dispatch('string_agg_ordered', 'dbrouter')(expr, sep, order_by)) }}
{%- endmacro %}

{% macro default__string_agg_ordered(expr, sep, order_by) -%}
string_agg({{ expr }}, {{ sep }} order by {{ order_by }})
{%- endmacro %}

{#- Snowflake: LISTAGG gives '' where DuckDB's string_agg gives NULL (no non-NULL input). -#}
{% macro snowflake__string_agg_ordered(expr, sep, order_by) -%}
nullif(listagg({{ expr }}, {{ sep }}) within group (order by {{ order_by }}), '')
{%- endmacro %}
