select
    cast(db_id as varchar) as db_id,
    cast(statement as varchar) as statement,
    cast(structured as varchar) as structured
from {{ ref('statement_exemplars') }}
