{#- Dimension of the KB's document vectors. -#}
{% macro embedding_dim() -%}
  {{ return(adapter.dispatch('embedding_dim', 'dbrouter')()) }}
{%- endmacro %}

{% macro default__embedding_dim() -%}
{{ return(dbrouter.get_var('dbrouter__embedding_dim') | int) }}
{%- endmacro %}

{#- Snowflake: fixed by the Cortex function (768 / 1024); the Python UDF embedders give
    dbrouter__embedding_dim (384 for the shipped ones). -#}
{% macro snowflake__embedding_dim() -%}
{%- set kind = dbrouter.snowflake_embedder() -%}
{{ return(768 if kind == 'cortex_768' else 1024 if kind == 'cortex_1024' else dbrouter.get_var('dbrouter__embedding_dim') | int) }}
{%- endmacro %}
