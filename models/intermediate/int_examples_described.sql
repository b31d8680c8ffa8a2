-- Example descriptors: normalised question, main clause, requested entities, tables and columns
-- used. The rules (UDF dbrouter_describe_example, SQL parsed with sqlglot) always run; LLM
-- descriptors written by `dbrouter examples describe` replace the text descriptors when present.
with examples as (
    select * from {{ ref('int_examples_unioned') }}
    where has_known_database
),
rules as (
    select
        e.*,
        dbrouter_describe_example(e.question, e.sql_text, coalesce(s.schema_json, '[]')) as j
    from examples as e
    left join {{ ref('int_database_schemas_listed') }} as s on s.db_id = e.db_id
),
llm as (
    select * from {{ ref('stg_llm__example_descriptors') }}
)
select
    r.example_id, r.db_id, r.question, r.sql_text, r.origin,
    case when llm.example_hash is not null then 'llm:' || llm.llm_model else 'rules' end as described_by,
    coalesce(llm.normalized_question, {{ dbrouter.json_get('r.j', 'normalized_question') }}) as normalized_question,
    coalesce(llm.main_clause, {{ dbrouter.json_get('r.j', 'main_clause') }}) as main_clause,
    coalesce(llm.requested_entities, {{ dbrouter.json_get_list('r.j', 'requested_entities') }}) as requested_entities,
    coalesce(llm.paraphrases, {{ dbrouter.array_literal([]) }}) as paraphrases,
    {{ dbrouter.json_get_list('r.j', 'tables') }} as tables_used,
    {{ dbrouter.json_get_list('r.j', 'columns') }} as columns_used,
    cast({{ dbrouter.json_get('r.j', 'sql_parsed') }} as boolean) as sql_parsed
from rules as r
left join llm on llm.example_hash = r.example_id
