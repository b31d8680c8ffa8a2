-- Question/SQL examples with their descriptors (what the example cascade searches).
-- question_key: the question as routing compares it for an exact match (macro question_key).
select
    example_id, db_id, question, sql_text, origin, described_by, normalized_question, main_clause,
    requested_entities, paraphrases, tables_used, columns_used, sql_parsed,
    {{ dbrouter.question_key('question') }} as question_key
from {{ ref('int_examples_described') }}
