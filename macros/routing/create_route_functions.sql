{#-
  Creates the SQL entry points of routing in the warehouse (run from `on-run-end`). Each entry
  point only assembles the step macros of macros/routing/steps/, whose headers state the CTEs
  and columns each consumes and produces:

    route_shortlist_step(question, depth)     step 1      -> q, shortlist, candidates
    route_map_by_embedding_step(question)     step 2      -> cand_words, mapped   (no LLM)
    route_map_from_json_step(mappings)        step 2      -> cand_words, mapped   (mappings given)
      (both step-2 variants end in route_mapping_contract, which fixes those two CTEs' columns)
    route_score_step(k)                       steps 3-5   -> (rank, db_id, score, shortlist_rank, evidence)

  Entry points, each twice: `<name>_udf` (the question embedded by the embed()/embed_phrase()
  UDFs, so a connection needs them registered: dbt's plugin or `dbrouter.connect()`) and
  `<name>_sql` (pure SQL: the static phrase embedder materialised in kb_static_pieces, see
  static_text_vectors_step; any DuckDB client). The plain names are created by
  create_path_entry_points (pure SQL in the file; `dbrouter.connect()` shadows them with the
  UDF path for its connection):
    route_shortlist(question, k := 10)        -> step 1: (shortlist_rank, db_id, score, signals)
    route_phrase_mappings(question, k := 10)  -> step 2: phrase -> table.column (or N/A) for the top-k shortlist
    route_query_ranked(question, k := 5, shortlist_k := dbrouter__shortlist_k)
                                              -> steps 1-5 with the evidence JSON
    route_query_ranked_mapped(question, mappings, k := 5, shortlist_k := dbrouter__shortlist_k)
                                              -> the same with phrase mappings given as JSON (the LLM path)
    route_shortlist_k()                       -> the re-rank depth this build uses
    route_query(question)                     -> best db_id, or NULL (empty question, no KB match, or
                                                 the best candidate's ranker score is below
                                                 dbrouter__abstain_below: abstention)
    route_query_json(question, k := 5)        -> JSON {question, path, ranking: [...], reason, abstained}
    route_ranker_weights()                    -> JSON of the ranker's weights this build uses
    route_abstain_below()                     -> the abstention threshold (NULL: never abstain)

  Nothing here touches the network.
-#}
{% macro create_route_functions() -%}
  {{ return(adapter.dispatch('create_route_functions', 'dbrouter')()) }}
{%- endmacro %}

{% macro default__create_route_functions() -%}
  {{ exceptions.raise_compiler_error("create_route_functions: adapter " ~ adapter.type() ~ " is not supported yet (argument: none); DuckDB and Snowflake are supported") }}
{%- endmacro %}

{#- DuckDB: SQL macros (scalar and table) are catalog objects stored in the warehouse file. A
    macro's body names are resolved when it is called, temp catalog first, so each path's macros
    call only that path's names: shadowing `route_query_ranked` cannot change `route_query_sql`. -#}
{% macro duckdb__create_route_functions() -%}
{%- set sk = dbrouter.get_var('dbrouter__shortlist_k') | int -%}
{%- if sk < 1 or (dbrouter.get_var('dbrouter__phrase_max_words') | int) < 1 -%}
  {{ exceptions.raise_compiler_error("create_route_functions: adapter " ~ adapter.type() ~ ", vars dbrouter__shortlist_k and dbrouter__phrase_max_words must be >= 1, got " ~ sk ~ " / " ~ dbrouter.get_var('dbrouter__phrase_max_words')) }}
{%- endif -%}
{{ dbrouter.create_sql_text_functions() }};
{%- for path in ['udf', 'sql'] %}
{%- set with_ = 'with recursive' if path == 'sql' else 'with' %}
create or replace macro route_shortlist_{{ path }}(question, k := 10) as table
{{ with_ }} {{ dbrouter.route_shortlist_step(question='question', depth='k', path=path) }}
select shortlist_rank, db_id, round(cast(score as double), 6) as score,
    round(cast(s_schema as double), 4) as schema_score, round(cast(s_database as double), 4) as database_similarity,
    round(cast(s_table as double), 4) as table_similarity, round(cast(s_column as double), 4) as column_similarity,
    round(cast(s_example as double), 4) as example_similarity, top_table, top_column
from shortlist
where shortlist_rank <= greatest(coalesce(k, 10), 1)
order by shortlist_rank;

create or replace macro route_phrase_mappings_{{ path }}(question, k := 10) as table
{{ with_ }} {{ dbrouter.route_shortlist_step(question='question', depth='k', path=path) }},
{{ dbrouter.route_map_by_embedding_step(question='question', path=path) }}
select c.shortlist_rank, cw.db_id, cw.word_index, cw.phrase, m.span, m.table_name, m.column_name,
    round(cast(m.similarity as double), 4) as similarity, m.is_exact, m.match_kind
from cand_words as cw
join candidates as c on c.db_id = cw.db_id
left join mapped as m on m.db_id = cw.db_id and m.word_index = cw.word_index
order by c.shortlist_rank, cw.word_index, m.similarity desc nulls last, m.table_name, m.column_name;

create or replace macro route_query_ranked_{{ path }}(question, k := 5, shortlist_k := {{ sk }}) as table
{{ with_ }} {{ dbrouter.route_shortlist_step(question='question', depth='shortlist_k', path=path) }},
{{ dbrouter.route_map_by_embedding_step(question='question', path=path) }},
{{ dbrouter.route_score_step(k='k') }};

create or replace macro route_query_ranked_mapped_{{ path }}(question, mappings, k := 5, shortlist_k := {{ sk }}) as table
{{ with_ }} {{ dbrouter.route_shortlist_step(question='question', depth='shortlist_k', path=path) }},
{{ dbrouter.route_map_from_json_step(mappings='mappings', path=path) }},
{{ dbrouter.route_score_step(k='k') }};

create or replace macro route_query_{{ path }}(question) as (
    select case when cast(evidence->>'abstain' as boolean) then null else db_id end
    from route_query_ranked_{{ path }}(question, 1)
);

create or replace macro route_query_json_{{ path }}(question, k := 5) as (
    select json_object(
        'question', left(cast(question as varchar), 200),
        'path', '{{ path }}',
        'ranking', r.ranking,
        'reason', case
            when question is null then 'question is NULL'
            when regexp_full_match(cast(question as varchar), '[\s\p{Z}]*') then 'question is empty'
{%- if path == 'sql' %}
            when not exists (select 1 from {{ dbrouter.kb_relation('kb_static_document_embeddings') }})
                then 'no documents embedded with the static model: run dbrouter build'
            when json_array_length(r.ranking) = 0
                then 'no content word of the question is in the static model''s vocabulary ('
                     || (select static_model from {{ dbrouter.kb_relation('kb_static_model') }})
                     || '): the pure-SQL path cannot embed it'
{%- else %}
            when not exists (select 1 from {{ dbrouter.kb_relation('kb_document_embeddings') }}
                             where embedding_model = dbrouter_embedder())
                then 'no documents embedded with model ' || dbrouter_embedder() || ': run dbrouter build with this embedder'
{%- endif %}
            when cast(r.ranking->0->'evidence'->>'abstain' as boolean)
                then 'no database matches confidently: the best, ' || (r.ranking->0->>'db_id') || ', scored '
                     || (r.ranking->0->'evidence'->>'rank_score') || ', below dbrouter__abstain_below ({{ dbrouter.get_var('dbrouter__abstain_below') }})'
            else null
        end,
        'abstained', coalesce(cast(r.ranking->0->'evidence'->>'abstain' as boolean), false)
    )
    from (select coalesce(
        (select json_group_array(json_object('rank', rank, 'db_id', db_id, 'score', score, 'evidence', evidence))
         from route_query_ranked_{{ path }}(question, k)), json('[]')) as ranking) as r
);
{% endfor %}
create or replace macro route_shortlist_k() as ({{ sk }});
create or replace macro route_ranker_weights() as (json '{{ tojson(dbrouter.get_var('dbrouter__ranker_weights')) }}');
{%- set below = dbrouter.get_var('dbrouter__abstain_below') %}
create or replace macro route_abstain_below() as ({{ 'cast(null as double)' if below is none else below | float }});
{%- endmacro %}

{#- Snowflake: SQL UDFs and UDTFs in the KB schema (snowflake_kb_schema), callable from any Snowflake
    client once the KB is built. Their bodies are checked when created, so nothing is created
    while the marts they read are missing (a build of a selection): the log says so. -#}
{% macro snowflake__create_route_functions() -%}
{%- set missing = dbrouter.snowflake_missing_marts(['kb_document_embeddings', 'kb_routing_calibration', 'kb_column_phrases', 'kb_table_reachability']) -%}
{%- if missing -%}
  {%- do log("dbrouter: route functions not created in " ~ dbrouter.snowflake_kb_schema() ~ ": marts " ~ (missing | join(', ')) ~ " are not built (build the whole project)", info=True) -%}
select 'route functions not created: marts missing' as dbrouter_note
{%- else -%}
{{ dbrouter.snowflake_route_functions_ddl() }}
{%- endif -%}
{%- endmacro %}
