{#-
  The Snowflake embedder chosen by var dbrouter__snowflake_embedder:
    cortex_768  (default) SNOWFLAKE.CORTEX.EMBED_TEXT_768, model dbrouter__snowflake_cortex_model
                or snowflake-arctic-embed-m-v1.5;
    cortex_1024 SNOWFLAKE.CORTEX.EMBED_TEXT_1024, model dbrouter__snowflake_cortex_model or
                snowflake-arctic-embed-l-v2.0;
    python_udf  the embed()/embed_phrase() Python UDFs made by create_snowflake_udfs from
                python_udfs/ (embedder dbrouter__snowflake_python_embedder).
  Returns: the validated name.
-#}
{% macro snowflake_embedder() -%}
{%- set kind = dbrouter.get_var('dbrouter__snowflake_embedder') -%}
{%- if kind not in ('cortex_768', 'cortex_1024', 'python_udf') -%}
  {{ exceptions.raise_compiler_error("snowflake_embedder: adapter " ~ adapter.type() ~ ", var dbrouter__snowflake_embedder must be cortex_768, cortex_1024 or python_udf, got " ~ kind) }}
{%- endif -%}
{{ return(kind) }}
{%- endmacro %}
