{#-
  The (column, span) pairs of route_map_by_embedding_step: every column phrase of the candidate
  databases with every question span, with how it matches - is_exact (by name), is_value (by
  sample value) - and its phrase-embedder cosine. Columns: db_id, span, word_idx, table_name,
  column_name, component, declared_component, is_exact, is_value, cos. Reads CTEs candidates
  (db_id) and spans (span, word_idx, toks, v) of the step.

  Args:
    path: 'udf' or 'sql' (route_paths).
    model: SQL expression of the phrase model the phrases must carry.
-#}
{% macro column_phrase_hits(path, model) -%}
  {{ return(adapter.dispatch('column_phrase_hits', 'dbrouter')(path, model)) }}
{%- endmacro %}

{#- Every pair, as a join of the candidates' phrases with the spans: the step keeps those that
    match exactly or whose cosine reaches dbrouter__phrase_threshold. Of the pairs that match
    neither by name nor by value, a database keeps per span its dbrouter__phrase_columns_per_span
    most similar columns and the most similar of each connected part and declared part: a span of
    a 15,000-column dataset was similar to thousands of its columns, and the re-rank reads only
    the best mapping per phrase overall and per part (coverage, connectivity, chosen tables), so
    its ranking is the uncapped one; only the evidence's n_mappings counts fewer.
    The candidates' phrases are cut out first, in a CTE of their own (rows_of_databases): joined
    in one step with the model's one-row subquery and the spans, DuckDB at 6,000 synthetic
    databases (pure-SQL path) joined every phrase of every database with every span on the model
    before the db_id join (1.85M rows carrying vectors, 1.7 s of a 2.4 s question); at 3,000 and
    10,000 it did not. -#}
{% macro default__column_phrase_hits(path, model) -%}
{%- set per_span = dbrouter.get_var('dbrouter__phrase_columns_per_span') | int -%}
with cand_phrases as {{ dbrouter.cte_materialized() }} (
    select c.db_id, c.table_name, c.column_name, c.component, c.declared_component, c.label_tokens,
        c.column_tokens, c.represents_table, c.value_tokens, c.embedding
    from ({{ dbrouter.rows_of_databases(dbrouter.kb_relation('kb_column_phrases'), 'select db_id from candidates',
                                        'r.phrase_model = ' ~ model, by_row_id=(path == 'sql')) }}) as c
)
select db_id, span, word_idx, table_name, column_name, component, declared_component, is_exact, is_value, cos
from (
    select *,
        row_number() over (partition by db_id, span, case when is_exact or is_value then 1 else 0 end
                           order by {{ dbrouter._phrase_order() }}) as span_rn,
        row_number() over (partition by db_id, span, case when is_exact or is_value then 1 else 0 end, component
                           order by {{ dbrouter._phrase_order() }}) as part_rn,
        row_number() over (partition by db_id, span, case when is_exact or is_value then 1 else 0 end, declared_component
                           order by {{ dbrouter._phrase_order() }}) as declared_rn
    from (
        select c.db_id, sp.span, sp.word_idx, c.table_name, c.column_name, c.component, c.declared_component,
            {{ dbrouter.list_has_all('c.label_tokens', 'sp.toks') }}
                and ({{ dbrouter.list_has_any('c.column_tokens', 'sp.toks') }} or c.represents_table) as is_exact,
            {{ dbrouter.list_has_all('c.value_tokens', 'sp.toks') }} as is_value,
            {{ dbrouter.cosine_similarity('c.embedding', 'sp.v') }} as cos
        from cand_phrases as c
        cross join spans as sp
    ) as pairs
) as ranked
where is_exact or is_value or span_rn <= {{ per_span }} or part_rn = 1 or declared_rn = 1
{%- endmacro %}

{#- The order of a span's similar columns: cosine descending (NaN last), then table.column
    descending, the re-rank's own tie-break (route_score_step). -#}
{% macro _phrase_order() -%}
case when {{ dbrouter.is_nan('cos') }} then null else cos end desc nulls last, table_name || '.' || column_name desc
{%- endmacro %}
