{#- True when every element of the array `needles` is in the array `haystack`. -#}
{% macro list_has_all(haystack, needles) -%}
  {{ return(adapter.dispatch('list_has_all', 'dbrouter')(haystack, needles)) }}
{%- endmacro %}

{% macro default__list_has_all(haystack, needles) -%}
list_has_all({{ haystack }}, {{ needles }})
{%- endmacro %}

{#- Snowflake: no list_has_all; "nothing of needles is missing from haystack". -#}
{% macro snowflake__list_has_all(haystack, needles) -%}
(array_size(array_except({{ needles }}, {{ haystack }})) = 0)
{%- endmacro %}
