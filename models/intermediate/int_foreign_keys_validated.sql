-- Declared foreign keys resolved (case-insensitively) to the canonical table/column names;
-- keys whose ends do not exist were already reported by the ingest and are dropped here.
with fk as (
    select * from {{ ref('stg_catalog__foreign_keys') }}
),
cols as (
    select c.db_id, c.table_name, c.column_name from {{ ref('stg_catalog__columns') }} as c
    join {{ ref('int_table_shards_grouped') }} as s on s.db_id = c.db_id and s.table_name = c.table_name
    where s.is_kept
)
select distinct
    fk.db_id,
    src.table_name,
    src.column_name,
    dst.table_name as ref_table_name,
    dst.column_name as ref_column_name
from fk
join cols as src
    on src.db_id = fk.db_id
   and lower(src.table_name) = lower(fk.table_name)
   and lower(src.column_name) = lower(fk.column_name)
join cols as dst
    on dst.db_id = fk.db_id
   and lower(dst.table_name) = lower(fk.ref_table_name)
   and lower(dst.column_name) = lower(fk.ref_column_name)
