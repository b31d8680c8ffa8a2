-- The cross-table invariants of a complete build (also checked in Python after the atomic build
-- swaps, dbrouter.kb.build.kb_problems; here so that a package user's `dbt build` runs them too):
-- every database with tables has as many kb_tables rows as kb_databases.n_tables says, every
-- database with columns is in kb_columns and kb_column_phrases, every database has vectors in
-- kb_document_embeddings, and none of those tables names a database kb_databases lacks.
with present as (
    select 'kb_tables' as mart, db_id from {{ ref('kb_tables') }}
    union all select 'kb_columns', db_id from {{ ref('kb_columns') }}
    union all select 'kb_column_phrases', db_id from {{ ref('kb_column_phrases') }}
    union all select 'kb_document_embeddings', db_id from {{ ref('kb_document_embeddings') }}
),
expected as (
    select 'kb_tables' as mart, db_id from {{ ref('kb_databases') }} where n_tables > 0
    union all select 'kb_columns', db_id from {{ ref('kb_databases') }} where n_columns > 0
    union all select 'kb_column_phrases', db_id from {{ ref('kb_databases') }} where n_columns > 0
    union all select 'kb_document_embeddings', db_id from {{ ref('kb_databases') }}
),
table_counts as (
    select db_id, count(*) as n from {{ ref('kb_tables') }} group by db_id
)
select e.mart, e.db_id, 'missing from the mart' as problem
from expected as e
where not exists (select 1 from present as p where p.mart = e.mart and p.db_id = e.db_id)
union all
select distinct p.mart, p.db_id, 'database not in kb_databases'
from present as p
where p.db_id not in (select db_id from {{ ref('kb_databases') }})
union all
select 'kb_tables', d.db_id, 'kb_tables rows differ from kb_databases.n_tables'
from {{ ref('kb_databases') }} as d
join table_counts as t on t.db_id = d.db_id
where t.n <> d.n_tables
