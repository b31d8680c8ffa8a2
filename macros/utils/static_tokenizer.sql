{#-
  How the pure-SQL routing path splits text for this build's phrase embedder, read from the
  `dbrouter_static_tokenizer()` UDF of the profile plugin: 'wordpiece' (model2vec over the BERT
  tokenizer: embedders minilm and m2v) or 'hash' (the hash embedder's words and trigrams).

  Returns: the tokenizer kind (an empty string while dbt only parses).
-#}
{% macro static_tokenizer() -%}
  {{ return(adapter.dispatch('static_tokenizer', 'dbrouter')()) }}
{%- endmacro %}

{% macro default__static_tokenizer() -%}
  {{ exceptions.raise_compiler_error("static_tokenizer: adapter " ~ adapter.type() ~ " is not supported yet (argument: none); DuckDB is supported") }}
{%- endmacro %}

{#- DuckDB: the UDF answers on the build connection; embedder_label has already checked that
    the plugin is registered. -#}
{% macro duckdb__static_tokenizer() -%}
{%- if not execute -%}{{ return('') }}{%- endif -%}
{%- set kind = run_query("select dbrouter_static_tokenizer()").columns[0].values()[0] -%}
{%- if kind not in ('wordpiece', 'hash') -%}
  {{ exceptions.raise_compiler_error("static_tokenizer: adapter " ~ adapter.type() ~ ": dbrouter_static_tokenizer() returned '" ~ kind ~ "', expected wordpiece or hash (argument: none); reinstall dbrouter so plugin and macros match") }}
{%- endif -%}
{{ return(kind) }}
{%- endmacro %}
