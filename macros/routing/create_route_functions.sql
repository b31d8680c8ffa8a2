{#-
  Creates the SQL entry points of routing in the warehouse (run from `on-run-end`):

    route_query(question)                  -> best db_id, or NULL (empty question / no KB match)
    route_query_ranked(question, k := 5)   -> table (rank, db_id, score, evidence JSON)
    route_query_json(question, k := 5)     -> JSON {ranking: [...], reason}  (reason explains an empty ranking)

  They call the `embed()` UDF, so a connection must have the UDFs registered (dbt's plugin or
  `dbrouter.connect()`). Scoring (first ranking): per database, the schema score (see
  schema_score: database document, top tables, top columns) averaged with weight
  dbrouter__weight_example with the max cosine to its example questions; a database without
  examples gets schema score + kb_routing_calibration.example_gap instead, so it is not
  penalised for having none. Weights are package vars chosen on train questions.
-#}
{% macro create_route_functions() -%}
  {{ return(adapter.dispatch('create_route_functions', 'dbrouter')()) }}
{%- endmacro %}

{% macro default__create_route_functions() -%}
  {{ exceptions.raise_compiler_error("create_route_functions: adapter " ~ adapter.type() ~ " is not supported yet (argument: none); DuckDB is supported, Snowflake comes with the Snowflake issue") }}
{%- endmacro %}

{#- DuckDB: SQL macros (scalar and table) are catalog objects stored in the warehouse file, so
    any client with the UDFs registered can call them; native array_cosine_similarity does the
    vector math without a Python call per row. -#}
{% macro duckdb__create_route_functions() -%}
{%- set emb = target.schema ~ '.kb_document_embeddings' -%}
{%- set calib = target.schema ~ '.kb_routing_calibration' -%}
{%- set w_ex = var('dbrouter__weight_example') | float -%}
create or replace macro route_query_ranked(question, k := 5) as table
with q as (
    select
        embed(left(cast(question as varchar), {{ var('dbrouter__max_question_chars') }})) as v,
        dbrouter_embedder() as model
),
hits as (
    select d.db_id, d.doc_kind, d.doc_label,
           {{ dbrouter.cosine_similarity('d.embedding', 'q.v') }} as sim
    from {{ emb }} as d, q
    where q.v is not null and d.embedding_model = q.model
      and d.doc_kind in ('database', 'table', 'column', 'example')
),
ranked as (
    select *, row_number() over (partition by db_id, doc_kind order by sim desc) as rn
    from hits
),
per_db as (
    select
        db_id,
        max(sim) filter (where doc_kind = 'database') as s_database,
        avg(sim) filter (where doc_kind = 'table' and rn <= {{ var('dbrouter__top_tables') }}) as s_table,
        avg(sim) filter (where doc_kind = 'column' and rn <= {{ var('dbrouter__top_columns') }}) as s_column,
        max(sim) filter (where doc_kind = 'example') as s_example,
        arg_max(doc_label, sim) filter (where doc_kind = 'table') as top_table,
        arg_max(doc_label, sim) filter (where doc_kind = 'column') as top_column,
        arg_max(doc_label, sim) filter (where doc_kind = 'example') as top_example_sql
    from ranked
    group by db_id
),
schema_scored as (
    select *, {{ dbrouter.schema_score('s_database', 's_table', 's_column') }} as s_schema
    from per_db
),
scored as (
    select *,
        (s_schema + {{ w_ex }} * coalesce(s_example, s_schema + (select coalesce(max(example_gap), 0) from {{ calib }})))
        / {{ 1.0 + w_ex }} as score
    from schema_scored
)
select
    cast(row_number() over (order by score desc, db_id) as integer) as rank,
    db_id,
    round(cast(score as double), 6) as score,
    json_object(
        'schema_score', round(cast(s_schema as double), 4),
        'example_imputed', s_example is null,
        'database_similarity', round(cast(s_database as double), 4),
        'table_similarity', round(cast(s_table as double), 4),
        'column_similarity', round(cast(s_column as double), 4),
        'example_similarity', round(cast(s_example as double), 4),
        'top_table', top_table,
        'top_column', top_column,
        'top_example_sql', top_example_sql
    ) as evidence
from scored
order by score desc, db_id
limit greatest(coalesce(k, 5), 1);

create or replace macro route_query(question) as (
    select db_id from route_query_ranked(question, 1)
);

create or replace macro route_query_json(question, k := 5) as (
    select json_object(
        'question', left(cast(question as varchar), 200),
        'ranking', coalesce(
            (select json_group_array(json_object('rank', rank, 'db_id', db_id, 'score', score, 'evidence', evidence))
             from route_query_ranked(question, k)), json('[]')),
        'reason', case
            when question is null then 'question is NULL'
            when trim(cast(question as varchar)) = '' then 'question is empty'
            when not exists (select 1 from {{ emb }} where embedding_model = dbrouter_embedder())
                then 'no documents embedded with model ' || dbrouter_embedder() || ': run dbrouter build with this embedder'
            else null
        end
    )
);
{%- endmacro %}
