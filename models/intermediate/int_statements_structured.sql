-- Each statement's structured form '<expression>' refers to <snippet>: the rule-based structurer
-- (UDF dbrouter_structure_statement, validated against the database's columns) always runs; an
-- LLM structure (written by `dbrouter statements structure`) replaces it when it validated.
-- The original statement text is never changed.
with statements as (
    select * from {{ ref('int_statements_unioned') }}
    where has_known_database
),
schemas as (
    select * from {{ ref('int_database_schemas_listed') }}
),
rules as (
    select
        s.statement_id, s.db_id, s.statement_text, s.origin,
        dbrouter_structure_statement(s.statement_text, coalesce(sc.schema_json, '[]')) as j
    from statements as s
    left join schemas as sc on sc.db_id = s.db_id
),
llm as (
    select * from {{ ref('stg_llm__statement_structures') }}
    where structure_status = 'structured'
),
chosen as (
    select
        r.statement_id, r.db_id, r.statement_text, r.origin,
        case when llm.statement_hash is not null then 'llm:' || llm.llm_model else 'rules' end as structured_by,
        case when llm.statement_hash is not null then 'llm' else {{ dbrouter.json_get('r.j', 'shape') }} end as shape,
        coalesce(llm.structure_status, {{ dbrouter.json_get('r.j', 'status') }}) as structure_status,
        coalesce(llm.expression, {{ dbrouter.json_get('r.j', 'expression') }}) as expression,
        coalesce(llm.snippet, {{ dbrouter.json_get('r.j', 'snippet') }}) as snippet,
        coalesce(llm.referenced_columns, {{ dbrouter.json_get_list('r.j', 'references') }}) as referenced_columns,
        coalesce(llm.problems, {{ dbrouter.json_get_list('r.j', 'problems') }}) as problems
    from rules as r
    left join llm on llm.statement_hash = r.statement_id
)
select
    *,
    dbrouter_canonicalize(expression) as canonical_expression,
    -- what retrieval matches: the canonical expression, or the whole canonical statement when
    -- it could not be structured
    coalesce(dbrouter_canonicalize(expression), dbrouter_canonicalize(statement_text)) as retrieval_text,
    dbrouter_word_count(coalesce(dbrouter_canonicalize(expression), dbrouter_canonicalize(statement_text))) as retrieval_words
from chosen
