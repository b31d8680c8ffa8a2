{#-
  Creates the SQL entry points of routing in the warehouse (run from `on-run-end`):

    route_shortlist(question, k := 10)        -> step 1: (shortlist_rank, db_id, score, signals) by fused similarity
    route_phrase_mappings(question, k := 10)  -> step 2: phrase -> table.column (or N/A) for the top-k shortlist
    route_query_ranked(question, k := 5)      -> steps 1-5: (rank, db_id, score, shortlist_rank, evidence JSON)
    route_query_ranked_mapped(question, mappings, k := 5)
                                              -> the same with phrase mappings given as JSON (the LLM path:
                                                 [{db_id, phrase, table_name, column_name}], column NULL = N/A)
    route_shortlist_k()                       -> the re-rank depth this build uses (dbrouter__shortlist_k)
    route_query(question)                     -> best db_id, or NULL (empty question / no KB match)
    route_query_json(question, k := 5)        -> JSON {ranking: [...], reason}  (reason explains an empty ranking)

  Method (issue 4): (1) shortlist by fusing the database document, the mean of the top tables, the
  mean of the top columns and the best example question (a database without examples gets the
  KB-calibrated example_gap); (2) each content word of the question is mapped, through the spans
  of up to dbrouter__phrase_max_words content words containing it, to every column of a
  shortlisted database whose label the span matches (phrase-embedder cosine, or 1 for an exact
  name/value token match) at or above dbrouter__phrase_threshold, else N/A; (3) coverage =
  exp(-n * N_NA / N_total); (4) connectivity = 1 when one connected part of the join graph
  (kb_table_components, built by the recursive reachability CTE) holds a mapping of every mapped
  phrase; (5) the top dbrouter__shortlist_k databases are ordered by coverage x connectivity,
  ties by the semantic score (mean best cosine of the mapped phrases) plus
  dbrouter__rerank_shortlist_weight x the shortlist score; the rest follow by shortlist score.
  They call the `embed()` / `embed_phrase()` UDFs, so a connection needs the UDFs registered
  (dbt's plugin or `dbrouter.connect()`); nothing here touches the network.
-#}
{% macro create_route_functions() -%}
  {{ return(adapter.dispatch('create_route_functions', 'dbrouter')()) }}
{%- endmacro %}

{% macro default__create_route_functions() -%}
  {{ exceptions.raise_compiler_error("create_route_functions: adapter " ~ adapter.type() ~ " is not supported yet (argument: none); DuckDB is supported, Snowflake comes with the Snowflake issue") }}
{%- endmacro %}

{#- DuckDB: SQL macros (scalar and table) are catalog objects stored in the warehouse file, so
    any client with the UDFs registered can call them; native array_cosine_similarity does the
    vector math without a Python call per row. -#}
{% macro duckdb__create_route_functions() -%}
{%- set emb = target.schema ~ '.kb_document_embeddings' -%}
{%- set calib = target.schema ~ '.kb_routing_calibration' -%}
{%- set phrases = target.schema ~ '.kb_column_phrases' -%}
{%- set reach = target.schema ~ '.kb_table_reachability' -%}
{%- set w_ex = var('dbrouter__weight_example') | float -%}
{%- set tau = var('dbrouter__phrase_threshold') | float -%}
{%- set pen = var('dbrouter__coverage_penalty') | float -%}
{%- set alpha = var('dbrouter__rerank_shortlist_weight') | float -%}
{%- set sk = var('dbrouter__shortlist_k') | int -%}
{%- set maxw = var('dbrouter__phrase_max_words') | int -%}
{%- set maxc = var('dbrouter__max_question_chars') | int -%}
{%- if pen < 1 -%}
  {{ exceptions.raise_compiler_error("create_route_functions: adapter " ~ adapter.type() ~ ", var dbrouter__coverage_penalty must be >= 1 (the method's n), got " ~ pen) }}
{%- endif -%}
{%- if sk < 1 or maxw < 1 -%}
  {{ exceptions.raise_compiler_error("create_route_functions: adapter " ~ adapter.type() ~ ", vars dbrouter__shortlist_k and dbrouter__phrase_max_words must be >= 1, got " ~ sk ~ " / " ~ maxw) }}
{%- endif -%}

{#- Step 1: per-database fused similarity; CTE `shortlist` (db_id, score, shortlist_rank, signals). -#}
{%- set shortlist_ctes -%}
q as materialized (
    select embed(left(cast(question as varchar), {{ maxc }})) as v, dbrouter_embedder() as model
),
hits as (
    select d.db_id, d.doc_kind, d.doc_label, {{ dbrouter.cosine_similarity('d.embedding', 'q.v') }} as sim
    from {{ emb }} as d, q
    where q.v is not null and d.embedding_model = q.model
      and d.doc_kind in ('database', 'table', 'column', 'example')
),
per_db as (
    select
        db_id,
        max(sim) filter (where doc_kind = 'database') as s_database,
        list_avg(max(sim, {{ var('dbrouter__top_tables') }}) filter (where doc_kind = 'table')) as s_table,
        list_avg(max(sim, {{ var('dbrouter__top_columns') }}) filter (where doc_kind = 'column')) as s_column,
        max(sim) filter (where doc_kind = 'example') as s_example,
        arg_max(doc_label, sim) filter (where doc_kind = 'table') as top_table,
        arg_max(doc_label, sim) filter (where doc_kind = 'column') as top_column,
        arg_max(doc_label, sim) filter (where doc_kind = 'example') as top_example_sql
    from hits
    group by db_id
),
fused as (
    select *,
        (s_schema + {{ w_ex }} * coalesce(s_example, s_schema + (select coalesce(max(example_gap), 0) from {{ calib }})))
        / {{ 1.0 + w_ex }} as score
    from (select *, {{ dbrouter.schema_score('s_database', 's_table', 's_column') }} as s_schema from per_db)
),
shortlist as materialized (
    select *, cast(row_number() over (order by score desc, db_id) as integer) as shortlist_rank
    from fused
),
candidates as materialized (
    select db_id, score, shortlist_rank from shortlist where shortlist_rank <= greatest(coalesce(shortlist_k, {{ sk }}), 1)
)
{%- endset -%}

{#- Step 2 without an LLM: CTEs `cand_words` (db_id, word_index, phrase) and `mapped` (one row per
    phrase -> column mapping at or above the threshold). -#}
{%- set embedding_mapping_ctes -%}
words as materialized (
    select coalesce(dbrouter_content_words(left(cast(question as varchar), {{ maxc }})), []) as w
),
spans as materialized (
    select s.span, s.words as word_idx, string_split(s.span, ' ') as toks, embed_phrase(s.span) as v
    from (select unnest(dbrouter_question_spans(left(cast(question as varchar), {{ maxc }}), {{ maxw }})) as s)
),
cand_words as materialized (
    select db_id, word_index, words.w[word_index + 1] as phrase
    from (select c.db_id, unnest(range(len(words.w))) as word_index from candidates as c, words), words
),
span_hits as (
    select c.db_id, sp.span, sp.word_idx, c.table_name, c.column_name, c.component, c.declared_component,
        list_has_all(c.label_tokens, sp.toks) or list_has_all(c.value_tokens, sp.toks) as is_exact,
        {{ dbrouter.cosine_similarity('c.embedding', 'sp.v') }} as cos
    from candidates as cand
    join {{ phrases }} as c on c.db_id = cand.db_id and c.phrase_model = dbrouter_embedder()
    cross join spans as sp
),
mapped as materialized (
    select db_id, word_index, table_name, column_name, component, declared_component,
        max(similarity) as similarity, arg_max(span, similarity) as span, bool_or(is_exact) as is_exact
    from (
        select *, unnest(word_idx) as word_index, case when is_exact then 1.0 else cos end as similarity
        from span_hits
    )
    where similarity >= {{ tau }}
    group by all
)
{%- endset -%}

{#- Step 2 with an LLM: the mappings come in as JSON; the semantic score still uses the phrase
    embedder's cosine of each phrase to its column. Unknown columns are dropped (counted as N/A). -#}
{%- set json_mapping_ctes -%}
given as materialized (
    select m.db_id, m.phrase, m.table_name, m.column_name
    from (select unnest(from_json(coalesce(mappings, '[]'),
        '[{"db_id":"VARCHAR","phrase":"VARCHAR","table_name":"VARCHAR","column_name":"VARCHAR"}]')) as m)
    where m.phrase is not null and trim(m.phrase) <> ''
),
cand_words as materialized (
    select db_id, cast(dense_rank() over (partition by db_id order by phrase) - 1 as integer) as word_index, phrase
    from (select distinct g.db_id, lower(trim(g.phrase)) as phrase from given as g join candidates as c on c.db_id = g.db_id)
),
phrase_vectors as (
    select phrase, embed_phrase(phrase) as v from (select distinct phrase from cand_words)
),
mapped as materialized (
    select cw.db_id, cw.word_index, c.table_name, c.column_name, c.component, c.declared_component,
        {{ dbrouter.cosine_similarity('c.embedding', 'pv.v') }} as similarity, cw.phrase as span, false as is_exact
    from given as g
    join cand_words as cw on cw.db_id = g.db_id and cw.phrase = lower(trim(g.phrase))
    join phrase_vectors as pv on pv.phrase = cw.phrase
    join {{ phrases }} as c
      on c.db_id = g.db_id and lower(c.table_name) = lower(g.table_name) and lower(c.column_name) = lower(g.column_name)
     and c.phrase_model = dbrouter_embedder()
)
{%- endset -%}

{#- Steps 3-5: coverage, connectivity (with the join path), semantic score, final order. -#}
{%- set scoring_ctes -%}
word_best as materialized (
    select cw.db_id, cw.word_index, cw.phrase,
        max(m.similarity) as similarity,
        arg_max(m.table_name || '.' || m.column_name, m.similarity) as best_column,
        arg_max(m.span, m.similarity) as span,
        count(m.column_name) as n_mappings
    from cand_words as cw
    left join mapped as m on m.db_id = cw.db_id and m.word_index = cw.word_index
    group by all
),
cand_stats as materialized (
    select db_id, count(*) as n_phrases, count(*) filter (where similarity is null) as n_na,
        avg(similarity) as semantic_score,
        to_json(list(json_object('phrase', phrase, 'span', span, 'column', best_column,
            'similarity', round(cast(similarity as double), 4), 'n_mappings', n_mappings) order by word_index)) as phrase_mappings
    from word_best
    group by db_id
),
part_cover as (
    select db_id, component, count(distinct word_index) as n_words from mapped group by all
),
declared_cover as (
    select db_id, declared_component, count(distinct word_index) as n_words from mapped group by all
),
connect as materialized (
    select c.db_id, p.best_part_words, p.best_part, d.best_declared_words
    from candidates as c
    left join (select db_id, max(n_words) as best_part_words, arg_max(component, n_words) as best_part
               from part_cover group by db_id) as p on p.db_id = c.db_id
    left join (select db_id, max(n_words) as best_declared_words from declared_cover group by db_id) as d
      on d.db_id = c.db_id
),
chosen as (
    select m.db_id, m.word_index, arg_max(m.table_name, m.similarity) as table_name
    from mapped as m join connect as k on k.db_id = m.db_id and m.component = k.best_part
    group by all
),
chosen_paths as (
    select t.db_id, t.tables,
        string_agg(r.join_path, '; ' order by r.to_table) filter (where r.hops > 0) as join_path
    from (select db_id, list(distinct table_name order by table_name) as tables from chosen group by db_id) as t
    left join {{ reach }} as r
      on r.db_id = t.db_id and r.from_table = t.tables[1] and list_contains(t.tables, r.to_table)
    group by all
),
reranked as (
    select c.db_id, s.n_phrases, s.n_na, s.semantic_score, s.phrase_mappings, p.tables as join_tables, p.join_path,
        case when coalesce(s.n_phrases, 0) = 0 then 1.0 else exp(-{{ pen }} * s.n_na / s.n_phrases) end as coverage,
        case when coalesce(s.n_phrases - s.n_na, 0) = 0 or k.best_part_words = s.n_phrases - s.n_na then 1 else 0 end as connectivity,
        case when coalesce(s.n_phrases - s.n_na, 0) = 0 or k.best_declared_words = s.n_phrases - s.n_na then 1 else 0 end as declared_connectivity
    from candidates as c
    left join cand_stats as s on s.db_id = c.db_id
    left join connect as k on k.db_id = c.db_id
    left join chosen_paths as p on p.db_id = c.db_id
),
final as (
    select sl.*, r.*,
        r.coverage * r.connectivity as total_score,
        coalesce(r.semantic_score, 0) + {{ alpha }} * sl.score as tiebreak,
        case when r.db_id is null then 1 else 0 end as stage
    from shortlist as sl
    left join reranked as r on r.db_id = sl.db_id
),
top_k as (
    select *, cast(row_number() over (order by stage, total_score desc, tiebreak desc, score desc, db_id) as integer) as rank
    from final
    order by rank
    limit greatest(coalesce(k, 5), 1)
)
select
    rank,
    db_id,
    round(cast(score as double), 6) as score,
    shortlist_rank,
    json_object(
        'stage', case when stage = 0 then 'reranked' else 'shortlist' end,
        'shortlist', json_object(
            'rank', shortlist_rank,
            'score', round(cast(score as double), 4),
            'schema_score', round(cast(s_schema as double), 4),
            'example_imputed', s_example is null,
            'database_similarity', round(cast(s_database as double), 4),
            'table_similarity', round(cast(s_table as double), 4),
            'column_similarity', round(cast(s_column as double), 4),
            'example_similarity', round(cast(s_example as double), 4),
            'top_table', top_table,
            'top_column', top_column,
            'top_example_sql', top_example_sql),
        'phrases', n_phrases,
        'na_phrases', n_na,
        'coverage', round(cast(coverage as double), 4),
        'connectivity', connectivity,
        'connected_without_implied_edges', declared_connectivity,
        'needs_implied_edges', connectivity = 1 and declared_connectivity = 0,
        'join_tables', join_tables,
        'join_path', join_path,
        'total_score', round(cast(total_score as double), 4),
        'semantic_score', round(cast(semantic_score as double), 4),
        'mappings', json(phrase_mappings)
    ) as evidence
from top_k
order by rank
{%- endset -%}

create or replace macro route_shortlist(question, k := 10) as table
with {{ shortlist_ctes | replace('shortlist_k', 'k') }}
select shortlist_rank, db_id, round(cast(score as double), 6) as score,
    round(cast(s_schema as double), 4) as schema_score, round(cast(s_database as double), 4) as database_similarity,
    round(cast(s_table as double), 4) as table_similarity, round(cast(s_column as double), 4) as column_similarity,
    round(cast(s_example as double), 4) as example_similarity, top_table, top_column
from shortlist
where shortlist_rank <= greatest(coalesce(k, 10), 1)
order by shortlist_rank;

create or replace macro route_phrase_mappings(question, k := 10) as table
with {{ shortlist_ctes | replace('shortlist_k', 'k') }},
{{ embedding_mapping_ctes }}
select c.shortlist_rank, cw.db_id, cw.word_index, cw.phrase, m.span, m.table_name, m.column_name,
    round(cast(m.similarity as double), 4) as similarity, m.is_exact
from cand_words as cw
join candidates as c on c.db_id = cw.db_id
left join mapped as m on m.db_id = cw.db_id and m.word_index = cw.word_index
order by c.shortlist_rank, cw.word_index, m.similarity desc nulls last;

create or replace macro route_query_ranked(question, k := 5, shortlist_k := {{ sk }}) as table
with {{ shortlist_ctes }},
{{ embedding_mapping_ctes }},
{{ scoring_ctes }};

create or replace macro route_query_ranked_mapped(question, mappings, k := 5, shortlist_k := {{ sk }}) as table
with {{ shortlist_ctes }},
{{ json_mapping_ctes }},
{{ scoring_ctes }};

create or replace macro route_shortlist_k() as ({{ sk }});

create or replace macro route_query(question) as (
    select db_id from route_query_ranked(question, 1)
);

create or replace macro route_query_json(question, k := 5) as (
    select json_object(
        'question', left(cast(question as varchar), 200),
        'ranking', coalesce(
            (select json_group_array(json_object('rank', rank, 'db_id', db_id, 'score', score, 'evidence', evidence))
             from route_query_ranked(question, k)), json('[]')),
        'reason', case
            when question is null then 'question is NULL'
            when trim(cast(question as varchar)) = '' then 'question is empty'
            when not exists (select 1 from {{ emb }} where embedding_model = dbrouter_embedder())
                then 'no documents embedded with model ' || dbrouter_embedder() || ': run dbrouter build with this embedder'
            else null
        end
    )
);
{%- endmacro %}
