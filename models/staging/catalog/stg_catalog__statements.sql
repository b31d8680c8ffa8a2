select
    cast(db_id as varchar) as db_id,
    cast(statement as varchar) as statement_text,
    cast(origin as varchar) as origin
from {{ source('catalog', 'statements') }}
