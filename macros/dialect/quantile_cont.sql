{#- The continuous quantile q (0..1) of an aggregate's values (interpolated, NULLs ignored). -#}
{% macro quantile_cont(expr, q) -%}
  {{ return(adapter.dispatch('quantile_cont', 'dbrouter')(expr, q)) }}
{%- endmacro %}

{% macro default__quantile_cont(expr, q) -%}
quantile_cont({{ expr }}, {{ q }})
{%- endmacro %}

{#- Snowflake: the ordered-set aggregate PERCENTILE_CONT. -#}
{% macro snowflake__quantile_cont(expr, q) -%}
percentile_cont({{ q }}) within group (order by {{ expr }})
{%- endmacro %}
