{#-
  `retrieve_examples(question, db, k := 3)`: the progressive example cascade (exact, normalized,
  main_clause, expanded; see create_retrieval_functions for the method).

  Args:
    path: 'udf' (normalisation and vectors from the UDFs, thresholds of the model's space) or
      'sql' (normalize_question_text, static_text_vectors_step over kb_static_document_embeddings,
      the static_* thresholds).

  Consumes: kb_examples, kb_example_thresholds, kb_document_embeddings; UDFs
    dbrouter_normalize_question(), embed(), dbrouter_embedder() (path 'udf'), or
    kb_static_document_embeddings, kb_static_pieces, kb_static_model (path 'sql').
  Produces: the body (a query, no trailing semicolon) of the table function returning
    (rank, stage, db_id, example_id, question, sql_text, tables_used, score, threshold, similarity):
    similarity is what the stage compared with threshold; score orders (stage 4: re-ranked).
-#}
{% macro retrieve_examples_function(path='udf') -%}
  {{ return(adapter.dispatch('retrieve_examples_function', 'dbrouter')(path)) }}
{%- endmacro %}

{% macro default__retrieve_examples_function(path='udf') -%}
  {{ exceptions.raise_compiler_error("retrieve_examples_function: adapter " ~ adapter.type() ~ " is not supported yet (argument: none); DuckDB and Snowflake are supported") }}
{%- endmacro %}

{#- DuckDB: list functions give the word Jaccard of the expanded stage in one expression. -#}
{% macro duckdb__retrieve_examples_function(path='udf') -%}
{%- if path == 'sql' %}
with recursive q as (
    select
        cast(question as varchar) as q_text,
        lower(trim(cast(question as varchar))) as q_exact,
        dbrouter_sql_normalize_question(left(cast(question as varchar), {{ dbrouter.get_var('dbrouter__max_question_chars') | int }})) as q_norm
    where nullif(trim(cast(question as varchar)), '') is not null
),
q_texts as (
    select 'i' as text_id, dbrouter_sql_content_text(q_text) as text from q
    union all
    select 'n', dbrouter_sql_content_text(q_norm) from q
),
{{ dbrouter.static_text_vectors_step('q_texts', 'q_static') }},
vec as (
    select q.*, cast((select v_list from q_static where text_id = 'i') as float[{{ dbrouter.get_var('dbrouter__embedding_dim') | int }}]) as v_i,
        cast((select v_list from q_static where text_id = 'n') as float[{{ dbrouter.get_var('dbrouter__embedding_dim') | int }}]) as v_n,
        (select vector_label from {{ dbrouter.kb_relation('kb_static_model') }}) as model
    from q
),
th as (
    select static_normalized_threshold as normalized_threshold, static_main_clause_threshold as main_clause_threshold,
        static_expanded_threshold as expanded_threshold
    from {{ dbrouter.kb_relation('kb_example_thresholds') }}
),
{%- else %}
with q as (
    select
        cast(question as varchar) as q_text,
        lower(trim(cast(question as varchar))) as q_exact,
        dbrouter_normalize_question(left(cast(question as varchar), {{ dbrouter.get_var('dbrouter__max_question_chars') }})) as q_norm
    where nullif(trim(cast(question as varchar)), '') is not null
),
vec as (
    select q.*, embed(q_text) as v_i, embed(q_norm) as v_n, dbrouter_embedder() as model
    from q
),
th as (
    select normalized_threshold, main_clause_threshold, expanded_threshold
    from {{ dbrouter.kb_relation('kb_example_thresholds') }}
),
{%- endif %}
{{ dbrouter._example_similarities(path) }},
{{ dbrouter.example_cascade_step() }}
select
    cast(row_number() over (order by b.score desc, b.example_id) as integer) as rank,
    b.stage_name as stage, ex.db_id, b.example_id, ex.question, ex.sql_text, ex.tables_used,
    round(cast(b.score as double), 4) as score, round(cast(b.threshold as double), 4) as threshold,
    round(cast(b.similarity as double), 4) as similarity
from best as b
join ex on ex.example_id = b.example_id
order by b.score desc, b.example_id
limit greatest(coalesce(k, 3), 1)
{%- endmacro %}

{#- Snowflake: a SQL UDTF; the word Jaccard of the expanded stage uses SPLIT, ARRAY_DISTINCT,
    ARRAY_INTERSECTION and ARRAY_CAT; questions are embedded by embed_sql and vectors matched by
    the build's label; LIMIT takes no expression, so the rank is filtered. -#}
{% macro snowflake__retrieve_examples_function(path='udf') -%}
{%- if path != 'udf' -%}
  {{ exceptions.raise_compiler_error("retrieve_examples_function: adapter " ~ adapter.type() ~ ", argument path '" ~ path ~ "': Snowflake has the UDF path only (the pure-SQL path is DuckDB's)") }}
{%- endif -%}
with q as (
    select
        question as q_text,
        lower(trim(question)) as q_exact,
        dbrouter_normalize_question(left(question, {{ dbrouter.get_var('dbrouter__max_question_chars') | int }})) as q_norm
    where nullif(trim(question), '') is not null
),
vec as (
    select q.*, {{ dbrouter.embed_sql('q_text') }} as v_i, {{ dbrouter.embed_sql('q_norm') }} as v_n,
        '{{ dbrouter.embedder_label() }}' as model
    from q
),
th as (
    select * from {{ dbrouter.kb_relation('kb_example_thresholds') }}
),
{{ dbrouter._example_similarities('udf') }},
{{ dbrouter.example_cascade_step() }},
ranked as (
    select b.*, cast(row_number() over (order by b.score desc, b.example_id) as integer) as rank
    from best as b
)
select
    r.rank, r.stage_name as stage, ex.db_id, r.example_id, ex.question, ex.sql_text, ex.tables_used,
    round(cast(r.score as double), 4) as score, round(cast(r.threshold as double), 4) as threshold,
    round(cast(r.similarity as double), 4) as similarity
from ranked as r
join ex on ex.example_id = r.example_id
where r.rank <= greatest(coalesce(k, 3), 1)
{%- endmacro %}

{#- The stored examples the caller may see (ex), their example documents' vectors in the path's
    space (d) and each example's similarities to the question (sims: s_norm, s_norm_any, s_any):
    written once for every adapter; vec (the question's vectors, per dialect) comes before. -#}
{% macro _example_similarities(path) -%}
ex as (
    select * from {{ dbrouter.kb_relation('kb_examples') }} where (db is null or db_id = db) and {{ dbrouter.allowed_database('db_id') }}
),
d as (
    select e.source_id as example_id, e.doc_kind, e.embedding
    from {{ dbrouter.kb_relation('kb_static_document_embeddings' if path == 'sql' else 'kb_document_embeddings') }} as e, vec
    where e.doc_kind like 'example%' and (db is null or e.db_id = db) and {{ dbrouter.allowed_database('e.db_id') }} and e.embedding_model = vec.model
),
sims as (
    select
        d.example_id,
        max(case when d.doc_kind = 'example_normalized' then {{ dbrouter.cosine_similarity('d.embedding', 'vec.v_n') }} end) as s_norm,
        max(case when d.doc_kind in ('example', 'example_normalized', 'example_main_clause', 'example_paraphrase')
                 then {{ dbrouter.cosine_similarity('d.embedding', 'vec.v_n') }} end) as s_norm_any,
        max(greatest({{ dbrouter.cosine_similarity('d.embedding', 'vec.v_i') }},
                     {{ dbrouter.cosine_similarity('d.embedding', 'vec.v_n') }})) as s_any
    from d, vec
    group by 1
)
{%- endmacro %}
