select
    cast(statement_hash as varchar) as statement_hash,
    cast(db_id as varchar) as db_id,
    cast(expression as varchar) as expression,
    cast(snippet as varchar) as snippet,
    cast(status as varchar) as structure_status,
    "references" as referenced_columns,
    problems,
    cast(model as varchar) as llm_model
from {{ source('llm', 'statement_structures') }}
