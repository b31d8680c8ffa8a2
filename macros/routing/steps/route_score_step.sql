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
    path: 'udf' or 'sql' (route_paths): where route_signals_step reads its lexical rows from.

  Consumes: CTEs shortlist and candidates (route_shortlist_step), cand_words and mapped
    (route_mapping_contract, from either step-2 variant); the join paths of candidate_reachability
    (kb_table_reachability, or on DuckDB the candidates' kb_join_edges walked per question).
  Produces: the final SELECT (no trailing semicolon) of
    (rank INTEGER, db_id, score DOUBLE, shortlist_rank INTEGER, evidence JSON) ordered by rank;
    the evidence keys are parsed by dbrouter.routing.evidence.RouteEvidence.
-#}
{% macro route_score_step(k, path='udf') -%}
  {{ return(adapter.dispatch('route_score_step', 'dbrouter')(k, path)) }}
{%- endmacro %}

{#- One body for every adapter. "The best X of a group" is top_value over the group, ordered by
    (value, name) descending (DuckDB's tuple arg_max, else a ROW_NUMBER from top_n_rank), so ties
    give the same evidence on every run and engine; the evidence is built by
    json_object (DuckDB JSON, Snowflake OBJECT, keys with NULL values kept), the per-phrase
    mappings by json_array_agg, the chosen tables by array_agg_ordered and the join paths by
    string_agg_ordered. -#}
{% macro default__route_score_step(k, path='udf') -%}
{%- set pen = dbrouter.get_var('dbrouter__coverage_penalty') | float -%}
{%- if pen < 1 -%}
  {{ exceptions.raise_compiler_error("route_score_step: adapter " ~ adapter.type() ~ ", var dbrouter__coverage_penalty must be >= 1 (the method's n), got " ~ pen) }}
{%- endif -%}
{%- set mat = dbrouter.cte_materialized() -%}
word_ranked as (
    select cw.db_id, cw.word_index, cw.phrase, m.similarity, m.span, m.match_kind, m.column_name,
        m.table_name || '.' || m.column_name as column_label,
        {{ dbrouter.top_n_rank('cw.db_id, cw.word_index', "m.similarity desc nulls last, m.table_name || '.' || m.column_name desc") }} as rn
    from cand_words as cw
    left join mapped as m on m.db_id = cw.db_id and m.word_index = cw.word_index
),
word_best as {{ mat }} (
    select db_id, word_index, phrase, max(similarity) as similarity,
        {{ dbrouter.top_value('column_label', 'similarity', 'column_label') }} as best_column,
        {{ dbrouter.top_value('span', 'similarity', 'column_label') }} as span,
        {{ dbrouter.top_value('match_kind', 'similarity', 'column_label') }} as match_kind,
        count(column_name) as n_mappings
    from word_ranked
    group by db_id, word_index, phrase
),
cand_stats as {{ mat }} (
    select db_id, count(*) as n_phrases, count(case when similarity is null then 1 end) as n_na,
        {{ dbrouter.float_agg('avg', 'similarity') }} as semantic_score,
        {{ dbrouter.json_array_agg(dbrouter.json_object([
            ('phrase', 'phrase'), ('span', 'span'), ('column', 'best_column'),
            ('similarity', 'round(cast(similarity as double), 4)'), ('match', 'match_kind'),
            ('n_mappings', 'n_mappings')]), 'word_index') }} as phrase_mappings
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
    select db_id, max(n_words) as best_part_words, {{ dbrouter.top_value('component', 'n_words', 'component') }} as best_part
    from (select *, {{ dbrouter.top_n_rank('db_id', 'n_words desc, component desc') }} as rn from part_cover) as ranked
    group by db_id
),
connect as {{ mat }} (
    select c.db_id, p.best_part_words, p.best_part, d.best_declared_words
    from candidates as c
    left join best_part as p on p.db_id = c.db_id
    left join (select db_id, max(n_words) as best_declared_words from declared_cover group by db_id) as d
      on d.db_id = c.db_id
),
chosen as (
    select db_id, word_index, {{ dbrouter.top_value('table_name', 'similarity', 'column_label') }} as table_name
    from (
        select m.db_id, m.word_index, m.table_name, m.similarity, m.table_name || '.' || m.column_name as column_label,
            {{ dbrouter.top_n_rank('m.db_id, m.word_index', "m.similarity desc, m.table_name || '.' || m.column_name desc") }} as rn
        from mapped as m join connect as k on k.db_id = m.db_id and m.component = k.best_part
    ) as ranked
    group by db_id, word_index
),
chosen_tables as (
    select distinct db_id, table_name from chosen
),
chosen_lists as (
    select db_id, min(table_name) as first_table, {{ dbrouter.array_agg_ordered('table_name', 'table_name') }} as tables
    from chosen_tables group by db_id
),
path_sources as {{ mat }} (
    select db_id, first_table as table_name from chosen_lists
),
chosen_reach as (
    {{ dbrouter.candidate_reachability('path_sources', path) }}
),
chosen_paths as (
    select t.db_id, any_value(t.tables) as tables,
        {{ dbrouter.string_agg_ordered('case when r.hops > 0 then r.join_path end', "'; '", 'r.to_table') }} as join_path
    from chosen_lists as t
    join chosen_tables as ct on ct.db_id = t.db_id
    left join chosen_reach as r
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
{{ dbrouter.route_signals_step(path) }},
{#- The rank is the row number over every database (the re-ranked candidates, then the rest of the
    shortlist by its score), but only the top k rows are returned: the order's keys alone are sorted
    (at 10,000 synthetic databases the window over the rows with every evidence column was ~9 ms,
    the widest operator of a held question), and the evidence columns are read for the rows kept.
    A LIMIT would need k to be a constant, and a caller's k may be a column. -#}
final_order as (
    select db_id, rank_score, stage,
        cast(row_number() over (order by example_match desc, stage, rank_score desc nulls last, score desc, db_id)
             as integer) as rank
    from (select sl.db_id, sl.example_match, sl.score, {{ dbrouter.ranker_score('g.') }} as rank_score,
              case when r.db_id is null then 1 else 0 end as stage
          from shortlist as sl
          left join reranked as r on r.db_id = sl.db_id
          left join signals as g on g.db_id = sl.db_id) as keyed
),
top_k as (
    select sl.db_id, sl.score, sl.score as first_score, sl.shortlist_rank, sl.example_match, sl.abstain_floor,
        sl.offtopic_floor, sl.n_terms, sl.n_known, sl.intent_score, sl.intent_floor, sl.s_schema, sl.s_database, sl.s_table, sl.s_column, sl.s_example,
        sl.top_table, sl.top_column, sl.top_example_sql,
        r.n_phrases, r.n_na, r.semantic_score, r.phrase_mappings, r.join_tables, r.join_path,
        r.coverage, r.connectivity, r.declared_connectivity,
{%- for name in dbrouter.ranker_signal_names() %}
        g.f_{{ name }},
{%- endfor %}
        r.coverage * r.connectivity as total_score, o.rank_score, o.stage, o.rank
    from final_order as o
    join shortlist as sl on sl.db_id = o.db_id
    left join reranked as r on r.db_id = sl.db_id
    left join signals as g on g.db_id = sl.db_id
    where o.rank <= greatest(coalesce({{ k }}, 5), 1)
)
{%- set shortlist_evidence = dbrouter.json_object([
    ('rank', 'shortlist_rank'),
    ('score', 'round(cast(score as double), 4)'),
    ('schema_score', 'round(cast(s_schema as double), 4)'),
    ('example_imputed', '(s_example is null)'),
    ('database_similarity', 'round(cast(s_database as double), 4)'),
    ('table_similarity', 'round(cast(s_table as double), 4)'),
    ('column_similarity', 'round(cast(s_column as double), 4)'),
    ('example_similarity', 'round(cast(s_example as double), 4)'),
    ('top_table', 'top_table'),
    ('top_column', 'top_column'),
    ('top_example_sql', 'top_example_sql')]) -%}
{%- set signals = [] -%}
{%- for name in dbrouter.ranker_signal_names() -%}
  {%- do signals.append((name, 'round(cast(f_' ~ name ~ ' as double), 4)')) -%}
{%- endfor %}
{#- score is the score that orders the rows (the ranker's); a row the re-rank did not reach (below
    the re-rank depth, ordered by its shortlist score after every re-ranked one) has none. -#}
select
    rank,
    db_id,
    case when stage = 0 then round(cast(rank_score as double), 6) end as score,
    shortlist_rank,
    round(cast(score as double), 6) as shortlist_score,
    {{ dbrouter.json_object([
        ('stage', "case when stage = 0 then 'reranked' else 'shortlist' end"),
        ('example_match', '(example_match = 1)'),
        ('shortlist', shortlist_evidence),
        ('phrases', 'n_phrases'),
        ('na_phrases', 'n_na'),
        ('coverage', 'round(cast(coverage as double), 4)'),
        ('connectivity', 'connectivity'),
        ('connected_without_implied_edges', 'declared_connectivity'),
        ('needs_implied_edges', '(connectivity = 1 and declared_connectivity = 0)'),
        ('join_tables', 'join_tables'),
        ('join_path', 'join_path'),
        ('total_score', 'round(cast(total_score as double), 4)'),
        ('semantic_score', 'round(cast(semantic_score as double), 4)'),
        ('rank_score', 'round(cast(rank_score as double), 4)'),
        ('abstain', dbrouter.abstain_condition()),
        ('abstain_floor', 'round(cast(abstain_floor as double), 4)'),
        ('offtopic_floor', 'round(cast(offtopic_floor as double), 4)'),
        ('abstain_test', dbrouter.abstain_test()),
        ('intent_score', 'round(cast(intent_score as double), 4)'),
        ('intent_floor', 'round(cast(intent_floor as double), 4)'),
        ('content_words', 'n_terms'),
        ('known_words', 'n_known'),
        ('signals', 'case when stage = 0 then ' ~ dbrouter.json_object(signals) ~ ' end'),
        ('mappings', dbrouter.json_nest('phrase_mappings'))]) }} as evidence
from top_k
where rank <= greatest(coalesce({{ k }}, 5), 1)
order by rank
{%- endmacro %}
