{#- The embedder name as a SQL expression evaluated when a route function runs: DuckDB asks the
    connection's UDF (the stored macros serve connections with either path registered);
    Snowflake's functions are created for one embedder, whose label is fixed at build time. -#}
{% macro runtime_embedder() -%}
  {{ return(adapter.dispatch('runtime_embedder', 'dbrouter')()) }}
{%- endmacro %}

{% macro default__runtime_embedder() -%}
dbrouter_embedder()
{%- endmacro %}

{% macro snowflake__runtime_embedder() -%}
'{{ dbrouter.embedder_label() }}'
{%- endmacro %}
