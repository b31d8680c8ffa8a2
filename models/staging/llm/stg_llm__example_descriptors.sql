select
    cast(example_hash as varchar) as example_hash,
    cast(db_id as varchar) as db_id,
    cast(normalized_question as varchar) as normalized_question,
    cast(main_clause as varchar) as main_clause,
    requested_entities,
    paraphrases,
    cast(model as varchar) as llm_model
from {{ source('llm', 'example_descriptors') }}
