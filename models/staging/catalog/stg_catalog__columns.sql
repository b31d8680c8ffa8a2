select
    cast(db_id as varchar) as db_id,
    cast(table_name as varchar) as table_name,
    cast(column_name as varchar) as column_name,
    cast(column_label as varchar) as column_label,
    cast(ordinal as integer) as ordinal_position,
    lower(cast(data_type as varchar)) as data_type,
    cast(is_primary_key as boolean) as is_primary_key,
    nullif(trim(description), '') as column_description,
    nullif(trim(value_description), '') as value_description,
    sample_values
from {{ source('catalog', 'columns') }}
