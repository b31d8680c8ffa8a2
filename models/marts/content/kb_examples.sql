-- Question/SQL examples with their descriptors (what the example cascade searches).
select
    example_id, db_id, question, sql_text, origin, described_by, normalized_question, main_clause,
    requested_entities, paraphrases, tables_used, columns_used, sql_parsed
from {{ ref('int_examples_described') }}
