-- What the re-rank maps question phrases to: one row per column with its short phrase text
-- ("<table label> <column label>"), the phrase embedder's vector of it, the normalised name
-- tokens for exact matches, sample-value tokens for value matches, and its table's connected
-- part. Rebuilt on every build: the static phrase embedder embeds 500k labels in seconds.
with labelled as (
    select
        c.column_key,
        c.db_id,
        c.table_name,
        c.column_name,
        coalesce(nullif(t.table_label, ''), c.table_name) || ' ' || coalesce(nullif(c.column_label, ''), c.column_name) as phrase_text,
        dbrouter_label_tokens({{ dbrouter.array_literal(['c.table_name', 't.table_label', 'c.column_name', 'c.column_label']) }}) as label_tokens,
        dbrouter_label_tokens(c.sample_values) as value_tokens,
        p.component,
        p.declared_component
    from {{ ref('kb_columns') }} as c
    join {{ ref('kb_tables') }} as t on t.table_key = c.table_key
    join {{ ref('kb_table_components') }} as p on p.table_key = c.table_key
)
select *, '{{ dbrouter.embedder_label() }}' as phrase_model, {{ dbrouter.embed_phrase_sql('phrase_text') }} as embedding
from labelled
