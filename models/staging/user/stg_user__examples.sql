select
    cast(db_id as varchar) as db_id,
    cast(question as varchar) as question,
    cast(sql_text as varchar) as sql_text,
    'cli:' || coalesce(added_by, 'unknown') || '@' || cast(added_at as varchar) as origin
from {{ source('user', 'examples') }}
