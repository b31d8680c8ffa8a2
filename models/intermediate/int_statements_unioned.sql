-- Domain statements from files named in the sources file and from the CLI; originals are kept verbatim.
with all_statements as (
    select db_id, statement_text, origin from {{ ref('stg_catalog__statements') }}
    union all
    select db_id, statement_text, origin from {{ ref('stg_user__statements') }}
)
select
    {{ dbt.hash("s.db_id || chr(0) || s.statement_text") }} as statement_id,
    s.db_id,
    s.statement_text,
    min(s.origin) as origin,
    d.db_id is not null as has_known_database
from all_statements as s
left join {{ ref('stg_catalog__databases') }} as d on d.db_id = s.db_id
where nullif(trim(s.statement_text), '') is not null
group by 1, 2, 3, 5
