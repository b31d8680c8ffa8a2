-- The lexical evidence of the re-rank: every normalised token (dbrouter_label_tokens: lower-case,
-- split at _ and camelCase, crudely singularised, as the question's content words are) of a
-- database's table names ('table'), of its table and column names ('name'), of its sample
-- values ('value') and of its stored example questions' content words ('example'), once per
-- database and source. kb_route_token_idf weighs them.
with table_tokens as (
    {{ dbrouter.unnest_indexed(
        "(select db_id, dbrouter_label_tokens(" ~ dbrouter.array_literal(['table_name', 'table_label']) ~ ") as toks from " ~ ref('kb_tables') ~ ")",
        'toks', ['db_id']) }}
),
name_tokens as (
    {{ dbrouter.unnest_indexed(ref('kb_column_phrases'), 'label_tokens', ['db_id']) }}
),
value_tokens as (
    {{ dbrouter.unnest_indexed(ref('kb_column_phrases'), 'value_tokens', ['db_id']) }}
),
example_tokens as (
    {{ dbrouter.unnest_indexed(
        "(select db_id, dbrouter_content_words(question) as toks from " ~ ref('kb_examples') ~ ")",
        'toks', ['db_id']) }}
)
select distinct db_id, element as token, 'table' as source from table_tokens
union all
select distinct db_id, element as token, 'name' as source from name_tokens
union all
select distinct db_id, element as token, 'value' as source from value_tokens
union all
select distinct db_id, element as token, 'example' as source from example_tokens
