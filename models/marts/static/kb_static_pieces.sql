{{ config(enabled=(target.type == 'duckdb')) }}
{#- The pure-SQL query path is DuckDB's; Snowflake routes through its own SQL functions. -#}
{% if target.type == 'duckdb' %}
-- depends_on: {{ ref('kb_documents') }}
-- depends_on: {{ ref('kb_column_phrases') }}
-- The static phrase embedder as a table, so that a plain DuckDB client can embed a question in
-- SQL: one row per piece with its raw (unnormalised) vector. A text's static vector is the sum
-- of its pieces' vectors (model2vec's normalised mean points the same way; cosine ignores scale).
--   wordpiece: the model's whole WordPiece vocabulary ('##' marks a word continuation);
--   hash:      the hash embedder's features of every word of the KB's texts (the word, and
--              '#' + each character trigram): a question word absent from the KB loses its
--              whole-word feature in SQL (the test-suite measures that approximation).
with pieces as (
{% if dbrouter.static_tokenizer() == 'hash' %}
    select distinct unnest(regexp_extract_all(lower(t), '[\p{L}\p{N}_]+')) as word
    from (
        select document_text as t from {{ ref('kb_documents') }}
        union all
        select phrase_text from {{ ref('kb_column_phrases') }}
    )
), features as (
    select word as piece from pieces
    union
    select '#' || substr(word, i + 1, 3)
    from (select word, unnest(range(greatest(1, length(word) - 2))) as i from pieces)
)
select piece, dbrouter_static_piece_vector(piece) as embedding from features
{% else %}
    select unnest(dbrouter_static_pieces()) as piece
)
select piece, dbrouter_static_piece_vector(piece) as embedding from pieces
{% endif %}
{% endif %}
