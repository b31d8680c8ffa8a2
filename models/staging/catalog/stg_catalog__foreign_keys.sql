select
    cast(db_id as varchar) as db_id,
    cast(table_name as varchar) as table_name,
    cast(column_name as varchar) as column_name,
    cast(ref_table as varchar) as ref_table_name,
    cast(ref_column as varchar) as ref_column_name
from {{ source('catalog', 'foreign_keys') }}
