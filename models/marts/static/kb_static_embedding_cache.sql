-- Static (phrase-embedder) vectors of the KB's documents, by the document's content hash, for
-- the pure-SQL query path: the vector of the document's content words (content_word_list), as
-- the SQL path embeds a question's content words. Without the stop words a mean of static word
-- vectors is far less dominated by "what", "of", "the": on 400 spider-route *train* questions
-- routed against a KB of the other train half, shortlist R@1 0.68 -> 0.72 (content-word
-- questions) -> 0.80 (content-word documents too), after re-rank 0.755 -> 0.79 -> 0.8175.
-- Incremental like kb_embedding_cache: a rebuild embeds only hashes not cached under this
-- label (the hash includes the embedder's name, the label the static model and the recipe).
{{ config(enabled=(target.type == 'duckdb'), materialized='incremental', incremental_strategy='append', unique_key=['content_hash', 'embedding_model']) }}
{#- The pure-SQL query path is DuckDB's; Snowflake routes through its own SQL functions. -#}
{% if target.type == 'duckdb' %}

with docs as (
    select content_hash, min(document_text) as document_text
    from {{ ref('kb_documents') }}
    group by 1
)
{% if is_incremental() %}
, todo as (
    select docs.* from docs
    where not exists (select 1 from {{ this }} as c
                      where c.content_hash = docs.content_hash and c.embedding_model = dbrouter_static_model() || '/content-words')
)
{% else %}
, todo as (select * from docs)
{% endif %}
select
    content_hash,
    dbrouter_static_model() || '/content-words' as embedding_model,
    embed_phrase(array_to_string({{ dbrouter.content_word_list('document_text', 'sw.stop') }}, ' ')) as embedding,
    current_timestamp as embedded_at,
    '{{ invocation_id }}' as invocation_id
from todo, (select list(word) as stop from {{ ref('kb_stop_words') }}) as sw
{% endif %}
