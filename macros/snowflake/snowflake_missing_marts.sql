{#- Which of the named KB marts do not exist in their schema (an empty list while dbt only
    parses). Snowflake validates a SQL UDF's body when it is created, so the routing functions
    are created only when this is empty.

  Args:
    names: a list of mart names.
  Returns: the missing names.
-#}
{% macro snowflake_missing_marts(names) -%}
{%- if names is string -%}
  {{ exceptions.raise_compiler_error("snowflake_missing_marts: adapter " ~ adapter.type() ~ ", argument names must be a list of mart names, got " ~ names) }}
{%- endif -%}
{%- if not execute -%}{{ return([]) }}{%- endif -%}
{%- set missing = [] -%}
{%- for name in names -%}
  {%- set schema = dbrouter.kb_relation(name).split('.')[0] | trim -%}
  {%- if adapter.get_relation(database=target.database, schema=schema, identifier=name) is none -%}
    {%- do missing.append(name) -%}
  {%- endif -%}
{%- endfor -%}
{{ return(missing) }}
{%- endmacro %}
