{#- The form two questions are compared in for an exact example match: lower case, every run of
    characters that is not a letter or digit one space, trimmed ("How many singers?" and
    "how many  singers" are the same question). Both sides always go through this macro, so the
    dialects need only agree with themselves. -#}
{% macro question_key(expr) -%}
  {{ return(adapter.dispatch('question_key', 'dbrouter')(expr)) }}
{%- endmacro %}

{% macro default__question_key(expr) -%}
trim(regexp_replace(lower({{ expr }}), '[^\p{L}\p{N}]+', ' ', 'g'))
{%- endmacro %}

{#- Snowflake: REGEXP_REPLACE replaces every match by default; POSIX classes instead of \p{}. -#}
{% macro snowflake__question_key(expr) -%}
trim(regexp_replace(lower({{ expr }}), '[^[:alnum:]]+', ' '))
{%- endmacro %}
