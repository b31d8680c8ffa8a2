select
    cast(db_id as varchar) as db_id,
    cast(statement as varchar) as statement_text,
    'seed:domain_statements' as origin
from {{ ref('domain_statements') }}
where {{ var('dbrouter__use_seeds') }}
