{#- A JSON text (json_array_agg's result) as a JSON value inside json_object, not a string. -#}
{% macro json_nest(text_expr) -%}
  {{ return(adapter.dispatch('json_nest', 'dbrouter')(text_expr)) }}
{%- endmacro %}

{% macro default__json_nest(text_expr) -%}
json({{ text_expr }})
{%- endmacro %}

{% macro snowflake__json_nest(text_expr) -%}
parse_json({{ text_expr }})
{%- endmacro %}
