-- The words each database knows: the content words (dbrouter_content_words, the tokenisation the
-- question gets: stop words dropped, singularised) of its table terms (kb_table_terms: database,
-- table and column names, labels and descriptions), its description, its columns' value
-- descriptions and sample values, its example questions and their paraphrases, and its domain
-- statements. Routing's "nothing here" test (abstain_condition) refuses a question none of whose
-- content words a database the caller may see knows: on 150 spider-route train questions routed
-- against a schema-only KB none had that happen, against 47 of the 84 off-topic probes.
with texts as (
    select db_id, database_description as text from {{ ref('kb_databases') }}
    where nullif(database_description, '') is not null
    union all
    select db_id, value_description from {{ ref('kb_columns') }}
    where nullif(value_description, '') is not null
    union all
    select db_id, array_to_string(sample_values, ' ') from {{ ref('kb_columns') }}
    where {{ dbrouter.array_size('sample_values') }} > 0
    union all
    select db_id, question || ' ' || coalesce(array_to_string(paraphrases, ' '), '') from {{ ref('kb_examples') }}
    union all
    select db_id, statement_text from {{ ref('kb_domain_statements') }}
),
words as (
    select db_id, dbrouter_content_words(text) as toks from texts
)
select distinct db_id, term from {{ ref('kb_table_terms') }}
union
select distinct db_id, element as term
from ({{ dbrouter.unnest_indexed('words', 'toks', ['db_id']) }}) as u
where element is not null
