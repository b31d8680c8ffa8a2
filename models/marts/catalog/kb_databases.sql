-- One row per routable database, with counts and its documents.
with dbs as (select * from {{ ref('stg_catalog__databases') }}),
tables as (
    select db_id, count(*) as n_tables, sum(n_columns) as n_columns,
           {{ dbt.listagg("table_ddl", "chr(10)", "order by table_name") }} as database_ddl
    from {{ ref('int_tables_described') }} group by 1
),
examples as (select db_id, count(*) as n_examples from {{ ref('int_examples_unioned') }} group by 1),
statements as (select db_id, count(*) as n_statements from {{ ref('int_statements_unioned') }} group by 1),
docs as (select db_id, document_text from {{ ref('int_documents_rendered') }} where doc_kind = 'database')
select
    dbs.db_id,
    dbs.source_type,
    dbs.source_path,
    dbs.database_description,
    dbs.ingested_at,
    coalesce(tables.n_tables, 0) as n_tables,
    coalesce(tables.n_columns, 0) as n_columns,
    coalesce(examples.n_examples, 0) as n_examples,
    coalesce(statements.n_statements, 0) as n_statements,
    docs.document_text as database_document,
    tables.database_ddl
from dbs
left join tables on tables.db_id = dbs.db_id
left join examples on examples.db_id = dbs.db_id
left join statements on statements.db_id = dbs.db_id
left join docs on docs.db_id = dbs.db_id
