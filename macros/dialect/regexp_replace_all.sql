{#- Every match of a regular expression replaced.

  Args:
    expr: SQL expression of the text.
    pattern: the regular expression as plain text (not a SQL literal: each adapter quotes it).
    replacement: the replacement as plain text.
-#}
{% macro regexp_replace_all(expr, pattern, replacement) -%}
  {{ return(adapter.dispatch('regexp_replace_all', 'dbrouter')(expr, pattern, replacement)) }}
{%- endmacro %}

{#- DuckDB replaces only the first match unless given the 'g' option; backslashes in its string
    literals are plain characters. -#}
{% macro default__regexp_replace_all(expr, pattern, replacement) -%}
regexp_replace({{ expr }}, '{{ pattern | replace("'", "''") }}', '{{ replacement | replace("'", "''") }}', 'g')
{%- endmacro %}

{#- Snowflake replaces every match by default (its 4th argument is a start position, not options),
    and its string literals treat backslash as an escape, so `\W` must be written `\\W`. -#}
{% macro snowflake__regexp_replace_all(expr, pattern, replacement) -%}
regexp_replace({{ expr }}, '{{ pattern | replace("\\", "\\\\") | replace("'", "''") }}', '{{ replacement | replace("\\", "\\\\") | replace("'", "''") }}')
{%- endmacro %}
