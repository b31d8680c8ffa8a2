{#- The aggregate (or window function) OR of a boolean expression. -#}
{% macro bool_or_agg(expr) -%}
  {{ return(adapter.dispatch('bool_or_agg', 'dbrouter')(expr)) }}
{%- endmacro %}

{% macro default__bool_or_agg(expr) -%}
bool_or({{ expr }})
{%- endmacro %}

{% macro snowflake__bool_or_agg(expr) -%}
boolor_agg({{ expr }})
{%- endmacro %}
