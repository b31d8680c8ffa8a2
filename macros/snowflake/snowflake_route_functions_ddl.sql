{#-
  The Snowflake routing entry points (statements separated by ';'), created in the KB schema by
  create_route_functions (on-run-end). Same names, arguments and results as the DuckDB macros,
  assembled from the same step macros (their snowflake__ variants):

    route_shortlist(question, k default 10)                      UDTF, step 1
    route_phrase_mappings(question, k default 10)                UDTF, step 2
    route_query_ranked(question, k default 5, shortlist_k default dbrouter__shortlist_k)
                                                                 UDTF, steps 1-5, evidence VARIANT
    route_query_ranked_mapped(question, mappings, k default 5, shortlist_k default ...)
                                                                 UDTF, LLM mappings as JSON text
    route_shortlist_k()                                          NUMBER
    route_query(question)                                        VARCHAR, best db_id or NULL
    route_query_json(question, k default 5)                      VARIANT {question, ranking, reason}

  Differences from DuckDB: questions and phrases are embedded by embed_sql / embed_phrase_sql
  (Cortex or the Python UDFs), vectors compared with VECTOR_COSINE_SIMILARITY; the evidence is a
  VARIANT built by OBJECT_CONSTRUCT_KEEP_NULL; ties are broken by ROW_NUMBER orders equal to the
  DuckDB arg_max orders.
-#}
{% macro snowflake_route_functions_ddl() -%}
{%- if adapter.type() != 'snowflake' -%}
  {{ exceptions.raise_compiler_error("snowflake_route_functions_ddl: adapter " ~ adapter.type() ~ " is not Snowflake (argument: none); use create_route_functions") }}
{%- endif -%}
{%- set sk = dbrouter.get_var('dbrouter__shortlist_k') | int -%}
{%- set s = dbrouter.snowflake_kb_schema() -%}
{%- set label = dbrouter.embedder_label() -%}
{%- if sk < 1 or (dbrouter.get_var('dbrouter__phrase_max_words') | int) < 1 -%}
  {{ exceptions.raise_compiler_error("snowflake_route_functions_ddl: adapter " ~ adapter.type() ~ ", vars dbrouter__shortlist_k and dbrouter__phrase_max_words must be >= 1, got " ~ sk ~ " / " ~ dbrouter.get_var('dbrouter__phrase_max_words')) }}
{%- endif -%}
create or replace function {{ s }}.route_shortlist(question varchar, k number default 10)
returns table (shortlist_rank integer, db_id varchar, score double, schema_score double, database_similarity double,
    table_similarity double, column_similarity double, example_similarity double, top_table varchar, top_column varchar)
language sql
as $$
with {{ dbrouter.route_shortlist_step(question='question', depth='k') }}
select shortlist_rank, db_id, round(cast(score as double), 6) as score,
    round(cast(s_schema as double), 4) as schema_score, round(cast(s_database as double), 4) as database_similarity,
    round(cast(s_table as double), 4) as table_similarity, round(cast(s_column as double), 4) as column_similarity,
    round(cast(s_example as double), 4) as example_similarity, top_table, top_column
from shortlist
where shortlist_rank <= greatest(coalesce(k, 10), 1)
$$;

create or replace function {{ s }}.route_phrase_mappings(question varchar, k number default 10)
returns table (shortlist_rank integer, db_id varchar, word_index integer, phrase varchar, span varchar,
    table_name varchar, column_name varchar, similarity double, is_exact boolean, match_kind varchar)
language sql
as $$
with {{ dbrouter.route_shortlist_step(question='question', depth='k') }},
{{ dbrouter.route_map_by_embedding_step(question='question') }}
select c.shortlist_rank, cw.db_id, cw.word_index, cw.phrase, m.span, m.table_name, m.column_name,
    round(cast(m.similarity as double), 4) as similarity, m.is_exact, m.match_kind
from cand_words as cw
join candidates as c on c.db_id = cw.db_id
left join mapped as m on m.db_id = cw.db_id and m.word_index = cw.word_index
$$;

create or replace function {{ s }}.route_query_ranked(question varchar, k number default 5, shortlist_k number default {{ sk }})
returns table (rank integer, db_id varchar, score double, shortlist_rank integer, evidence variant)
language sql
as $$
with {{ dbrouter.route_shortlist_step(question='question', depth='shortlist_k') }},
{{ dbrouter.route_map_by_embedding_step(question='question') }},
{{ dbrouter.route_score_step(k='k') }}
$$;

create or replace function {{ s }}.route_query_ranked_mapped(question varchar, mappings varchar, k number default 5, shortlist_k number default {{ sk }})
returns table (rank integer, db_id varchar, score double, shortlist_rank integer, evidence variant)
language sql
as $$
with {{ dbrouter.route_shortlist_step(question='question', depth='shortlist_k') }},
{{ dbrouter.route_map_from_json_step(mappings='mappings') }},
{{ dbrouter.route_score_step(k='k') }}
$$;

create or replace function {{ s }}.route_shortlist_k()
returns number
language sql
as $$
{{ sk }}
$$;

create or replace function {{ s }}.route_query(question varchar)
returns varchar
language sql
as $$
select case when evidence:abstain::boolean then null else db_id end
from table({{ s }}.route_query_ranked(question, 1)) where rank = 1
$$;

create or replace function {{ s }}.route_query_json(question varchar, k number default 5)
returns variant
language sql
as $$
select object_construct_keep_null(
    'question', left(question, 200),
    'ranking', r.ranking,
    'reason', case
        when question is null then 'question is NULL'
        when regexp_like(question, '[[:space:]]*') then 'question is empty'
        when not exists (select 1 from {{ dbrouter.kb_relation('kb_document_embeddings') }}
                         where embedding_model = '{{ label }}')
            then 'no documents embedded with model {{ label }}: run dbt build with this embedder'
        when r.ranking[0]:evidence:abstain::boolean
            then 'no database matches confidently: the best, ' || r.ranking[0]:db_id::varchar || ', scored '
                 || r.ranking[0]:evidence:rank_score::varchar || ', below dbrouter__abstain_below ({{ dbrouter.get_var('dbrouter__abstain_below') }})'
        else null
    end,
    'abstained', coalesce(r.ranking[0]:evidence:abstain::boolean, false)
)
from (select coalesce(
        (select array_agg(object_construct_keep_null('rank', rank, 'db_id', db_id, 'score', score, 'evidence', evidence))
                within group (order by rank)
         from table({{ s }}.route_query_ranked(question, k))), array_construct()) as ranking) as r
$$
{%- endmacro %}
