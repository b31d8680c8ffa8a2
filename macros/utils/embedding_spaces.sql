{#-
  The document-vector spaces a calibration is computed in, as (column prefix, relation) pairs:
  the UDF path's ('', kb_document_embeddings) everywhere, and the pure-SQL path's
  ('static_', kb_static_document_embeddings) where that path exists (DuckDB). Called from the
  models kb_routing_calibration and kb_example_thresholds, so their refs are recorded at parse.
-#}
{% macro embedding_spaces() -%}
  {{ return(adapter.dispatch('embedding_spaces', 'dbrouter')()) }}
{%- endmacro %}

{% macro default__embedding_spaces() -%}
  {{ return([('', ref('kb_document_embeddings'))]) }}
{%- endmacro %}

{#- DuckDB: the pure-SQL query path's static vectors are calibrated too. -#}
{% macro duckdb__embedding_spaces() -%}
  {{ return([('', ref('kb_document_embeddings')), ('static_', ref('kb_static_document_embeddings'))]) }}
{%- endmacro %}
