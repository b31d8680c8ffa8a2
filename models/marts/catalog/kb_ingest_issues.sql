-- Everything that went wrong while ingesting or assembling the KB, naming database and object.
select db_id, object_name, severity, message from {{ ref('stg_catalog__issues') }}
union all
select db_id, 'example: ' || left(question, 60), 'warning',
       'example for a database that is not ingested; not used'
from {{ ref('int_examples_unioned') }} where not has_known_database
union all
select db_id, 'statement: ' || left(statement_text, 60), 'warning',
       'statement for a database that is not ingested; not used'
from {{ ref('int_statements_unioned') }} where not has_known_database
