-- Domain statements as written (structuring comes in a later model; originals are never rewritten).
select statement_id, db_id, statement_text, origin
from {{ ref('int_statements_unioned') }}
where has_known_database
