-- What the re-rank maps question phrases to: one row per column with its short phrase text
-- ("<table label> <column label>"), the phrase embedder's vector of it, the normalised name
-- tokens for exact matches, sample-value tokens for value matches, and its table's connected
-- part. Rebuilt on every build: the static phrase embedder embeds 500k labels in seconds.
--   label_tokens      tokens of the table and column names/labels
--   column_tokens     tokens of the column's own name/label: a phrase is an exact name match of
--                     a column when all its words are label tokens and one of them names the
--                     column, or when it names only the table and the column represents it
--   represents_table  the table's first primary-key column (else its first column): what a
--                     phrase naming just the table ("singers") maps to exactly
--   value_tokens      tokens of the column's short sample values (dbrouter_value_tokens: free
--                     text gives none, so a word inside a comment is no value match)
with labelled as (
    select
        c.column_key,
        c.db_id,
        c.table_name,
        c.column_name,
        coalesce(nullif(t.table_label, ''), c.table_name) || ' ' || coalesce(nullif(c.column_label, ''), c.column_name) as phrase_text,
        dbrouter_label_tokens({{ dbrouter.array_literal(['c.table_name', 't.table_label', 'c.column_name', 'c.column_label']) }}) as label_tokens,
        dbrouter_label_tokens({{ dbrouter.array_literal(['c.column_name', 'c.column_label']) }}) as column_tokens,
        row_number() over (partition by c.table_key
                           order by case when c.is_primary_key then 0 else 1 end, c.ordinal_position, c.column_name) = 1 as represents_table,
        dbrouter_value_tokens(c.sample_values) as value_tokens,
        p.component,
        p.declared_component
    from {{ ref('kb_columns') }} as c
    join {{ ref('kb_tables') }} as t on t.table_key = c.table_key
    join {{ ref('kb_table_components') }} as p on p.table_key = c.table_key
)
select *, '{{ dbrouter.embedder_label() }}' as phrase_model, {{ dbrouter.embed_phrase_sql('phrase_text') }} as embedding
from labelled
