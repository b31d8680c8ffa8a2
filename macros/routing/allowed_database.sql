{#-
  A condition: `column` names a database the caller may see. Routing reads the candidates through
  it before ranking, so a hidden database is never scored, mentioned or counted.

  Args:
    column: SQL expression of a db_id.
-#}
{% macro allowed_database(column) -%}
  {{ return(adapter.dispatch('allowed_database', 'dbrouter')(column)) }}
{%- endmacro %}

{#- The KB's view kb_allowed_databases holds the caller's scope: on DuckDB the session variable
    dbrouter_allowed_databases, on Snowflake the grants of the session's roles (every database
    when neither is set). -#}
{% macro default__allowed_database(column) -%}
{{ column }} in (select db_id from {{ dbrouter.kb_relation('kb_allowed_databases') }})
{%- endmacro %}
