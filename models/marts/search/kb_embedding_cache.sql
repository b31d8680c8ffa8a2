-- Vectors by content hash. Incremental (append): a build embeds only the documents whose
-- hash is not cached yet, so an unchanged KB embeds nothing and a changed database re-embeds
-- only its changed documents. The hash includes the embedder's name as registered on the
-- connection (embedder_label), which also labels each vector here.
{{ config(materialized='incremental', incremental_strategy='append', unique_key='content_hash') }}

with docs as (
    select content_hash, min(document_text) as document_text
    from {{ ref('kb_documents') }}
    group by 1
)
{% if is_incremental() %}
, todo as (
    select docs.* from docs
    where not exists (select 1 from {{ this }} as c where c.content_hash = docs.content_hash)
)
{% else %}
, todo as (select * from docs)
{% endif %}
select
    content_hash,
    '{{ dbrouter.embedder_label() }}' as embedding_model,
    {{ dbrouter.embed_sql('document_text') }} as embedding,
    current_timestamp as embedded_at,
    '{{ invocation_id }}' as invocation_id
from todo
