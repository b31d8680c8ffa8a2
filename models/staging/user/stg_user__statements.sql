select
    cast(db_id as varchar) as db_id,
    cast(statement as varchar) as statement_text,
    'cli:' || coalesce(added_by, 'unknown') || '@' || cast(added_at as varchar) as origin
from {{ source('user', 'statements') }}
