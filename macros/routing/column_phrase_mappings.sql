{#-
  The span mapping of route_map_by_embedding_step: per candidate column and question word, the
  best span holding the word that maps to the column. Columns: db_id, word_index, table_name,
  column_name, component, declared_component, similarity (1 for an exact or value match, else the
  cosine), span (of the highest similarity, ties to the larger span text), is_exact, match_kind
  ('name', 'value' or 'similar'). Reads CTEs candidates (db_id) and spans (span, word_idx, toks, v)
  of the step.

  Args:
    path: 'udf' or 'sql' (route_paths).
    model: SQL expression of the phrase model the phrases must carry.
-#}
{% macro column_phrase_mappings(path, model) -%}
  {{ return(adapter.dispatch('column_phrase_mappings', 'dbrouter')(path, model)) }}
{%- endmacro %}

{#- The (column, span) pairs of column_phrase_hits, each once per word of its span, kept at or
    above dbrouter__phrase_threshold and grouped per column and word. A span the phrase model
    knows no token of has a NaN cosine, which DuckDB orders above every number: it counts as no
    match (is_nan). -#}
{% macro default__column_phrase_mappings(path, model) -%}
with span_hits as (
    {{ dbrouter.column_phrase_hits(path, model) }}
),
span_words_hit as (
    select h.db_id, cast(w.value as integer) as word_index, h.table_name, h.column_name,
        h.component, h.declared_component, h.span, h.is_exact, h.is_value,
        case when h.is_exact or h.is_value then 1.0 when {{ dbrouter.is_nan('h.cos') }} then null else h.cos end as similarity
    from span_hits as h, {{ dbrouter.flatten('h.word_idx', 'w') }}
),
span_ranked as (
    select *, {{ dbrouter.top_n_rank('db_id, word_index, table_name, column_name', 'similarity desc, span desc') }} as rn
    from span_words_hit
    where similarity >= {{ dbrouter.get_var('dbrouter__phrase_threshold') | float }}
)
select db_id, word_index, table_name, column_name, component, declared_component,
    max(similarity) as similarity, {{ dbrouter.top_value('span', 'similarity', 'span') }} as span,
    {{ dbrouter.bool_or_agg('is_exact') }} as is_exact,
    case when {{ dbrouter.bool_or_agg('is_exact') }} then 'name' when {{ dbrouter.bool_or_agg('is_value') }} then 'value'
         else 'similar' end as match_kind
from span_ranked
group by db_id, word_index, table_name, column_name, component, declared_component
{%- endmacro %}

{#- DuckDB's UDF path (var dbrouter__vector_index): the phrases' vectors and token posting lists
    are held in the UDF process (dbrouter_phrase_mappings, python_udfs/phrase_index.py), which
    returns the mappings themselves: neither a join of every candidate column with every span (130k
    rows for ten databases of 450 columns and 30 spans) over a scan of their vectors, nor the
    pairs to be spread over their words and grouped in SQL (a correlated unnest, a join and a
    grouping: ~5 ms of a 45 ms spider-route question). The spans go in as parallel lists in one
    order. -#}
{% macro duckdb__column_phrase_mappings(path, model) -%}
{%- if path != 'udf' or not dbrouter.get_var('dbrouter__vector_index') -%}
{{ dbrouter.default__column_phrase_mappings(path, model) }}
{%- else -%}
select m.db_id, m.word_index, m.table_name, m.column_name, m.component, m.declared_component, m.similarity,
    m.span, m.is_exact, m.match_kind
from (select unnest(dbrouter_phrase_mappings('{{ dbrouter.kb_relation('kb_column_phrases') }}', {{ model }},
          (select list(distinct db_id) from candidates), s.toks, s.vs,
          {{ dbrouter.get_var('dbrouter__phrase_threshold') | float }},
          {{ dbrouter.get_var('dbrouter__phrase_columns_per_span') | int }}, s.spans, s.words)) as m
      from (select list(toks order by span, word_idx) as toks, list(v order by span, word_idx) as vs,
                list(span order by span, word_idx) as spans, list(word_idx order by span, word_idx) as words
            from spans) as s) as u
{%- endif -%}
{%- endmacro %}
