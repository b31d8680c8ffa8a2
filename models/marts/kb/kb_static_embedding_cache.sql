-- Static (phrase-embedder) vectors of the KB's documents, by the document's content hash, for
-- the pure-SQL query path. Incremental like kb_embedding_cache: a rebuild embeds only new
-- hashes (the hash already includes the embedder's name).
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
    dbrouter_static_model() as embedding_model,
    embed_phrase(document_text) as embedding,
    current_timestamp as embedded_at,
    '{{ invocation_id }}' as invocation_id
from todo
