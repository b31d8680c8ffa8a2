{#-
  Routing steps 3-5, score and rank: coverage = exp(-n * N_NA / N) over the candidate's phrases,
  connectivity = 1 when one connected part of the join graph (kb_table_components) holds a
  mapping of every mapped phrase (and the join path between the chosen tables from
  kb_table_reachability), semantic score = mean best cosine of the mapped phrases. The candidates
  are ordered by the learned ranker's score (route_signals_step, ranker_score: weights of var
  dbrouter__ranker_weights over the candidate's signals, which coverage, connectivity and the
  semantic score are among); the rest of the shortlist follows by shortlist score.

  Args:
    k: SQL expression of how many ranked databases to return (NULL = 5).

  Consumes: CTEs shortlist and candidates (route_shortlist_step), cand_words and mapped
    (route_mapping_contract, from either step-2 variant); kb_table_reachability.
  Produces: the final SELECT (no trailing semicolon) of
    (rank INTEGER, db_id, score DOUBLE, shortlist_rank INTEGER, evidence JSON) ordered by rank;
    the evidence keys are parsed by dbrouter.routing.evidence.RouteEvidence.
-#}
{% macro route_score_step(k) -%}
  {{ return(adapter.dispatch('route_score_step', 'dbrouter')(k)) }}
{%- endmacro %}

{% macro default__route_score_step(k) -%}
  {{ exceptions.raise_compiler_error("route_score_step: adapter " ~ adapter.type() ~ " is not supported yet (argument k: " ~ k ~ "); DuckDB and Snowflake are supported") }}
{%- endmacro %}

{#- DuckDB: arg_max picks the best column/span per phrase, ordered by (value, name) so that ties
    give the same evidence on every run; json_object builds the evidence. -#}
{% macro duckdb__route_score_step(k) -%}
{%- set pen = dbrouter.get_var('dbrouter__coverage_penalty') | float -%}
{%- if pen < 1 -%}
  {{ exceptions.raise_compiler_error("route_score_step: adapter " ~ adapter.type() ~ ", var dbrouter__coverage_penalty must be >= 1 (the method's n), got " ~ pen) }}
{%- endif -%}
word_best as materialized (
    select cw.db_id, cw.word_index, cw.phrase,
        max(m.similarity) as similarity,
        arg_max(m.table_name || '.' || m.column_name, (m.similarity, m.table_name || '.' || m.column_name)) as best_column,
        arg_max(m.span, (m.similarity, m.table_name || '.' || m.column_name)) as span,
        arg_max(m.match_kind, (m.similarity, m.table_name || '.' || m.column_name)) as match_kind,
        count(m.column_name) as n_mappings
    from cand_words as cw
    left join mapped as m on m.db_id = cw.db_id and m.word_index = cw.word_index
    group by all
),
cand_stats as materialized (
    select db_id, count(*) as n_phrases, count(*) filter (where similarity is null) as n_na,
        avg(similarity) as semantic_score,
        to_json(list(json_object('phrase', phrase, 'span', span, 'column', best_column,
            'similarity', round(cast(similarity as double), 4), 'match', match_kind, 'n_mappings', n_mappings) order by word_index)) as phrase_mappings
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
    left join (select db_id, max(n_words) as best_part_words, arg_max(component, (n_words, component)) as best_part
               from part_cover group by db_id) as p on p.db_id = c.db_id
    left join (select db_id, max(n_words) as best_declared_words from declared_cover group by db_id) as d
      on d.db_id = c.db_id
),
chosen as (
    select m.db_id, m.word_index, arg_max(m.table_name, (m.similarity, m.table_name || '.' || m.column_name)) as table_name
    from mapped as m join connect as k on k.db_id = m.db_id and m.component = k.best_part
    group by all
),
chosen_paths as (
    select t.db_id, t.tables,
        string_agg(r.join_path, '; ' order by r.to_table) filter (where r.hops > 0) as join_path
    from (select db_id, list(distinct table_name order by table_name) as tables from chosen group by db_id) as t
    left join {{ dbrouter.kb_relation('kb_table_reachability') }} as r
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
{{ dbrouter.route_signals_step() }},
final as (
    select sl.*, r.*, g.*,
        r.coverage * r.connectivity as total_score,
        {{ dbrouter.ranker_score('g.') }} as rank_score,
        case when r.db_id is null then 1 else 0 end as stage
    from shortlist as sl
    left join reranked as r on r.db_id = sl.db_id
    left join signals as g on g.db_id = sl.db_id
),
top_k as (
    select *, cast(row_number() over (order by stage, rank_score desc nulls last, score desc, db_id) as integer) as rank
    from final
    order by rank
    limit greatest(coalesce({{ k }}, 5), 1)
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
        'rank_score', round(cast(rank_score as double), 4),
        'abstain', {{ dbrouter.abstain_condition() }},
        'signals', case when stage = 0 then json_object(
{%- for name in dbrouter.ranker_signal_names() %}
            '{{ name }}', round(cast(f_{{ name }} as double), 4){{ ',' if not loop.last }}
{%- endfor %}) end,
        'mappings', json(phrase_mappings)
    ) as evidence
from top_k
order by rank
{%- endmacro %}

{#- Snowflake: tuple arg_max becomes ROW_NUMBER with the same orders (value, then name,
    descending), FILTER becomes CASE / COUNT_IF, json_object becomes OBJECT_CONSTRUCT_KEEP_NULL
    (the evidence is a VARIANT with the same keys; keys whose value is NULL are kept, as in the
    DuckDB JSON), LIMIT takes no expression so the rank is filtered, and `select sl.*, r.*`
    (two db_id columns) is spelled out. -#}
{% macro snowflake__route_score_step(k) -%}
{%- set pen = dbrouter.get_var('dbrouter__coverage_penalty') | float -%}
{%- if pen < 1 -%}
  {{ exceptions.raise_compiler_error("route_score_step: adapter " ~ adapter.type() ~ ", var dbrouter__coverage_penalty must be >= 1 (the method's n), got " ~ pen) }}
{%- endif -%}
word_ranked as (
    select cw.db_id, cw.word_index, cw.phrase, m.similarity, m.span, m.match_kind,
        m.table_name || '.' || m.column_name as column_label,
        count(m.column_name) over (partition by cw.db_id, cw.word_index) as n_mappings,
        row_number() over (partition by cw.db_id, cw.word_index
                           order by m.similarity desc nulls last, m.table_name || '.' || m.column_name desc) as rn
    from cand_words as cw
    left join mapped as m on m.db_id = cw.db_id and m.word_index = cw.word_index
),
word_best as (
    select db_id, word_index, phrase, similarity, column_label as best_column, span, match_kind, n_mappings
    from word_ranked where rn = 1
),
cand_stats as (
    select db_id, count(*) as n_phrases, count_if(similarity is null) as n_na,
        avg(similarity) as semantic_score,
        array_agg(object_construct_keep_null('phrase', phrase, 'span', span, 'column', best_column,
            'similarity', round(cast(similarity as double), 4), 'match', match_kind, 'n_mappings', n_mappings))
            within group (order by word_index) as phrase_mappings
    from word_best
    group by db_id
),
part_cover as (
    select db_id, component, count(distinct word_index) as n_words from mapped group by db_id, component
),
declared_cover as (
    select db_id, declared_component, count(distinct word_index) as n_words from mapped group by db_id, declared_component
),
best_part as (
    select db_id, n_words as best_part_words, component as best_part
    from (select *, row_number() over (partition by db_id order by n_words desc, component desc) as rn from part_cover)
    where rn = 1
),
connect as (
    select c.db_id, p.best_part_words, p.best_part, d.best_declared_words
    from candidates as c
    left join best_part as p on p.db_id = c.db_id
    left join (select db_id, max(n_words) as best_declared_words from declared_cover group by db_id) as d
      on d.db_id = c.db_id
),
chosen as (
    select db_id, word_index, table_name
    from (
        select m.db_id, m.word_index, m.table_name,
            row_number() over (partition by m.db_id, m.word_index
                               order by m.similarity desc, m.table_name || '.' || m.column_name desc) as rn
        from mapped as m join connect as k on k.db_id = m.db_id and m.component = k.best_part
    )
    where rn = 1
),
chosen_tables as (
    select distinct db_id, table_name from chosen
),
chosen_lists as (
    select db_id, min(table_name) as first_table,
        array_agg(table_name) within group (order by table_name) as tables
    from chosen_tables group by db_id
),
chosen_paths as (
    select t.db_id, any_value(t.tables) as tables,
        nullif(listagg(case when r.hops > 0 then r.join_path end, '; ') within group (order by r.to_table), '') as join_path
    from chosen_lists as t
    join chosen_tables as ct on ct.db_id = t.db_id
    left join {{ dbrouter.kb_relation('kb_table_reachability') }} as r
      on r.db_id = t.db_id and r.from_table = t.first_table and r.to_table = ct.table_name
    group by t.db_id
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
{{ dbrouter.route_signals_step() }},
final as (
    select sl.db_id, sl.score, sl.shortlist_rank, sl.s_schema, sl.s_database, sl.s_table, sl.s_column, sl.s_example,
        sl.top_table, sl.top_column, sl.top_example_sql,
        r.n_phrases, r.n_na, r.semantic_score, r.phrase_mappings, r.join_tables, r.join_path,
        r.coverage, r.connectivity, r.declared_connectivity,
{%- for name in dbrouter.ranker_signal_names() %}
        g.f_{{ name }},
{%- endfor %}
        r.coverage * r.connectivity as total_score,
        {{ dbrouter.ranker_score('g.') }} as rank_score,
        case when r.db_id is null then 1 else 0 end as stage
    from shortlist as sl
    left join reranked as r on r.db_id = sl.db_id
    left join signals as g on g.db_id = sl.db_id
),
top_k as (
    select *, cast(row_number() over (order by stage, rank_score desc nulls last, score desc, db_id) as integer) as rank
    from final
)
select
    rank,
    db_id,
    round(cast(score as double), 6) as score,
    shortlist_rank,
    object_construct_keep_null(
        'stage', case when stage = 0 then 'reranked' else 'shortlist' end,
        'shortlist', object_construct_keep_null(
            'rank', shortlist_rank,
            'score', round(cast(score as double), 4),
            'schema_score', round(cast(s_schema as double), 4),
            'example_imputed', (s_example is null),
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
        'needs_implied_edges', (connectivity = 1 and declared_connectivity = 0),
        'join_tables', join_tables,
        'join_path', join_path,
        'total_score', round(cast(total_score as double), 4),
        'semantic_score', round(cast(semantic_score as double), 4),
        'rank_score', round(cast(rank_score as double), 4),
        'abstain', {{ dbrouter.abstain_condition() }},
        'signals', case when stage = 0 then object_construct_keep_null(
{%- for name in dbrouter.ranker_signal_names() %}
            '{{ name }}', round(cast(f_{{ name }} as double), 4){{ ',' if not loop.last }}
{%- endfor %}) end,
        'mappings', phrase_mappings
    ) as evidence
from top_k
where rank <= greatest(coalesce({{ k }}, 5), 1)
{%- endmacro %}
