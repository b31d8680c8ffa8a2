{#-
  The body of a routing entry point (sql_entry_points), one for every adapter: the table
  functions assemble the step macros of macros/routing/steps/, whose headers state the CTEs and
  columns each consumes and produces:

    route_shortlist_step(question, depth)     step 1      -> q, shortlist, candidates
    route_map_by_embedding_step(question)     step 2      -> cand_words, mapped   (no LLM)
    route_map_from_json_step(mappings)        step 2      -> cand_words, mapped   (mappings given)
      (both step-2 variants end in route_mapping_contract, which fixes those two CTEs' columns)
    route_score_step(k, path)                 steps 3-5   -> (rank, db_id, score, shortlist_rank, shortlist_score, evidence)

  The scalar functions read route_query_ranked (route_query_json_mapped: route_query_ranked_mapped)
  of the same path; JSON is read with json_at and built with json_object / json_array_agg, so the
  result has the same keys on every adapter.

  Args:
    name: the entry point.
    path: 'udf' or 'sql' (route_paths); ignored by entries with paths: false.
-#}
{% macro sql_entry_point_body(name, path='udf') -%}
{%- set with_ = 'with recursive' if path == 'sql' else 'with' -%}
{%- if name == 'route_shortlist' -%}
{{ with_ }} {{ dbrouter.route_shortlist_step(question='question', depth='k', path=path) }}
select shortlist_rank, db_id, round(cast(score as double), 6) as score,
    round(cast(s_schema as double), 4) as schema_score, round(cast(s_database as double), 4) as database_similarity,
    round(cast(s_table as double), 4) as table_similarity, round(cast(s_column as double), 4) as column_similarity,
    round(cast(s_example as double), 4) as example_similarity, top_table, top_column, first_stage_rank,
    dense_rank, round(cast(s_lexical as double), 4) as lexical_score, lexical_table, lexical_rank
from shortlist
where shortlist_rank <= greatest(coalesce(k, 10), 1)
order by shortlist_rank
{%- elif name == 'route_phrase_mappings' -%}
{{ with_ }} {{ dbrouter.route_shortlist_step(question='question', depth='k', path=path) }},
{{ dbrouter.route_map_by_embedding_step(question='question', path=path) }}
select c.shortlist_rank, cw.db_id, cw.word_index, cw.phrase, m.span, m.table_name, m.column_name,
    round(cast(m.similarity as double), 4) as similarity, m.is_exact, m.match_kind
from cand_words as cw
join candidates as c on c.db_id = cw.db_id
left join mapped as m on m.db_id = cw.db_id and m.word_index = cw.word_index
order by c.shortlist_rank, cw.word_index, m.similarity desc nulls last, m.table_name, m.column_name
{%- elif name == 'route_query_ranked' -%}
{{ with_ }} {{ dbrouter.route_shortlist_step(question='question', depth='shortlist_k', path=path) }},
{{ dbrouter.route_map_by_embedding_step(question='question', path=path) }},
{{ dbrouter.route_score_step(k='k', path=path) }}
{%- elif name == 'route_query_ranked_mapped' -%}
{{ with_ }} {{ dbrouter.route_shortlist_step(question='question', depth='shortlist_k', path=path) }},
{{ dbrouter.route_map_from_json_step(mappings='mappings', path=path) }},
{{ dbrouter.route_score_step(k='k', path=path) }}
{%- elif name == 'route_query' -%}
select case when cast({{ dbrouter.json_at('evidence', ['abstain']) }} as boolean) then null else db_id end
from {{ dbrouter.call_table_entry_point('route_query_ranked', path, 'question, 1') }}
where rank = 1
{%- elif name in ('route_query_json', 'route_query_json_mapped') -%}
{#- one body, so both rankings give their reasons in the same words (Python writes none) -#}
{%- set ranked = dbrouter.call_table_entry_point('route_query_ranked', path, 'question, k') if name == 'route_query_json'
    else dbrouter.call_table_entry_point('route_query_ranked_mapped', path, 'question, mappings, k, shortlist_k') -%}
{%- set best = dbrouter.json_at('r.ranking', [0, 'evidence', 'abstain']) -%}
{%- set test = dbrouter.json_at('r.ranking', [0, 'evidence', 'abstain_test']) -%}
{%- set top = dbrouter.json_at('r.ranking', [0, 'db_id']) -%}
{%- set first = dbrouter.json_at('r.ranking', [0, 'evidence', 'shortlist', 'score']) -%}
{%- set ev = {} -%}
{%- for key in ['content_words', 'abstain_floor', 'offtopic_floor', 'rank_score', 'intent_score', 'intent_floor'] -%}
  {%- do ev.update({key: dbrouter.json_at('r.ranking', [0, 'evidence', key])}) -%}
{%- endfor -%}
select {{ dbrouter.json_object([
    ('question', 'left(cast(question as varchar), 200)'),
    ('path', "'" ~ path ~ "'"),
    ('ranking', 'r.ranking'),
    ('reason', "case
            when question is null then 'question is NULL'
            when " ~ dbrouter.is_blank('cast(question as varchar)') ~ " then 'question is empty'" ~ dbrouter._no_documents_reason(path) ~ "
            when cast(" ~ best ~ " as boolean) then case " ~ test ~ "
                when 'vocabulary'
                    then 'no database here is about this: none of the question''s ' || " ~ ev['content_words'] ~ " || ' content words is in the vocabulary of the databases you may see (kb_vocabulary)'
                when 'intent'
                    then 'this does not read as a question about data: the intent probe scored it ' || " ~ ev['intent_score'] ~ " || ', below ' || " ~ ev['intent_floor'] ~ " || ' (dbrouter__intent_probe)'
                when 'example_floor'
                    then 'no database matches confidently: the best, ' || " ~ top ~ " || ', scored ' || " ~ first ~ "
                         || ' on the first ranking, below this knowledge base''s floor from its example questions ' || " ~ ev['abstain_floor'] ~ " || ' (kb_routing_calibration.abstain_floor)'
                when 'offtopic_floor'
                    then 'no database matches confidently: the best, ' || " ~ top ~ " || ', scored ' || " ~ first ~ "
                         || ' on the first ranking, below what a typical off-topic question scores on this knowledge base, ' || " ~ ev['offtopic_floor'] ~ " || ' (kb_routing_calibration.offtopic_floor)'
                else 'no database matches confidently: the best, ' || " ~ top ~ " || ', has ranker score ' || " ~ ev['rank_score'] ~ " || ', below dbrouter__abstain_below (" ~ dbrouter.get_var('dbrouter__abstain_below') ~ ")'
                end
            else null
        end"),
    ('abstained', 'coalesce(cast(' ~ best ~ ' as boolean), false)')]) }}
from (select coalesce(
    (select {{ dbrouter.json_nest(dbrouter.json_array_agg(dbrouter.json_object([('rank', 'rank'), ('db_id', 'db_id'), ('score', 'score'), ('evidence', 'evidence')]), 'rank')) }}
     from {{ ranked }}),
    {{ dbrouter.json_nest("'[]'") }}) as ranking) as r
{%- elif name == 'route_shortlist_k' -%}
{{ dbrouter.get_var('dbrouter__shortlist_k') | int }}
{%- elif name == 'route_first_stage_k' -%}
{{ dbrouter.get_var('dbrouter__first_stage_k') | int }}
{%- elif name == 'route_ranker_weights' -%}
{{ dbrouter.json_nest("'" ~ tojson(dbrouter.get_var('dbrouter__ranker_weights')) ~ "'") }}
{%- elif name == 'route_abstain_below' -%}
{%- set below = dbrouter.get_var('dbrouter__abstain_below') -%}
{{ 'cast(null as double)' if below is none else 'cast(' ~ (below | float) ~ ' as double)' }}
{%- elif name == 'retrieve_statements' -%}
{{ dbrouter.retrieve_statements_function(path) }}
{%- elif name == 'retrieve_examples' -%}
{{ dbrouter.retrieve_examples_function(path) }}
{%- elif name == 'retrieve_columns' -%}
{{ dbrouter.retrieve_columns_function(path) }}
{%- else -%}
  {{ exceptions.raise_compiler_error("sql_entry_point_body: adapter " ~ adapter.type() ~ ", argument name '" ~ name ~ "' is not a declared entry point (see sql_entry_points)") }}
{%- endif -%}
{%- endmacro %}

{#- The reason route_query_json gives when the KB has no vectors the path can compare with. -#}
{% macro _no_documents_reason(path) -%}
{%- if path == 'sql' %}
            when not exists (select 1 from {{ dbrouter.kb_relation('kb_static_document_embeddings') }})
                then 'no documents embedded with the static model: run dbrouter build'
            when json_array_length(r.ranking) = 0
                then 'no content word of the question is in the static model''s vocabulary ('
                     || (select static_model from {{ dbrouter.kb_relation('kb_static_model') }})
                     || '): the pure-SQL path cannot embed it'
{%- else %}
            when not exists (select 1 from {{ dbrouter.kb_relation('kb_document_embeddings') }}
                             where embedding_model = {{ dbrouter.runtime_embedder() }})
                then 'no documents embedded with model ' || {{ dbrouter.runtime_embedder() }} || ': run dbrouter build with this embedder'
{%- endif %}
{%- endmacro %}
