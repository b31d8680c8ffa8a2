select
    cast(db_id as varchar) as db_id,
    cast(question as varchar) as question,
    cast(sql as varchar) as sql_text,
    'seed:examples' as origin
from {{ ref('examples') }}
where {{ var('dbrouter__use_seeds') }}
