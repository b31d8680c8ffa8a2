{#- A top-level JSON array of strings as a list/array column. -#}
{% macro json_get_list(json_text, key) -%}
  {{ return(adapter.dispatch('json_get_list', 'dbrouter')(json_text, key)) }}
{%- endmacro %}

{% macro default__json_get_list(json_text, key) -%}
from_json(json_extract({{ json_text }}, '$.{{ key }}'), '["VARCHAR"]')
{%- endmacro %}

{#- Snowflake keeps arrays as ARRAY values of a VARIANT. -#}
{% macro snowflake__json_get_list(json_text, key) -%}
parse_json({{ json_text }}):{{ key }}::array
{%- endmacro %}
