-- One text document per column, table, database, example and statement.
--   column   : name, label, table, type, key declarations, description, sample values
--              (the column-document format of column-level schema retrievers);
--   table    : its name, label, description and column labels (DDL text: kb_tables.table_ddl);
--   database : its tables with their column labels and its description;
--   example  : the example question, plus one document per descriptor (example_normalized,
--              example_main_clause, example_entities, example_paraphrase);
--   statement : its canonical expression (or whole text).
-- `document_text` is what is embedded; `content_hash` includes the embedding model name, so
-- switching models re-embeds and an unchanged document is never embedded twice.
with cols as (
    select * from {{ ref('int_columns_keyed') }}
),
tables as (
    select * from {{ ref('int_tables_described') }}
),
dbs as (
    select * from {{ ref('stg_catalog__databases') }}
),
column_docs as (
    select
        'column' as doc_kind,
        column_key as doc_id,
        db_id,
        table_name,
        column_name,
        table_name || '.' || column_name as doc_label,
        'column: ' || column_name || ' (' || column_label || ')'
        || ' | table: ' || table_name
        || ' | type: ' || coalesce(nullif(data_type, ''), 'unknown')
        || case when is_primary_key then ' | primary key' else '' end
        || case when is_foreign_key then ' | foreign key to ' || references_text else '' end
        || coalesce(' | description: ' || column_description, '')
        || coalesce(' | values: ' || value_description, '')
        || case when {{ dbrouter.array_size('sample_values') }} > 0 then ' | examples: ' || array_to_string(sample_values, ', ') else '' end
        as document_text,
        column_key as source_id
    from cols
),
table_docs as (
    select
        'table' as doc_kind,
        t.db_id || '.' || t.table_name as doc_id,
        t.db_id,
        t.table_name,
        cast(null as varchar) as column_name,
        t.table_name as doc_label,
        'table ' || t.table_name || ' (' || t.table_label || ')'
        || coalesce(': ' || t.table_description, '')
        || ' | columns: ' || coalesce(t.column_labels, '')
        || coalesce(' | date-sharded: ' || cast(t.shard_count as varchar) || ' shards ' || t.first_shard
                    || ' .. ' || t.last_shard, '')
        as document_text,
        t.table_key as source_id
    from tables as t
),
db_tables as (
    select
        db_id,
        {{ dbt.listagg("table_name || ' (' || coalesce(column_labels, '') || ')'", "'; '", "order by table_name") }} as tables_text
    from tables
    group by 1
),
database_docs as (
    select
        'database' as doc_kind,
        d.db_id as doc_id,
        d.db_id,
        cast(null as varchar) as table_name,
        cast(null as varchar) as column_name,
        d.db_id as doc_label,
        'database ' || d.db_id || ' (' || {{ dbrouter.regexp_replace_all('d.db_id', '[_\\W]+', ' ') }} || ')'
        || coalesce(': ' || d.database_description, '')
        || ' | tables: ' || coalesce(dt.tables_text, '')
        as document_text,
        d.db_id as source_id
    from dbs as d
    left join db_tables as dt on dt.db_id = d.db_id
),
example_docs as (
    select 'example', example_id, db_id, null, null, sql_text, question, example_id
    from {{ ref('int_examples_described') }}
),
example_descriptor_docs as (
    select 'example_normalized', example_id, db_id, null, null, sql_text, normalized_question, example_id
    from {{ ref('int_examples_described') }} where nullif(normalized_question, '') is not null
    union all
    select 'example_main_clause', example_id, db_id, null, null, sql_text, main_clause, example_id
    from {{ ref('int_examples_described') }} where nullif(main_clause, '') is not null
    union all
    select 'example_entities', example_id, db_id, null, null, sql_text, array_to_string(requested_entities, '; '), example_id
    from {{ ref('int_examples_described') }} where {{ dbrouter.array_size('requested_entities') }} > 0
    union all
    select 'example_paraphrase', example_id || '#' || cast(element_index as varchar), db_id, null, null, sql_text, element, example_id
    from ({{ dbrouter.unnest_indexed(ref('int_examples_described'), 'paraphrases', ['example_id', 'db_id', 'sql_text']) }}) as p
),
statement_docs as (
    -- the canonical expression (text part) is embedded: it is what sub-string retrieval matches
    select 'statement', statement_id, db_id, null, null, statement_text, retrieval_text, statement_id
    from {{ ref('int_statements_structured') }}
),
all_docs as (
    select * from column_docs
    union all select * from table_docs
    union all select * from database_docs
    union all select * from example_docs
    union all select * from example_descriptor_docs
    union all select * from statement_docs
)
select
    doc_kind || ':' || doc_id as document_id,
    doc_kind,
    db_id,
    table_name,
    column_name,
    doc_label,
    document_text,
    source_id,
    {{ dbt.hash("'" ~ dbrouter.embedder_label() ~ "' || chr(0) || document_text") }} as content_hash
from all_docs
