-- Date-sharded tables (`events_20240101`, `events_20240102`, ...: one table per day or month,
-- as BigQuery exports and many warehouses keep them) recognised and kept as one logical table:
-- tables of a database whose names differ only in a date suffix (date_shard_base) and whose
-- columns are identical (names, types, order) form a group; its last shard by name (the latest
-- date) is the table the KB keeps, documents and embeds once, listed with the group's size and
-- first and last shard. Every other table is its own group of one.
with cols as (
    select db_id, table_name,
        {{ dbt.listagg("lower(column_name) || ' ' || lower(coalesce(data_type, ''))", "','", "order by ordinal_position") }} as column_signature
    from {{ ref('stg_catalog__columns') }}
    group by 1, 2
),
candidates as (
    select t.db_id, t.table_name, {{ dbrouter.date_shard_base('t.table_name') }} as shard_base, c.column_signature
    from {{ ref('stg_catalog__tables') }} as t
    left join cols as c on c.db_id = t.db_id and c.table_name = t.table_name
),
groups as (
    select db_id, shard_base, column_signature, count(*) as shard_count,
        min(table_name) as first_shard, max(table_name) as last_shard
    from candidates
    where shard_base is not null and column_signature is not null
    group by 1, 2, 3
    having count(*) > 1
)
select
    c.db_id,
    c.table_name,
    coalesce(g.last_shard, c.table_name) as logical_table,
    coalesce(g.shard_count, 1) as shard_count,
    g.first_shard,
    g.last_shard,
    case when g.shard_count is not null then c.shard_base || '_*' end as shard_pattern,
    coalesce(g.last_shard, c.table_name) = c.table_name as is_kept
from candidates as c
left join groups as g
  on g.db_id = c.db_id and g.shard_base = c.shard_base and g.column_signature = c.column_signature
