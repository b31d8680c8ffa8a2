select
    cast(probe_id as integer) as probe_id,
    cast(kind as varchar) as kind,
    cast(question as varchar) as question
from {{ ref('offtopic_probes') }}
