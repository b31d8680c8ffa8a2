{#-
  Creates the retrieval entry points in the warehouse (run from `on-run-end`):

    retrieve_statements(question, db, k := 4)
        Sub-string based retrieval (SbR) of domain statements: the question's numbers and dates
        are canonicalised, its contiguous word sub-strings whose length is within
        +-dbrouter__sbr_window words of some statement's text are embedded in one batch, and each
        statement scores the max cosine between its canonical text and the sub-strings within
        +-window words of its own length. db NULL searches every database.

    retrieve_examples(question, db, k := 3)
        The progressive example cascade; the first stage that finds anything answers:
          1 exact       - the question equals a stored one (case/space folded): its SQL as is;
          2 normalized  - normalised question vs examples' normalised questions >= normalized_threshold;
          3 main_clause - normalised question vs the examples' question, normalised question,
                          main clause and paraphrases >= main_clause_threshold (lower);
          4 expanded    - any descriptor >= expanded_threshold, re-ranked by
                          0.5 x cosine(question, best descriptor) + 0.5 x word Jaccard of the
                          normalised questions (documented lexical/embedding re-rank: no
                          cross-encoder weights can be installed offline).
        Thresholds come from kb_example_thresholds. db NULL searches every database.
-#}
{% macro create_retrieval_functions() -%}
  {{ return(adapter.dispatch('create_retrieval_functions', 'dbrouter')()) }}
{%- endmacro %}

{% macro default__create_retrieval_functions() -%}
  {{ exceptions.raise_compiler_error("create_retrieval_functions: adapter " ~ adapter.type() ~ " is not supported yet (argument: none); DuckDB is supported") }}
{%- endmacro %}

{#- DuckDB: table macros stored in the warehouse; the sub-strings come from a list-returning
    Python UDF, are unnested and embedded by the arrow UDF in one vectorised call. -#}
{% macro duckdb__create_retrieval_functions() -%}
{%- set s = target.schema -%}
{%- set w = var('dbrouter__sbr_window') | int -%}
create or replace macro retrieve_statements(question, db, k := 4) as table
with st as (
    select
        ds.statement_id, ds.db_id, ds.statement_text, ds.expression, ds.snippet,
        ds.structure_status, ds.retrieval_text, ds.retrieval_words, e.embedding
    from {{ s }}.kb_domain_statements as ds
    join {{ s }}.kb_document_embeddings as e on e.document_id = 'statement:' || ds.statement_id
    where (db is null or ds.db_id = db) and e.embedding_model = dbrouter_embedder()
),
bounds as (
    select greatest(min(retrieval_words) - {{ w }}, 1) as lo, max(retrieval_words) + {{ w }} as hi from st
),
subs as (
    select unnest(dbrouter_substrings(
        dbrouter_canonicalize(left(cast(question as varchar), {{ var('dbrouter__max_question_chars') }})),
        bounds.lo, bounds.hi)) as sub
    from bounds
    where bounds.lo is not null
),
sub_vectors as (
    select sub.text as sub_text, sub.n_words as n_words, embed(sub.text) as v from subs
),
pairs as (
    select st.statement_id, sv.sub_text, {{ dbrouter.cosine_similarity('st.embedding', 'sv.v') }} as sim
    from st
    join sub_vectors as sv on abs(sv.n_words - st.retrieval_words) <= {{ w }}
),
scored as (
    select statement_id, max(sim) as score, arg_max(sub_text, sim) as matched_text
    from pairs
    group by 1
)
select
    cast(row_number() over (order by sc.score desc, st.statement_id) as integer) as rank,
    st.db_id, st.statement_id, st.statement_text, st.expression, st.snippet, st.structure_status,
    round(cast(sc.score as double), 4) as score, sc.matched_text
from scored as sc
join st on st.statement_id = sc.statement_id
order by sc.score desc, st.statement_id
limit greatest(coalesce(k, 4), 1);

create or replace macro retrieve_examples(question, db, k := 3) as table
with q as (
    select
        cast(question as varchar) as q_text,
        lower(trim(cast(question as varchar))) as q_exact,
        dbrouter_normalize_question(left(cast(question as varchar), {{ var('dbrouter__max_question_chars') }})) as q_norm
    where nullif(trim(cast(question as varchar)), '') is not null
),
vec as (
    select q.*, embed(q_text) as v_i, embed(q_norm) as v_n, dbrouter_embedder() as model
    from q
),
th as (
    select * from {{ s }}.kb_example_thresholds
),
ex as (
    select * from {{ s }}.kb_examples where db is null or db_id = db
),
d as (
    select e.source_id as example_id, e.doc_kind, e.embedding
    from {{ s }}.kb_document_embeddings as e, vec
    where e.doc_kind like 'example%' and (db is null or e.db_id = db) and e.embedding_model = vec.model
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
),
candidates as (
    select 1 as stage, 'exact' as stage_name, ex.example_id, 1.0 as score, 1.0 as threshold
    from ex, vec where lower(trim(ex.question)) = vec.q_exact
    union all
    select 2, 'normalized', s.example_id, s.s_norm, th.normalized_threshold
    from sims as s, th where s.s_norm >= th.normalized_threshold
    union all
    select 3, 'main_clause', s.example_id, s.s_norm_any, th.main_clause_threshold
    from sims as s, th where s.s_norm_any >= th.main_clause_threshold
    union all
    select 4, 'expanded', s.example_id,
        0.5 * s.s_any + 0.5 * (
            len(list_intersect(list_distinct(string_split(vec.q_norm, ' ')), list_distinct(string_split(ex.normalized_question, ' '))))
            / greatest(len(list_distinct(list_concat(string_split(vec.q_norm, ' '), string_split(ex.normalized_question, ' ')))), 1)),
        th.expanded_threshold
    from sims as s
    join ex on ex.example_id = s.example_id
    cross join vec
    cross join th
    where s.s_any >= th.expanded_threshold
),
first_stage as (
    select * from candidates where stage = (select min(stage) from candidates)
),
best as (
    select example_id, max(stage) as stage, any_value(stage_name) as stage_name, max(score) as score, max(threshold) as threshold
    from first_stage group by 1
)
select
    cast(row_number() over (order by b.score desc, b.example_id) as integer) as rank,
    b.stage_name as stage, ex.db_id, b.example_id, ex.question, ex.sql_text, ex.tables_used,
    round(cast(b.score as double), 4) as score, round(cast(b.threshold as double), 4) as threshold
from best as b
join ex on ex.example_id = b.example_id
order by b.score desc, b.example_id
limit greatest(coalesce(k, 3), 1);
{%- endmacro %}
