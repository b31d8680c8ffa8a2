{#- Number of elements of a list/array column (NULL for NULL). -#}
{% macro array_size(expr) -%}
  {{ return(adapter.dispatch('array_size', 'dbrouter')(expr)) }}
{%- endmacro %}

{% macro default__array_size(expr) -%}
len({{ expr }})
{%- endmacro %}

{#- Snowflake's LEN is the length of a string; arrays have ARRAY_SIZE. -#}
{% macro snowflake__array_size(expr) -%}
array_size({{ expr }})
{%- endmacro %}
