{#-
  SQL expression embedding a short phrase (question spans, column labels) for the routing
  re-rank, with the phrase embedder paired with the document embedder.

  Args:
    text_expr: SQL expression of the phrase.
-#}
{% macro embed_phrase_sql(text_expr) -%}
  {{ return(adapter.dispatch('embed_phrase_sql', 'dbrouter')(text_expr)) }}
{%- endmacro %}

{% macro default__embed_phrase_sql(text_expr) -%}
embed_phrase({{ text_expr }})
{%- endmacro %}

{#- Snowflake: the embed_phrase() Python UDF with python_udf; Cortex has no static phrase model,
    so with a Cortex embedder phrases are embedded by the same Cortex model as documents. -#}
{% macro snowflake__embed_phrase_sql(text_expr) -%}
{%- if dbrouter.snowflake_embedder() == 'python_udf' -%}
cast(embed_phrase({{ text_expr }}) as {{ dbrouter.vector_type(dbrouter.embedding_dim()) }})
{%- else -%}
{{ dbrouter.embed_sql(text_expr) }}
{%- endif -%}
{%- endmacro %}
