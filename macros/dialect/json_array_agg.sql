{#- Aggregate: the JSON text of an array of `expr` over the group, in `order_by` order.

  Args:
    expr: SQL expression of each element (e.g. an array_literal).
    order_by: the ORDER BY list (without the keywords).
-#}
{% macro json_array_agg(expr, order_by) -%}
  {{ return(adapter.dispatch('json_array_agg', 'dbrouter')(expr, order_by)) }}
{%- endmacro %}

{% macro default__json_array_agg(expr, order_by) -%}
{%- if not order_by -%}
  {{ exceptions.raise_compiler_error("json_array_agg: adapter " ~ adapter.type() ~ ", argument order_by is required (the JSON must not depend on scan order), got " ~ order_by) }}
{%- endif -%}
cast(to_json(list({{ expr }} order by {{ order_by }})) as varchar)
{%- endmacro %}

{#- Snowflake: ARRAY_AGG ... WITHIN GROUP gives an ARRAY, TO_JSON its text. -#}
{% macro snowflake__json_array_agg(expr, order_by) -%}
{%- if not order_by -%}
  {{ exceptions.raise_compiler_error("json_array_agg: adapter " ~ adapter.type() ~ ", argument order_by is required (the JSON must not depend on scan order), got " ~ order_by) }}
{%- endif -%}
to_json(array_agg({{ expr }}) within group (order by {{ order_by }}))
{%- endmacro %}
