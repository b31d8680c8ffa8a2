-- Question/SQL examples from the files named in the sources file and from the CLI (`dbrouter
-- examples add`), restricted to ingested databases (an example for an unknown db_id is reported,
-- not routed to).
with all_examples as (
    select db_id, question, sql_text, origin from {{ ref('stg_catalog__examples') }}
    union all
    select db_id, question, sql_text, origin from {{ ref('stg_user__examples') }}
)
select
    {{ dbt.hash("e.db_id || chr(0) || e.question || chr(0) || e.sql_text") }} as example_id,
    e.db_id,
    trim(e.question) as question,
    trim(e.sql_text) as sql_text,
    min(e.origin) as origin,
    d.db_id is not null as has_known_database
from all_examples as e
left join {{ ref('stg_catalog__databases') }} as d on d.db_id = e.db_id
where nullif(trim(e.question), '') is not null
group by 1, 2, 3, 4, 6
