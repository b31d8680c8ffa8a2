{#- A JSON object (DuckDB JSON, Snowflake OBJECT) from `pairs`, a list of (key, SQL expression);
    keys whose value is NULL are kept on both engines. -#}
{% macro json_object(pairs) -%}
  {{ return(adapter.dispatch('json_object', 'dbrouter')(pairs)) }}
{%- endmacro %}

{% macro default__json_object(pairs) -%}
json_object({% for key, value in pairs %}'{{ key }}', {{ value }}{{ ', ' if not loop.last }}{% endfor %})
{%- endmacro %}

{% macro snowflake__json_object(pairs) -%}
object_construct_keep_null({% for key, value in pairs %}'{{ key }}', {{ value }}{{ ', ' if not loop.last }}{% endfor %})
{%- endmacro %}
