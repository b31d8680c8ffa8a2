-- Few-shot exemplars for LLM statement structuring, per database ('*' = all databases).
select db_id, statement, structured
from {{ ref('stg_seeds__statement_exemplars') }}
where nullif(trim(statement), '') is not null and nullif(trim(structured), '') is not null
