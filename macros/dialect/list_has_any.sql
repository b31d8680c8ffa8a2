{#- True when the arrays `a` and `b` share an element. -#}
{% macro list_has_any(a, b) -%}
  {{ return(adapter.dispatch('list_has_any', 'dbrouter')(a, b)) }}
{%- endmacro %}

{% macro default__list_has_any(a, b) -%}
list_has_any({{ a }}, {{ b }})
{%- endmacro %}

{% macro snowflake__list_has_any(a, b) -%}
arrays_overlap({{ a }}, {{ b }})
{%- endmacro %}
