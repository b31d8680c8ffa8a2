{#-
  Routing step 1, the shortlist: fused per-database similarity of the question to the KB's
  documents (database document, mean of the top tables, mean of the top columns, best example
  question; a database without examples gets the KB-calibrated `example_gap`).

  Args:
    question: SQL expression of the question (cast to VARCHAR, cut to dbrouter__max_question_chars).
    depth: SQL expression of how many databases go on to the re-rank (NULL = dbrouter__shortlist_k).
    path: 'udf' (the question embedded by the embed() UDF, compared with kb_document_embeddings)
      or 'sql' (no UDF: the static vector of the question's content words, dbrouter_sql_content_text
      and static_text_vectors_step, compared with kb_static_document_embeddings, which embed the
      documents' content words; the entry point opens with `with recursive`).

  Consumes: kb_document_embeddings or kb_static_document_embeddings, kb_routing_calibration;
    UDFs embed(), dbrouter_embedder() (path 'udf') or kb_static_pieces, kb_static_model (path 'sql').
  Produces CTEs (comma-separated, no leading WITH):
    q          (v, model)                                       the question's vector
    shortlist  (db_id, s_database, s_table, s_column, s_example, top_table, top_column,
                top_example_sql, example_votes, example_match, s_schema, score, shortlist_rank)   every database,
                ranked (a database with an exact example match first)
    candidates (db_id, score, shortlist_rank)                   the top `depth` of shortlist
-#}
{% macro route_shortlist_step(question, depth, path='udf') -%}
  {{ return(adapter.dispatch('route_shortlist_step', 'dbrouter')(question, depth, path)) }}
{%- endmacro %}

{#- One body for every adapter. The dialect differences are expressions: cte_materialized (a
    hint DuckDB has), top_n_rank / top_n_avg / top_value (DuckDB's one-pass list_avg(max(x, n))
    and tuple arg_max; elsewhere a ROW_NUMBER per (database, kind) that picks the same rows and
    breaks ties on the larger label), embed_sql and runtime_embedder (the question's vector and
    the embedder its documents must carry). -#}
{% macro default__route_shortlist_step(question, depth, path='udf') -%}
{%- do dbrouter.route_path_check('route_shortlist_step', path) -%}
{%- set w_ex = dbrouter.get_var('dbrouter__weight_example') | float -%}
{%- set maxc = dbrouter.get_var('dbrouter__max_question_chars') | int -%}
{%- set mat = dbrouter.cte_materialized() -%}
{%- if path == 'sql' %}
q_text as (
    select 0 as text_id, dbrouter_sql_content_text(left(cast({{ question }} as varchar), {{ maxc }})) as text
),
{{ dbrouter.static_text_vectors_step('q_text', 'q_vec') }},
q as {{ mat }} (
    select cast((select v_list from q_vec) as float[{{ dbrouter.get_var('dbrouter__embedding_dim') | int }}]) as v,
        (select vector_label from {{ dbrouter.kb_relation('kb_static_model') }}) as model
),
{%- else %}
q as {{ mat }} (
    select {{ dbrouter.embed_sql("left(cast(" ~ question ~ " as varchar), " ~ maxc ~ ")") }} as v,
        {{ dbrouter.runtime_embedder() }} as model
),
{%- endif %}
hits as (
    select d.db_id, d.doc_kind, d.doc_label, {{ dbrouter.cosine_similarity('d.embedding', 'q.v') }} as sim
    from {{ dbrouter.kb_relation('kb_static_document_embeddings' if path == 'sql' else 'kb_document_embeddings') }} as d, q
    where q.v is not null and d.embedding_model = q.model
      and d.doc_kind in ('database', 'table', 'column', 'example')
),
ranked_hits as (
    select *, {{ dbrouter.top_n_rank('db_id, doc_kind', 'sim desc, doc_label desc') }} as rn
    from hits
),
per_db as (
    select
        db_id,
        max(case when doc_kind = 'database' then sim end) as s_database,
        {{ dbrouter.top_n_avg('sim', dbrouter.get_var('dbrouter__top_tables') | int, "doc_kind = 'table'") }} as s_table,
        {{ dbrouter.top_n_avg('sim', dbrouter.get_var('dbrouter__top_columns') | int, "doc_kind = 'column'") }} as s_column,
        max(case when doc_kind = 'example' then sim end) as s_example,
        {{ dbrouter.top_value('doc_label', 'sim', 'doc_label', "doc_kind = 'table'") }} as top_table,
        {{ dbrouter.top_value('doc_label', 'sim', 'doc_label', "doc_kind = 'column'") }} as top_column,
        {{ dbrouter.top_value('doc_label', 'sim', 'doc_label', "doc_kind = 'example'") }} as top_example_sql
    from ranked_hits
    group by db_id
),
example_votes as (
    select db_id, count(*) * 1.0 / {{ dbrouter.get_var('dbrouter__example_votes') | int }} as example_votes
    from (select db_id, sim, row_number() over (order by sim desc, doc_label) as rn from hits where doc_kind = 'example') as ranked
    where rn <= {{ dbrouter.get_var('dbrouter__example_votes') | int }} and sim >= {{ dbrouter.get_var('dbrouter__example_floor') | float }}
    group by db_id
),
q_key as (
    select {{ dbrouter.question_key("left(cast(" ~ question ~ " as varchar), " ~ maxc ~ ")") }} as question_key
),
example_match as (
    {#- a stored example question asked again (same words, any case and punctuation) routes to its
        database whatever the similarities say: the user told us where that question belongs -#}
    select distinct e.db_id
    from {{ dbrouter.kb_relation('kb_examples') }} as e
    join q_key as k on k.question_key = e.question_key
),
fused as (
    select *,
        (s_schema + {{ w_ex }} * t.trusted * coalesce(s_example, s_schema + t.gap))
        / (1.0 + {{ w_ex }} * t.trusted) as score
    from (select p.*, coalesce(v.example_votes, 0) as example_votes,
              case when m.db_id is null then 0 else 1 end as example_match,
              {{ dbrouter.schema_score('p.s_database', 'p.s_table', 'p.s_column') }} as s_schema
          from per_db as p
          left join example_votes as v on v.db_id = p.db_id
          left join example_match as m on m.db_id = p.db_id) as scored
    cross join (select coalesce(max({{ 'static_' if path == 'sql' else '' }}example_gap), 0) as gap,
                    coalesce(max({{ 'static_' if path == 'sql' else '' }}examples_trusted), 0) as trusted,
                    max({{ 'static_' if path == 'sql' else '' }}abstain_floor) as abstain_floor
                from {{ dbrouter.kb_relation('kb_routing_calibration') }}) as t
),
shortlist as {{ mat }} (
    select *, cast(row_number() over (order by example_match desc, score desc, db_id) as integer) as shortlist_rank
    from fused
),
candidates as {{ mat }} (
    select db_id, score, shortlist_rank from shortlist
    where shortlist_rank <= greatest(coalesce({{ depth }}, {{ dbrouter.get_var('dbrouter__shortlist_k') | int }}), 1)
)
{%- endmacro %}
