-- Domain statements: the original text (verbatim, never rewritten) and the derived structure.
select
    statement_id, db_id, statement_text, origin, structured_by, shape, structure_status,
    expression, snippet, canonical_expression, referenced_columns, problems,
    retrieval_text, retrieval_words
from {{ ref('int_statements_structured') }}
