-- Per database, its columns as JSON [[table, column, label], ...]: the schema argument of the
-- structuring and example-description UDFs.
select
    db_id,
    {{ dbrouter.json_array_agg(dbrouter.array_literal(['table_name', 'column_name', 'column_label']), 'table_name, ordinal_position') }} as schema_json
from {{ ref('int_columns_keyed') }}
group by 1
