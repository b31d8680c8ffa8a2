{#- The values of `expr` as an array in the order of `order_by` (an aggregate). -#}
{% macro array_agg_ordered(expr, order_by) -%}
  {{ return(adapter.dispatch('array_agg_ordered', 'dbrouter')(expr, order_by)) }}
{%- endmacro %}

{% macro default__array_agg_ordered(expr, order_by) -%}
list({{ expr }} order by {{ order_by }})
{%- endmacro %}

{% macro snowflake__array_agg_ordered(expr, order_by) -%}
array_agg({{ expr }}) within group (order by {{ order_by }})
{%- endmacro %}
