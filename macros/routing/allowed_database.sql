{#-
  A condition: `column` names a database the caller may see. Routing reads the candidates through
  it before ranking, so a hidden database is never scored, mentioned or counted.

  Args:
    column: SQL expression of a db_id.
-#}
{% macro allowed_database(column) -%}
  {{ return(adapter.dispatch('allowed_database', 'dbrouter')(column)) }}
{%- endmacro %}

{#- Snowflake: there is no session list to filter on yet (README "Who may see what"). -#}
{% macro default__allowed_database(column) -%}
true
{%- endmacro %}

{#- DuckDB: the KB's view kb_allowed_databases, which reads the session variable
    dbrouter_allowed_databases (every database when it is unset). -#}
{% macro duckdb__allowed_database(column) -%}
{{ column }} in (select db_id from {{ dbrouter.kb_relation('kb_allowed_databases') }})
{%- endmacro %}
