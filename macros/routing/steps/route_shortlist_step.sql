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

  Two stages (var dbrouter__first_stage_k): stage 1 scores every database on its route_stage 1
  documents (database, table, example); stage 2 reads the route_stage 2 documents (columns) of
  stage 1's top first_stage_k databases only (at least `depth`), whose scores then use their
  columns; the others follow in stage 1's order, their column similarity taken to be their table
  similarity. With first_stage_k at least the number of databases the ranking is the one-stage one.

  Lexical channel: BM25 of the question's content words over each table's terms (kb_table_terms),
  a database scored by its best table; stage 1's order and the shortlist's are the reciprocal-rank
  fusion of the dense ranking and this one (var dbrouter__lexical_rrf_k).

  Consumes: kb_document_embeddings or kb_static_document_embeddings, kb_routing_calibration, kb_table_terms,
    kb_vocabulary (both through term_postings);
    UDFs embed(), dbrouter_embedder() (path 'udf') or kb_static_pieces, kb_static_model (path 'sql').
  Produces CTEs (comma-separated, no leading WITH):
    q          (v, model; path 'sql' also v_whole, whole_model: every word's)  the question's vector
    intent     (intent_score, intent_floor)                     the intent probe (intent_probe_columns)
    shortlist  (db_id, s_database, s_table, s_column, s_example, top_table, top_column,
                top_example_sql, first_stage_rank, column_scored, example_votes, example_match, s_schema,
                score, s_lexical, lexical_table, lexical_rank, dense_rank, shortlist_rank, gap, trusted,
                abstain_floor, offtopic_floor, n_terms, n_known, intent_score,
                intent_floor)   every database, ranked (a database with an exact example match first,
                then those stage 2 scored)
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
{%- set maxc = dbrouter.get_var('dbrouter__max_question_chars') | int -%}
{%- set mat = dbrouter.cte_materialized() -%}
{%- set docs = dbrouter.kb_relation('kb_static_document_embeddings' if path == 'sql' else 'kb_document_embeddings') -%}
{%- set pre = 'static_' if path == 'sql' else '' -%}
{#- the model is compared as a value, not as a column of q: `d.embedding_model = q.model` made a
    hash join that carried every document's vector through it before stage 2's join on db_id kept
    the candidates' (10,000 databases: 517k column vectors, 0.69 of the pure-SQL path's 1.7 s of
    CPU). The UDF path's embedder is a constant; the pure-SQL path's is a one-row subquery, which
    DuckDB joins after the db_id join. -#}
{%- set model = '(select model from q)' if path == 'sql' else dbrouter.runtime_embedder() -%}
{%- set first_k = dbrouter.get_var('dbrouter__first_stage_k') | int -%}
{%- set paraphrase_min = dbrouter.get_var('dbrouter__paraphrase_min_static' if path == 'sql' else 'dbrouter__paraphrase_min') | float -%}
{%- set content_words = 'dbrouter_sql_content_words' if path == 'sql' else 'dbrouter_content_words' -%}
{%- if first_k < 1 -%}
  {{ exceptions.raise_compiler_error("route_shortlist_step: adapter " ~ adapter.type() ~ ", var dbrouter__first_stage_k must be >= 1, got " ~ first_k) }}
{%- endif -%}
{#- a database whose column documents stage 2 reads: stage 1's top first_stage_k, or the depth if larger -#}
{%- set in_stage_2 = "first_stage_rank <= greatest(" ~ first_k ~ ", coalesce(" ~ depth ~ ", " ~ (dbrouter.get_var('dbrouter__shortlist_k') | int) ~ "))" -%}
{%- if path == 'sql' %}
q_text as (
    select 0 as text_id, dbrouter_sql_content_text(left(cast({{ question }} as varchar), {{ maxc }})) as text
    {# the intent probe reads every word of the question ("how do I", "you"), not its content words #}
    union all
    select 1, left(cast({{ question }} as varchar), {{ maxc }})
),
{{ dbrouter.static_text_vectors_step('q_text', 'q_vec') }},
q as {{ mat }} (
    select cast((select v_list from q_vec where text_id = 0) as float[{{ dbrouter.get_var('dbrouter__embedding_dim') | int }}]) as v,
        cast((select v_list from q_vec where text_id = 1) as float[{{ dbrouter.get_var('dbrouter__embedding_dim') | int }}]) as v_whole,
        (select vector_label from {{ dbrouter.kb_relation('kb_static_model') }}) as model,
        (select static_model from {{ dbrouter.kb_relation('kb_static_model') }}) as whole_model
),
{%- else %}
q as {{ mat }} (
    select {{ dbrouter.embed_sql("left(cast(" ~ question ~ " as varchar), " ~ maxc ~ ")") }} as v,
        {{ dbrouter.runtime_embedder() }} as model
),
{%- endif %}
intent as (
    select {{ dbrouter.intent_probe_columns('q.v_whole' if path == 'sql' else 'q.v', 'q.whole_model' if path == 'sql' else 'q.model', 'probe.weights') }}
    from q
    left join {{ dbrouter.kb_relation('kb_intent_probes') }} as probe
        on probe.embedder = {{ 'q.whole_model' if path == 'sql' else 'q.model' }}
),
{#- Stage 1 reads every database's database, table and example documents (they grow with the
    tables and examples, not with the columns); its score is the fused score below with the column
    similarity taken to be the table similarity (a table document lists its columns). Stage 2 reads
    the column documents of stage 1's top `dbrouter__first_stage_k` databases alone (and those of a
    stored example question asked again): the columns are most of a repository's documents. -#}
hits as {{ mat }} (
    select * from ({{ dbrouter.shortlist_document_hits(1, path, docs, model) }}) as all_hits
    where {{ dbrouter.allowed_database('all_hits.db_id') }}
),
ranked_hits as (
    select *, {{ dbrouter.top_n_rank('db_id, doc_kind', 'sim desc, doc_label desc') }} as rn
    from hits
),
per_db_first as (
    select
        db_id,
        max(case when doc_kind = 'database' then sim end) as s_database,
        {{ dbrouter._shortlist_mean(dbrouter.get_var('dbrouter__top_tables') | int, "doc_kind = 'table'") }} as s_table,
        max(case when doc_kind = 'example' then sim end) as s_example,
        {{ dbrouter.top_value('doc_label', 'sim', 'doc_label', "doc_kind = 'table'") }} as top_table,
        {{ dbrouter.top_value('doc_label', 'sim', 'doc_label', "doc_kind = 'example'") }} as top_example_sql
    from ranked_hits
    group by db_id
),
example_votes as (
    {#- the floor filters before the ranking, which then sorts the few examples above it instead of
        every example (the same rows: the examples ranked above one over the floor are over it too);
        db_id breaks the last tie: two databases with the same example (same vector, same SQL) at
        the last vote gave it to either, question by question (1 run in 4 on spider-route) -#}
    select db_id, count(*) * 1.0 / {{ dbrouter.get_var('dbrouter__example_votes') | int }} as example_votes
    from (select db_id, sim, row_number() over (order by sim desc, doc_label, db_id) as rn from hits
          where doc_kind = 'example' and sim >= {{ dbrouter.get_var('dbrouter__example_floor') | float }}) as ranked
    where rn <= {{ dbrouter.get_var('dbrouter__example_votes') | int }}
    group by db_id
),
calibration as (
    select coalesce(max({{ pre }}example_gap), 0) as gap, coalesce(max({{ pre }}examples_trusted), 0) as trusted,
        max({{ pre }}abstain_floor) as abstain_floor, max({{ pre }}offtopic_floor) as offtopic_floor
    from {{ dbrouter.kb_relation('kb_routing_calibration') }}
),
q_key as (
    select {{ dbrouter.question_key("left(cast(" ~ question ~ " as varchar), " ~ maxc ~ ")", one_row=true) }} as question_key
),
example_match as (
    {#- a stored example question asked again (same words, any case and punctuation) routes to its
        database whatever the similarities say: the user told us where that question belongs. So does
        a close paraphrase of one while the KB's examples are not trusted (a handful of them, which
        the leave-one-out test turns off): the database of the most similar stored question, when
        that similarity reaches dbrouter__paraphrase_min (per path: on spider-route's train
        questions, the nearest other question at >= 0.9 (MiniLM) / >= 0.97 (static) is of the same
        database for 0.94 / 0.92 of them; not tuned on test questions). Trusted examples already
        weigh in through the fused score. -#}
    select distinct e.db_id
    from {{ dbrouter.kb_relation('kb_examples') }} as e
    join q_key as k on k.question_key = e.question_key
    where {{ dbrouter.allowed_database('e.db_id') }}
    union
    select nearest.db_id
    from (select db_id, sim, row_number() over (order by sim desc, doc_label, db_id) as rn
          from hits where doc_kind = 'example') as nearest
    cross join calibration as t
    where nearest.rn = 1 and t.trusted = 0 and nearest.sim >= {{ paraphrase_min }}
),
{#- The lexical channel (kb_table_terms): BM25 of the question's content words over each table's
    distinct terms; a database scores by its best table, so width alone earns nothing. It ranks
    every database beside the dense score and the two rankings are fused by reciprocal rank
    (rrf_k): a database either channel puts near the top reaches the re-rank. -#}
q_terms as (
    select distinct cast(w.value as varchar) as term
    from {{ dbrouter.flatten(content_words ~ "(left(cast(" ~ question ~ " as varchar), " ~ maxc ~ "))", 'w') }}
),
{#- "Nothing here": how many of the question's content words some database the caller may see
    knows (kb_vocabulary); abstain_condition refuses a question with words and none of them known. -#}
q_known as (
    select distinct v.term
    from {{ dbrouter.term_postings('kb_vocabulary', 'term', '(select list(term) from q_terms)', path) }} as v
    join q_terms as q on q.term = v.term
    where {{ dbrouter.allowed_database('v.db_id') }}
),
q_vocabulary as (
    select count(*) as n_terms, count(k.term) as n_known
    from q_terms as q
    left join q_known as k on k.term = q.term
),
{#- the caller's scope filters the databases, before they are ranked: a database's score is its own
    tables', so filtering them first gives the same ranks (at 10,000 synthetic databases a
    question's terms had 41,956 rows and 7,789 databases: a semi join 7 ms shorter) -#}
shortlist_lexical as {{ mat }} (
    select db_id, s_lexical, lexical_table,
        cast(row_number() over (order by s_lexical desc, db_id) as integer) as lexical_rank
    from ({{ dbrouter.lexical_best_tables('q_terms', path) }}) as per_db
    where {{ dbrouter.allowed_database('per_db.db_id') }}
),
dense_first as (
    select p.db_id, case when m.db_id is null then 0 else 1 end as example_match,
        cast(row_number() over (order by {{ dbrouter._shortlist_score(dbrouter.schema_score('p.s_database', 'p.s_table', 'p.s_table'), 'p.s_example') }} desc,
            p.db_id) as integer) as dense_rank
    from per_db_first as p
    cross join calibration as t
    left join example_match as m on m.db_id = p.db_id
),
first_stage as {{ mat }} (
    select d.db_id,
        cast(row_number() over (order by d.example_match desc,
            {{ dbrouter._rrf('d.dense_rank', 'l.lexical_rank') }} desc, d.dense_rank, d.db_id) as integer) as first_stage_rank
    from dense_first as d
    left join shortlist_lexical as l on l.db_id = d.db_id
),
column_hits as {{ mat }} (
    {{ dbrouter.shortlist_document_hits(2, path, docs, model,
        'select db_id from first_stage where ' ~ in_stage_2) }}
),
per_db_column as (
    select db_id,
        {{ dbrouter._shortlist_mean(dbrouter.get_var('dbrouter__top_columns') | int, 'true') }} as s_column,
        {{ dbrouter.top_value('doc_label', 'sim', 'doc_label') }} as top_column
    from (select *, {{ dbrouter.top_n_rank('db_id', 'sim desc, doc_label desc') }} as rn from column_hits) as ranked
    group by db_id
),
per_db as (
    select p.db_id, p.s_database, p.s_table, c.s_column, p.s_example, p.top_table, c.top_column, p.top_example_sql,
        f.first_stage_rank,
        case when f.{{ in_stage_2 }} then 1 else 0 end as column_scored
    from per_db_first as p
    join first_stage as f on f.db_id = p.db_id
    left join per_db_column as c on c.db_id = p.db_id
),
fused as (
    select *,
        {{ dbrouter._shortlist_score('s_schema', 's_example') }} as score
    from (select p.*, coalesce(v.example_votes, 0) as example_votes,
              case when m.db_id is null then 0 else 1 end as example_match,
              {{ dbrouter.schema_score('p.s_database', 'p.s_table', 'case when p.column_scored = 1 then p.s_column else p.s_table end') }} as s_schema
          from per_db as p
          left join example_votes as v on v.db_id = p.db_id
          left join example_match as m on m.db_id = p.db_id) as scored
    cross join calibration as t
    cross join q_vocabulary as qv
    cross join intent as qi
),
fused_ranked as (
    select f.*, l.s_lexical, l.lexical_table, l.lexical_rank,
        cast(row_number() over (order by f.score desc, f.db_id) as integer) as dense_rank
    from fused as f
    left join shortlist_lexical as l on l.db_id = f.db_id
),
shortlist as {{ mat }} (
    select *, cast(row_number() over (order by example_match desc, column_scored desc,
            {{ dbrouter._rrf('dense_rank', 'lexical_rank') }} desc, score desc, db_id) as integer) as shortlist_rank
    from fused_ranked
),
candidates as {{ mat }} (
    select db_id, score, shortlist_rank from shortlist
    where shortlist_rank <= greatest(coalesce({{ depth }}, {{ dbrouter.get_var('dbrouter__shortlist_k') | int }}), 1)
)
{%- endmacro %}

{#- The first ranking's score of a database: its schema score fused with its best example
    similarity, or, without examples, the schema score plus the KB's example gap (t: the
    calibration CTE). Stage 1 and stage 2 score alike, stage 1 with the table similarity for the
    column similarity. -#}
{% macro _shortlist_score(s_schema, s_example) -%}
{%- set w_ex = dbrouter.get_var('dbrouter__weight_example') | float -%}
(({{ s_schema }}) + {{ w_ex }} * t.trusted * coalesce({{ s_example }}, ({{ s_schema }}) + t.gap)) / (1.0 + {{ w_ex }} * t.trusted)
{%- endmacro %}

{#- The mean similarity of a database's n best documents of one kind over the shortlist's ranked
    rows: the row's agg where the hits carry it (DuckDB's UDF path returns the best row alone, with
    the mean of the n best: shortlist_document_hits), else the mean of the n best rows. -#}
{% macro _shortlist_mean(n, cond) -%}
coalesce(max(case when {{ cond }} then agg end), {{ dbrouter.top_n_avg('sim', n, cond) }})
{%- endmacro %}

{#- Reciprocal-rank fusion of the dense and the lexical ranking (Cormack et al., 2009): each channel
    adds 1 / (k + rank); a database the lexical channel does not rank (no word of the question in
    its tables) gets that channel's 0. -#}
{% macro _rrf(dense_rank, lexical_rank) -%}
{%- set k = dbrouter.get_var('dbrouter__lexical_rrf_k') | float -%}
(1.0 / ({{ k }} + {{ dense_rank }}) + coalesce(1.0 / ({{ k }} + {{ lexical_rank }}), 0))
{%- endmacro %}
