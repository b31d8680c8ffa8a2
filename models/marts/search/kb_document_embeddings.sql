-- Current documents joined to their cached vectors: what routing searches.
{% if execute and flags.WHICH in ('run', 'build') %}
  {% set embedded = run_query("select count(*) from " ~ ref('kb_embedding_cache') ~ " where invocation_id = '" ~ invocation_id ~ "'") %}
  {% do log("dbrouter: embedded " ~ embedded.columns[0].values()[0] ~ " new or changed documents in this build", info=True) %}
{% endif %}
select
    d.document_id, d.doc_kind, d.db_id, d.table_name, d.column_name, d.doc_label, d.source_id, d.content_hash,
    c.embedding_model, c.embedding,
    {{ dbrouter.route_stage('d.doc_kind') }} as route_stage
from {{ ref('kb_documents') }} as d
join {{ ref('kb_embedding_cache') }} as c on c.content_hash = d.content_hash
where c.embedding is not null
