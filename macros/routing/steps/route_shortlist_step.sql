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
                top_example_sql, example_votes, s_schema, score, shortlist_rank)   every database, ranked
    candidates (db_id, score, shortlist_rank)                   the top `depth` of shortlist
-#}
{% macro route_shortlist_step(question, depth, path='udf') -%}
  {{ return(adapter.dispatch('route_shortlist_step', 'dbrouter')(question, depth, path)) }}
{%- endmacro %}

{% macro default__route_shortlist_step(question, depth, path='udf') -%}
  {{ exceptions.raise_compiler_error("route_shortlist_step: adapter " ~ adapter.type() ~ " is not supported yet (argument question: " ~ question ~ "); DuckDB and Snowflake are supported") }}
{%- endmacro %}

{#- DuckDB: list_avg(max(x, n)) averages the top n per group in one pass, and `materialized`
    keeps the question embedding and the ranking from being recomputed per reference. Every
    arg_max orders by (value, label) so that ties pick the same label on every run. -#}
{% macro duckdb__route_shortlist_step(question, depth, path='udf') -%}
{%- set w_ex = dbrouter.get_var('dbrouter__weight_example') | float -%}
{%- set maxc = dbrouter.get_var('dbrouter__max_question_chars') | int -%}
{%- if path == 'sql' %}
q_text as (
    select 0 as text_id, dbrouter_sql_content_text(left(cast({{ question }} as varchar), {{ maxc }})) as text
),
{{ dbrouter.static_text_vectors_step('q_text', 'q_vec') }},
q as materialized (
    select cast((select v_list from q_vec) as float[{{ dbrouter.get_var('dbrouter__embedding_dim') | int }}]) as v,
        (select vector_label from {{ dbrouter.kb_relation('kb_static_model') }}) as model
),
{%- elif path == 'udf' %}
q as materialized (
    select embed(left(cast({{ question }} as varchar), {{ maxc }})) as v,
        dbrouter_embedder() as model
),
{%- else %}
  {{ exceptions.raise_compiler_error("route_shortlist_step: adapter " ~ adapter.type() ~ ", argument path must be 'udf' or 'sql', got " ~ path) }}
{%- endif %}
hits as (
    select d.db_id, d.doc_kind, d.doc_label, {{ dbrouter.cosine_similarity('d.embedding', 'q.v') }} as sim
    from {{ dbrouter.kb_relation('kb_static_document_embeddings' if path == 'sql' else 'kb_document_embeddings') }} as d, q
    where q.v is not null and d.embedding_model = q.model
      and d.doc_kind in ('database', 'table', 'column', 'example')
),
per_db as (
    select
        db_id,
        max(sim) filter (where doc_kind = 'database') as s_database,
        list_avg(max(sim, {{ dbrouter.get_var('dbrouter__top_tables') }}) filter (where doc_kind = 'table')) as s_table,
        list_avg(max(sim, {{ dbrouter.get_var('dbrouter__top_columns') }}) filter (where doc_kind = 'column')) as s_column,
        max(sim) filter (where doc_kind = 'example') as s_example,
        arg_max(doc_label, (sim, doc_label)) filter (where doc_kind = 'table') as top_table,
        arg_max(doc_label, (sim, doc_label)) filter (where doc_kind = 'column') as top_column,
        arg_max(doc_label, (sim, doc_label)) filter (where doc_kind = 'example') as top_example_sql
    from hits
    group by db_id
),
example_votes as (
    select db_id, count(*) * 1.0 / {{ dbrouter.get_var('dbrouter__example_votes') | int }} as example_votes
    from (select db_id, sim, row_number() over (order by sim desc, doc_label) as rn from hits where doc_kind = 'example')
    where rn <= {{ dbrouter.get_var('dbrouter__example_votes') | int }} and sim >= {{ dbrouter.get_var('dbrouter__example_floor') | float }}
    group by db_id
),
fused as (
    select *,
        (s_schema + {{ w_ex }} * t.trusted * coalesce(s_example, s_schema + t.gap))
        / (1.0 + {{ w_ex }} * t.trusted) as score
    from (select p.*, coalesce(v.example_votes, 0) as example_votes,
              {{ dbrouter.schema_score('p.s_database', 'p.s_table', 'p.s_column') }} as s_schema
          from per_db as p left join example_votes as v on v.db_id = p.db_id)
    cross join (select coalesce(max({{ 'static_' if path == 'sql' else '' }}example_gap), 0) as gap,
                    coalesce(max(examples_trusted), 0) as trusted
                from {{ dbrouter.kb_relation('kb_routing_calibration') }}) as t
),
shortlist as materialized (
    select *, cast(row_number() over (order by score desc, db_id) as integer) as shortlist_rank
    from fused
),
candidates as materialized (
    select db_id, score, shortlist_rank from shortlist
    where shortlist_rank <= greatest(coalesce({{ depth }}, {{ dbrouter.get_var('dbrouter__shortlist_k') | int }}), 1)
)
{%- endmacro %}

{#- Snowflake: no list_avg(max(x, n)), FILTER or tuple arg_max, so the top-n means and the top
    labels come from one ROW_NUMBER per (database, kind); ties pick the larger label, as the
    DuckDB arg_max over (sim, label) does. The question is embedded by embed_sql (Cortex or the
    Python UDF) and compared with VECTOR_COSINE_SIMILARITY; vectors are matched by the label
    embedder_label() gives at build time. No `materialized` CTE hint exists: Snowflake decides. -#}
{% macro snowflake__route_shortlist_step(question, depth, path='udf') -%}
{%- if path != 'udf' -%}
  {{ exceptions.raise_compiler_error("route_shortlist_step: adapter " ~ adapter.type() ~ ", argument path '" ~ path ~ "': Snowflake has the UDF path only (the pure-SQL path is DuckDB's)") }}
{%- endif -%}
{%- set w_ex = dbrouter.get_var('dbrouter__weight_example') | float -%}
q as (
    select {{ dbrouter.embed_sql("left(cast(" ~ question ~ " as varchar), " ~ (dbrouter.get_var('dbrouter__max_question_chars') | int) ~ ")") }} as v,
        '{{ dbrouter.embedder_label() }}' as model
),
hits as (
    select d.db_id, d.doc_kind, d.doc_label, {{ dbrouter.cosine_similarity('d.embedding', 'q.v') }} as sim
    from {{ dbrouter.kb_relation('kb_document_embeddings') }} as d, q
    where q.v is not null and d.embedding_model = q.model
      and d.doc_kind in ('database', 'table', 'column', 'example')
),
ranked_hits as (
    select *, row_number() over (partition by db_id, doc_kind order by sim desc, doc_label desc) as rn
    from hits
),
per_db as (
    select
        db_id,
        max(case when doc_kind = 'database' then sim end) as s_database,
        avg(case when doc_kind = 'table' and rn <= {{ dbrouter.get_var('dbrouter__top_tables') | int }} then sim end) as s_table,
        avg(case when doc_kind = 'column' and rn <= {{ dbrouter.get_var('dbrouter__top_columns') | int }} then sim end) as s_column,
        max(case when doc_kind = 'example' then sim end) as s_example,
        max(case when doc_kind = 'table' and rn = 1 then doc_label end) as top_table,
        max(case when doc_kind = 'column' and rn = 1 then doc_label end) as top_column,
        max(case when doc_kind = 'example' and rn = 1 then doc_label end) as top_example_sql
    from ranked_hits
    group by db_id
),
example_votes as (
    select db_id, count(*) * 1.0 / {{ dbrouter.get_var('dbrouter__example_votes') | int }} as example_votes
    from (select db_id, sim, row_number() over (order by sim desc, doc_label) as rn from hits where doc_kind = 'example')
    where rn <= {{ dbrouter.get_var('dbrouter__example_votes') | int }} and sim >= {{ dbrouter.get_var('dbrouter__example_floor') | float }}
    group by db_id
),
fused as (
    select *,
        (s_schema + {{ w_ex }} * t.trusted * coalesce(s_example, s_schema + t.gap))
        / (1.0 + {{ w_ex }} * t.trusted) as score
    from (select p.*, coalesce(v.example_votes, 0) as example_votes,
              {{ dbrouter.schema_score('p.s_database', 'p.s_table', 'p.s_column') }} as s_schema
          from per_db as p left join example_votes as v on v.db_id = p.db_id)
    cross join (select coalesce(max(example_gap), 0) as gap, coalesce(max(examples_trusted), 0) as trusted
                from {{ dbrouter.kb_relation('kb_routing_calibration') }}) as t
),
shortlist as (
    select *, cast(row_number() over (order by score desc, db_id) as integer) as shortlist_rank
    from fused
),
candidates as (
    select db_id, score, shortlist_rank from shortlist
    where shortlist_rank <= greatest(coalesce({{ depth }}, {{ dbrouter.get_var('dbrouter__shortlist_k') | int }}), 1)
)
{%- endmacro %}
