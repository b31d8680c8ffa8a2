-- Per table (one per group of date shards, int_table_shards_grouped): its column labels (for the embedded table document) and a DDL-like text
-- (`create table t ( col type /* label: description */, ... );`) for display and prompts.
with cols as (
    select * from {{ ref('int_columns_keyed') }}
),
agg as (
    select
        db_id, table_name, count(*) as n_columns,
        {{ dbt.listagg("column_label", "', '", "order by ordinal_position") }} as column_labels,
        {{ dbt.listagg(
            "'  ' || column_name || ' ' || coalesce(nullif(data_type, ''), 'text')"
            " || case when is_primary_key then ' primary key' else '' end"
            " || case when is_foreign_key then ' references ' || references_text else '' end"
            " || ' /* ' || column_label || coalesce(': ' || column_description, '') || ' */'",
            "',\n'", "order by ordinal_position") }} as column_ddl
    from cols
    group by 1, 2
)
select
    t.db_id || '.' || t.table_name as table_key,
    t.db_id,
    t.table_name,
    t.table_label,
    t.table_description,
    t.row_count,
    t.table_kind,
    coalesce(agg.n_columns, 0) as n_columns,
    s.shard_count,
    s.shard_pattern,
    s.first_shard,
    s.last_shard,
    agg.column_labels,
    'create ' || t.table_kind || ' ' || t.table_name || ' ( /* ' || t.table_label
    || coalesce(': ' || t.table_description, '') || ' */' || chr(10)
    || coalesce(agg.column_ddl, '') || chr(10) || ');' as table_ddl
from {{ ref('stg_catalog__tables') }} as t
join {{ ref('int_table_shards_grouped') }} as s on s.db_id = t.db_id and s.table_name = t.table_name
left join agg on agg.db_id = t.db_id and agg.table_name = t.table_name
where s.is_kept
