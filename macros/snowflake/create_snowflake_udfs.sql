{#-
  Creates dbrouter's Python UDFs in the Snowflake KB schema (statements: snowflake_udf_statements).
  Run once per schema, after staging the code (docs/snowflake.md):

      python -m dbrouter.kb.snowflake stage          # PUT the code (and model) zips on the stage
      dbt run-operation create_snowflake_udfs --target snowflake

  and again after upgrading dbrouter or changing dbrouter__snowflake_embedder. The models call
  these UDFs, so `dbt build` on Snowflake needs them first.
-#}
{% macro create_snowflake_udfs() -%}
{%- set statements = dbrouter.snowflake_udf_statements() -%}
{%- for sql in statements -%}
  {%- do run_query(sql) -%}
{%- endfor -%}
{%- do log("dbrouter: created " ~ (statements | length) ~ " UDFs in " ~ target.database ~ " (schemas " ~ target.schema ~ " and the KB schema " ~ dbrouter.snowflake_kb_schema() ~ ")", info=True) -%}
{%- endmacro %}
