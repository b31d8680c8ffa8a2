{#-
  A condition: `column` names a database the caller may see. Routing reads the candidates through
  it before ranking, so a hidden database is never scored, mentioned or counted.

  Args:
    column: SQL expression of a db_id.
-#}
{% macro allowed_database(column) -%}
  {{ return(adapter.dispatch('allowed_database', 'dbrouter')(column)) }}
{%- endmacro %}

{#- Snowflake: SQL UDFs resolve names in their own schema, where a session cannot shadow a view;
    access is not filtered there (README "Who may see what"). -#}
{% macro default__allowed_database(column) -%}
true
{%- endmacro %}

{#- DuckDB: the unqualified name is resolved when the macro runs, temp catalog first: the KB's view
    kb_allowed_databases (every database), or a session's temporary view of the same name. -#}
{% macro duckdb__allowed_database(column) -%}
{{ column }} in (select db_id from kb_allowed_databases)
{%- endmacro %}
