{#-
  SQL expression embedding a text expression with the warehouse's document embedder (NULL for
  NULL or blank text). The routing entry points embed questions with the same expression, so a
  KB's vectors and its questions' vectors always come from one model.

  Args:
    text_expr: SQL expression of the text.
-#}
{% macro embed_sql(text_expr) -%}
  {{ return(adapter.dispatch('embed_sql', 'dbrouter')(text_expr)) }}
{%- endmacro %}

{#- DuckDB (and any adapter with the profile plugin): the embed() UDF of python_udfs.plugin. -#}
{% macro default__embed_sql(text_expr) -%}
embed({{ text_expr }})
{%- endmacro %}

{#- Snowflake: Cortex EMBED_TEXT_768/1024 (a VECTOR already), or the embed() Python UDF made by
    create_snowflake_udfs, whose ARRAY is cast to VECTOR. Cortex rejects empty input, so blank
    text is NULL before the call, as the DuckDB UDF makes it. -#}
{% macro snowflake__embed_sql(text_expr) -%}
{%- set kind = dbrouter.snowflake_embedder() -%}
{%- if kind == 'python_udf' -%}
cast(embed({{ text_expr }}) as {{ dbrouter.vector_type(dbrouter.embedding_dim()) }})
{%- else -%}
iff(nullif(trim({{ text_expr }}), '') is null, null,
    snowflake.cortex.{{ 'embed_text_768' if kind == 'cortex_768' else 'embed_text_1024' }}('{{ dbrouter.snowflake_cortex_model() }}', {{ text_expr }}))
{%- endif -%}
{%- endmacro %}
