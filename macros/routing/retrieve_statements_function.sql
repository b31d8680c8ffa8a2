{#-
  `retrieve_statements(question, db, k := 4)`: sub-string based retrieval (SbR) of domain
  statements (see create_retrieval_functions for the method).

  Args:
    path: 'udf' (canonicalisation, sub-strings and vectors from the UDFs) or 'sql' (the same in
      SQL: canonicalize_text, the words of python_udfs.text.words, static_text_vectors_step over
      kb_static_document_embeddings).

  Consumes: kb_domain_statements, kb_document_embeddings; UDFs dbrouter_canonicalize(),
    dbrouter_substrings(), embed(), dbrouter_embedder() (path 'udf'), or
    kb_static_document_embeddings, kb_static_pieces, kb_static_model (path 'sql').
  Produces: the body (a query, no trailing semicolon) of the table function returning
    (rank, db_id, statement_id, statement_text, expression, snippet, structure_status, score, matched_text).
-#}
{% macro retrieve_statements_function(path='udf') -%}
  {{ return(adapter.dispatch('retrieve_statements_function', 'dbrouter')(path)) }}
{%- endmacro %}

{% macro default__retrieve_statements_function(path='udf') -%}
  {{ exceptions.raise_compiler_error("retrieve_statements_function: adapter " ~ adapter.type() ~ " is not supported yet (argument: none); DuckDB and Snowflake are supported") }}
{%- endmacro %}

{#- DuckDB: the sub-strings come from a list-returning Python UDF, are unnested and embedded by
    the arrow UDF in one vectorised call. -#}
{% macro duckdb__retrieve_statements_function(path='udf') -%}
{{ 'with recursive' if path == 'sql' else 'with' }} st as (
    select
        ds.statement_id, ds.db_id, ds.statement_text, ds.expression, ds.snippet,
        ds.structure_status, ds.retrieval_text, ds.retrieval_words, e.embedding
    from {{ dbrouter.kb_relation('kb_domain_statements') }} as ds
{%- if path == 'sql' %}
    join {{ dbrouter.kb_relation('kb_static_document_embeddings') }} as e on e.document_id = 'statement:' || ds.statement_id
    where (db is null or ds.db_id = db) and {{ dbrouter.allowed_database('ds.db_id') }}
{%- else %}
    join {{ dbrouter.kb_relation('kb_document_embeddings') }} as e on e.document_id = 'statement:' || ds.statement_id
    where (db is null or ds.db_id = db) and {{ dbrouter.allowed_database('ds.db_id') }} and e.embedding_model = dbrouter_embedder()
{%- endif %}
),
bounds as (
    select greatest(min(retrieval_words) - {{ dbrouter.get_var('dbrouter__sbr_window') | int }}, 1) as lo, max(retrieval_words) + {{ dbrouter.get_var('dbrouter__sbr_window') | int }} as hi from st
),
{%- if path == 'sql' %}
toks as (
    select list_filter(regexp_extract_all(
            dbrouter_sql_canonicalize(left(cast(question as varchar), {{ dbrouter.get_var('dbrouter__max_question_chars') | int }})),
            '[\p{L}\p{N}_''’%-]+'),
        lambda t: regexp_matches(t, '[\p{L}\p{N}_]')) as t
),
sub_all as (
    select n, i, array_to_string(t[i + 1:i + n], ' ') as sub_text
    from (select t, n, unnest(range(len(t) - n + 1)) as i
          from (select t, unnest(range(bounds.lo, least(len(t), bounds.hi) + 1)) as n from toks, bounds
                where bounds.lo is not null))
),
subs as (
    select row_number() over (order by n, i) as text_id, dbrouter_sql_content_text(sub_text) as text, sub_text, n as n_words
    from (select *, row_number() over (partition by lower(sub_text) order by n, i) as seen from sub_all)
    where seen = 1
    order by n, i
    limit 400
),
{{ dbrouter.static_text_vectors_step('subs', 'sub_static') }},
sub_vectors as (
    select s.sub_text, s.n_words, cast(v.v_list as float[{{ dbrouter.get_var('dbrouter__embedding_dim') | int }}]) as v from subs as s join sub_static as v on v.text_id = s.text_id
),
{%- else %}
subs as (
    select unnest(dbrouter_substrings(
        dbrouter_canonicalize(left(cast(question as varchar), {{ dbrouter.get_var('dbrouter__max_question_chars') }})),
        bounds.lo, bounds.hi)) as sub
    from bounds
    where bounds.lo is not null
),
sub_vectors as (
    select sub.text as sub_text, sub.n_words as n_words, embed(sub.text) as v from subs
),
{%- endif %}
pairs as (
    select st.statement_id, sv.sub_text, sv.n_words, {{ dbrouter.cosine_similarity('st.embedding', 'sv.v') }} as sim
    from st
    join sub_vectors as sv on abs(sv.n_words - st.retrieval_words) <= {{ dbrouter.get_var('dbrouter__sbr_window') | int }}
),
{#- the best-matching sub-string; of equal ones (a stop word more or less gives the same vector) the
    shortest, then the first by text: arg_max picked among them by thread timing #}
scored as (
    select statement_id, sim as score, sub_text as matched_text
    from (select *, row_number() over (partition by statement_id order by sim desc, n_words, sub_text) as best
          from pairs)
    where best = 1
)
select
    cast(row_number() over (order by sc.score desc, st.statement_id) as integer) as rank,
    st.db_id, st.statement_id, st.statement_text, st.expression, st.snippet, st.structure_status,
    round(cast(sc.score as double), 4) as score, sc.matched_text
from scored as sc
join st on st.statement_id = sc.statement_id
order by sc.score desc, st.statement_id
limit greatest(coalesce(k, 4), 1)
{%- endmacro %}

{#- Snowflake: a SQL UDTF; the sub-strings come back from the Python UDF as an ARRAY of objects
    opened with FLATTEN, each embedded by embed_sql; vectors are matched by the build's label;
    LIMIT takes no expression, so the rank is filtered. -#}
{% macro snowflake__retrieve_statements_function(path='udf') -%}
{%- if path != 'udf' -%}
  {{ exceptions.raise_compiler_error("retrieve_statements_function: adapter " ~ adapter.type() ~ ", argument path '" ~ path ~ "': Snowflake has the UDF path only (the pure-SQL path is DuckDB's)") }}
{%- endif -%}
{%- set w = dbrouter.get_var('dbrouter__sbr_window') | int -%}
with st as (
    select
        ds.statement_id, ds.db_id, ds.statement_text, ds.expression, ds.snippet,
        ds.structure_status, ds.retrieval_text, ds.retrieval_words, e.embedding
    from {{ dbrouter.kb_relation('kb_domain_statements') }} as ds
    join {{ dbrouter.kb_relation('kb_document_embeddings') }} as e on e.document_id = 'statement:' || ds.statement_id
    where (db is null or ds.db_id = db) and {{ dbrouter.allowed_database('ds.db_id') }} and e.embedding_model = '{{ dbrouter.embedder_label() }}'
),
bounds as (
    select greatest(min(retrieval_words) - {{ w }}, 1) as lo, max(retrieval_words) + {{ w }} as hi from st
),
subs as (
    select f.value:text::varchar as sub_text, f.value:n_words::integer as n_words
    from bounds,
        lateral flatten(input => dbrouter_substrings(
            dbrouter_canonicalize(left(question, {{ dbrouter.get_var('dbrouter__max_question_chars') | int }})), bounds.lo, bounds.hi)) as f
    where bounds.lo is not null
),
sub_vectors as (
    select sub_text, n_words, {{ dbrouter.embed_sql('sub_text') }} as v from subs
),
pairs as (
    select st.statement_id, sv.sub_text, sv.n_words, {{ dbrouter.cosine_similarity('st.embedding', 'sv.v') }} as sim
    from st
    join sub_vectors as sv on abs(sv.n_words - st.retrieval_words) <= {{ w }}
),
scored as (
    select statement_id, sim as score, sub_text as matched_text
    from pairs
    qualify row_number() over (partition by statement_id order by sim desc, n_words, sub_text) = 1
),
ranked as (
    select sc.*, cast(row_number() over (order by sc.score desc, sc.statement_id) as integer) as rank
    from scored as sc
)
select
    r.rank, st.db_id, st.statement_id, st.statement_text, st.expression, st.snippet, st.structure_status,
    round(cast(r.score as double), 4) as score, r.matched_text
from ranked as r
join st on st.statement_id = r.statement_id
where r.rank <= greatest(coalesce(k, 4), 1)
{%- endmacro %}
