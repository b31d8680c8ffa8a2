{#- Text value of a top-level key of a JSON *text* column (json_at reads a path of a JSON value: on
    Snowflake a VARIANT, so text must be parsed first, which this macro does). -#}
{% macro json_get(json_text, key) -%}
  {{ return(adapter.dispatch('json_get', 'dbrouter')(json_text, key)) }}
{%- endmacro %}

{% macro default__json_get(json_text, key) -%}
json_extract_string({{ json_text }}, '$.{{ key }}')
{%- endmacro %}

{#- Snowflake parses JSON into a VARIANT and reads keys with the colon path syntax. -#}
{% macro snowflake__json_get(json_text, key) -%}
parse_json({{ json_text }}):{{ key }}::varchar
{%- endmacro %}
