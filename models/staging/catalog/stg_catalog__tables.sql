select
    cast(db_id as varchar) as db_id,
    cast(table_name as varchar) as table_name,
    cast(table_label as varchar) as table_label,
    nullif(trim(description), '') as table_description,
    cast(row_count as bigint) as row_count,
    coalesce(cast(table_kind as varchar), 'table') as table_kind
from {{ source('catalog', 'tables') }}
