-- Per database, its columns as JSON [[table, column, label], ...]: the schema argument of the
-- structuring and example-description UDFs.
select
    db_id,
    cast(to_json(list([table_name, column_name, column_label] order by table_name, ordinal_position)) as varchar) as schema_json
from {{ ref('int_columns_keyed') }}
group by 1
