select
    cast(db_id as varchar) as db_id,
    cast(question as varchar) as question,
    cast(sql as varchar) as sql_text,
    cast(origin as varchar) as origin
from {{ source('catalog', 'examples') }}
