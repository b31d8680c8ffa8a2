select
    cast(db_id as varchar) as db_id,
    cast(object_name as varchar) as object_name,
    cast(severity as varchar) as severity,
    cast(message as varchar) as message
from {{ source('catalog', 'issues') }}
