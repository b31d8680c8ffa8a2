-- Declared ∪ implied edges, each in both directions, one row per column pair and direction.
-- A pair that is declared keeps rule 'declared_foreign_key' even if a naming rule also finds it.
with declared as (
    select db_id, table_name, column_name, ref_table_name, ref_column_name,
           'declared_foreign_key' as rule, true as is_declared
    from {{ ref('int_foreign_keys_validated') }}
),
implied as (
    select db_id, table_name, column_name, ref_table_name, ref_column_name, rule, false as is_declared
    from {{ ref('int_join_edges_inferred') }}
),
one_way as (
    select * from declared
    union all
    select * from implied
),
both_ways as (
    select db_id, table_name as from_table, column_name as from_column,
           ref_table_name as to_table, ref_column_name as to_column, rule, is_declared
    from one_way
    union all
    select db_id, ref_table_name, ref_column_name, table_name, column_name, rule, is_declared
    from one_way
),
ranked as (
    select *,
        row_number() over (
            partition by db_id, from_table, from_column, to_table, to_column
            order by is_declared desc, rule
        ) as rn
    from both_ways
    where not (from_table = to_table and from_column = to_column)
)
select db_id, from_table, from_column, to_table, to_column, rule, is_declared
from ranked
where rn = 1
