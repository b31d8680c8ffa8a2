{#- The form two questions are compared in for an exact example match: lower case, every run of
    characters that is not a letter or digit one space, trimmed ("How many singers?" and
    "how many  singers" are the same question). Both sides always go through this macro, so the
    dialects need only agree with themselves.

  Args:
    expr: SQL expression of the question text.
    one_row: the expression is one question (the routing query's), not a column of many (the
      examples' mart): a dialect may then take a path that is cheaper for one row and dearer
      for many. The key is the same either way.
-#}
{% macro question_key(expr, one_row=false) -%}
  {{ return(adapter.dispatch('question_key', 'dbrouter')(expr, one_row)) }}
{%- endmacro %}

{% macro default__question_key(expr, one_row=false) -%}
trim(regexp_replace(lower({{ expr }}), '[^\p{L}\p{N}]+', ' ', 'g'))
{%- endmacro %}

{#- DuckDB compiles a constant pattern once per execution, and RE2 compiling the Unicode letter
    and digit classes costs ~1.4 ms: most of a routed question's regular-expression time. For one
    question in plain ASCII (as many bytes as characters) the classes are [a-z0-9] once lower-cased,
    a pattern that compiles in microseconds; any other text reads the same Unicode pattern, made
    non-constant so that it is compiled only for a row that reaches it. Over a column that would
    be a compile per non-ASCII row, so the examples' mart keeps the constant pattern. -#}
{% macro duckdb__question_key(expr, one_row=false) -%}
{%- if one_row -%}
(select case when strlen(k.t) = length(k.t) then trim(regexp_replace(k.t, '[^a-z0-9]+', ' ', 'g'))
             else trim(regexp_replace(k.t, '[^\p{L}\p{N}]+' || left(k.t, 0), ' ', 'g')) end
 from (select lower({{ expr }}) as t) as k)
{%- else -%}
{{ dbrouter.default__question_key(expr) }}
{%- endif -%}
{%- endmacro %}

{#- Snowflake: REGEXP_REPLACE replaces every match by default; POSIX classes instead of \p{}. -#}
{% macro snowflake__question_key(expr, one_row=false) -%}
trim(regexp_replace(lower({{ expr }}), '[^[:alnum:]]+', ' '))
{%- endmacro %}
