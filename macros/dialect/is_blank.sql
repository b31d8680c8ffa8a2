{#- True when a text holds nothing but white space (or nothing). -#}
{% macro is_blank(expr) -%}
  {{ return(adapter.dispatch('is_blank', 'dbrouter')(expr)) }}
{%- endmacro %}

{% macro default__is_blank(expr) -%}
regexp_full_match({{ expr }}, '[\s\p{Z}]*')
{%- endmacro %}

{#- Snowflake: REGEXP_LIKE matches the whole text. -#}
{% macro snowflake__is_blank(expr) -%}
regexp_like({{ expr }}, '[[:space:]]*')
{%- endmacro %}
