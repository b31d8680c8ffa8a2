-- Columns with their type family, key flags and declared foreign-key targets.
with cols as (
    {#- a date shard other than its group's kept one is not a table of the KB -#}
    select c.* from {{ ref('stg_catalog__columns') }} as c
    join {{ ref('int_table_shards_grouped') }} as s on s.db_id = c.db_id and s.table_name = c.table_name
    where s.is_kept
),
fk as (
    select
        db_id, table_name, column_name,
        {{ dbt.listagg("ref_table_name || '.' || ref_column_name", "', '", "order by ref_table_name, ref_column_name") }} as references_text
    from {{ ref('int_foreign_keys_validated') }}
    group by 1, 2, 3
),
pk_counts as (
    select db_id, table_name, count(*) as n_primary_key_columns
    from cols where is_primary_key
    group by 1, 2
)
select
    cols.db_id || '.' || cols.table_name || '.' || cols.column_name as column_key,
    cols.db_id || '.' || cols.table_name as table_key,
    cols.db_id,
    cols.table_name,
    cols.column_name,
    cols.column_label,
    cols.ordinal_position,
    cols.data_type,
    {{ dbrouter.type_family('cols.data_type') }} as type_family,
    cols.is_primary_key,
    coalesce(pk_counts.n_primary_key_columns, 0) = 1 and cols.is_primary_key as is_single_primary_key,
    fk.references_text is not null as is_foreign_key,
    fk.references_text,
    cols.column_description,
    cols.value_description,
    cols.sample_values
from cols
left join fk
    on fk.db_id = cols.db_id and fk.table_name = cols.table_name and fk.column_name = cols.column_name
left join pk_counts
    on pk_counts.db_id = cols.db_id and pk_counts.table_name = cols.table_name
