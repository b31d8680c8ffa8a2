select example_id, db_id, question, sql_text, origin
from {{ ref('int_examples_unioned') }}
where has_known_database
