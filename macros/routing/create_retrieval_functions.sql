{#-
  Creates the retrieval entry points in the warehouse (run from `on-run-end`):

    retrieve_statements(question, db, k := 4)
        Sub-string based retrieval (SbR) of domain statements: the question's numbers and dates
        are canonicalised, its contiguous word sub-strings whose length is within
        +-dbrouter__sbr_window words of some statement's text are embedded in one batch, and each
        statement scores the max cosine between its canonical text and the sub-strings within
        +-window words of its own length. db NULL searches every database.
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
{%- endmacro %}
