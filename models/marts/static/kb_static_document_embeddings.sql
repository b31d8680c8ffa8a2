{{ config(enabled=(target.type == 'duckdb')) }}
{#- The pure-SQL query path is DuckDB's; Snowflake routes through its own SQL functions. -#}
{% if target.type == 'duckdb' %}
-- Current documents with their static vectors: what the pure-SQL path's shortlist and
-- retrieval search (the UDF path searches kb_document_embeddings).
select
    d.document_id, d.doc_kind, d.db_id, d.table_name, d.column_name, d.doc_label, d.source_id, d.content_hash,
    c.embedding_model, c.embedding,
    {{ dbrouter.route_stage('d.doc_kind') }} as route_stage
from {{ ref('kb_documents') }} as d
join {{ ref('kb_static_embedding_cache') }} as c
  on c.content_hash = d.content_hash and c.embedding_model = dbrouter_static_model() || '/content-words'
where c.embedding is not null
{% endif %}
