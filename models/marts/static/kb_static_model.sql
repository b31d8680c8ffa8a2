{{ config(enabled=(target.type == 'duckdb')) }}
{#- The pure-SQL query path is DuckDB's; Snowflake routes through its own SQL functions. -#}
{% if target.type == 'duckdb' %}
-- One row: which static (phrase) embedder the pure-SQL query path reproduces, and how it splits
-- text. The SQL path compares its question vectors only with document vectors labelled
-- `vector_label` (kb_static_embedding_cache: the static model over content words).
select
    dbrouter_embedder() as embedder,
    dbrouter_static_model() as static_model,
    dbrouter_static_model() || '/content-words' as vector_label,
    '{{ dbrouter.static_tokenizer() }}' as tokenizer,
    -- model2vec reads at most 512 pieces of a text; the hash embedder has no limit
    case when '{{ dbrouter.static_tokenizer() }}' = 'wordpiece' then 512 end as max_pieces,
    {{ var('dbrouter__embedding_dim') | int }} as dim
{% endif %}
