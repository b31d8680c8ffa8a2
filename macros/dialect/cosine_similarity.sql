{#- Cosine similarity of two embedding vectors. -#}
{% macro cosine_similarity(left, right) -%}
  {{ return(adapter.dispatch('cosine_similarity', 'dbrouter')(left, right)) }}
{%- endmacro %}

{#- Portable path: the dbrouter_cosine Python UDF registered by python_udfs.plugin. -#}
{% macro default__cosine_similarity(left, right) -%}
dbrouter_cosine({{ left }}, {{ right }})
{%- endmacro %}

{#- DuckDB has a native, vectorised cosine over fixed-size arrays: no Python call per row. -#}
{% macro duckdb__cosine_similarity(left, right) -%}
array_cosine_similarity({{ left }}, {{ right }})
{%- endmacro %}

{#- Snowflake's VECTOR type comes with its own cosine function. -#}
{% macro snowflake__cosine_similarity(left, right) -%}
vector_cosine_similarity({{ left }}, {{ right }})
{%- endmacro %}
