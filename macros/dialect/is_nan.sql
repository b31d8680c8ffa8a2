{#- True when the float expression is NaN (a cosine with a zero vector). -#}
{% macro is_nan(expr) -%}
  {{ return(adapter.dispatch('is_nan', 'dbrouter')(expr)) }}
{%- endmacro %}

{% macro default__is_nan(expr) -%}
isnan({{ expr }})
{%- endmacro %}

{#- Snowflake: NaN equals itself ('NaN'::float = 'NaN'::float is true there). -#}
{% macro snowflake__is_nan(expr) -%}
({{ expr }} = 'NaN'::float)
{%- endmacro %}
