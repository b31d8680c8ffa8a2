{#-
  Routing step 2 without an LLM, map by embedding: each content word of the question is mapped,
  through the spans of up to dbrouter__phrase_max_words consecutive content words containing it,
  to every column of a candidate database whose label the span matches (phrase-embedder cosine,
  or 1 for an exact match) at or above dbrouter__phrase_threshold. Exact matches (match_kind):
  'name' when every word of the span is a name token of the column's table or column and one
  names the column (a span naming only the table matches the column that represents it, its
  first key column, not every column); 'value' when every word is a token of the column's short
  sample values; otherwise 'similar' (the cosine).

  Args:
    question: SQL expression of the question.
    path: 'udf' (content words, spans and span vectors from the UDFs) or 'sql' (the same in SQL:
      dbrouter_sql_content_words, dbrouter_sql_question_spans of create_sql_text_functions, and
      the span vectors of static_text_vectors_step).

  Consumes: CTE candidates (db_id) from route_shortlist_step; kb_column_phrases (through
    column_phrase_hits: a join, or on DuckDB's UDF path the UDF dbrouter_phrase_hits);
    UDFs dbrouter_content_words(), dbrouter_question_spans(), embed_phrase(), dbrouter_embedder()
    (path 'udf') or the dbrouter_sql_* macros, kb_static_pieces, kb_static_model (path 'sql').
  Produces CTEs: words, spans, span_words, span_hits, span_mappings (internal), then
    cand_words and mapped as defined by route_mapping_contract.
-#}
{% macro route_map_by_embedding_step(question, path='udf') -%}
  {{ return(adapter.dispatch('route_map_by_embedding_step', 'dbrouter')(question, path)) }}
{%- endmacro %}

{#- One body for every adapter. The question's content words and spans come from list-returning
    UDFs (or their pure-SQL twins), opened with `flatten`; exact matches test array containment
    (list_has_all / list_has_any). A span the phrase model knows no token of embeds to a zero
    vector, whose cosine is NaN; DuckDB orders NaN above every number, so `NaN >= threshold`
    held and such a span mapped to every column: NaN counts as no match (is_nan). The best span
    of a (phrase, column) is the one of highest similarity, ties to the larger span text. -#}
{% macro default__route_map_by_embedding_step(question, path='udf') -%}
{%- do dbrouter.route_path_check('route_map_by_embedding_step', path) -%}
{%- set maxc = dbrouter.get_var('dbrouter__max_question_chars') | int -%}
{%- set maxw = dbrouter.get_var('dbrouter__phrase_max_words') | int -%}
{%- set mat = dbrouter.cte_materialized() -%}
{%- set q = "left(cast(" ~ question ~ " as varchar), " ~ maxc ~ ")" -%}
{%- if path == 'sql' %}
words as {{ mat }} (
    select dbrouter_sql_content_words({{ q }}) as w
),
span_texts as {{ mat }} (
    select span as text_id, span as text, word_idx
    from dbrouter_sql_question_spans({{ q }})
),
{{ dbrouter.static_text_vectors_step('span_texts', 'span_vectors') }},
spans as {{ mat }} (
    select st.text as span, st.word_idx, split(st.text, ' ') as toks,
        cast(sv.v_list as float[{{ dbrouter.get_var('dbrouter__embedding_dim') | int }}]) as v
    from span_texts as st
    left join span_vectors as sv on sv.text_id = st.text_id
),
{%- else %}
words as {{ mat }} (
    select coalesce(dbrouter_content_words({{ q }}), {{ dbrouter.array_literal([]) }}) as w
),
spans as {{ mat }} (
    select span, word_idx, split(span, ' ') as toks, {{ dbrouter.embed_phrase_sql('span') }} as v
    from (select {{ dbrouter.struct_field('s.value', 'span', 'varchar') }} as span,
              {{ dbrouter.struct_field('s.value', 'words', 'array') }} as word_idx
          from {{ dbrouter.flatten("dbrouter_question_spans(" ~ q ~ ", " ~ maxw ~ ")", 's') }}) as opened
),
{%- endif %}
span_words as (
    select c.db_id, f.index as word_index, cast(f.value as varchar) as phrase
    from candidates as c, words, {{ dbrouter.flatten('words.w', 'f') }}
),
span_hits as (
    {{ dbrouter.column_phrase_hits(path, dbrouter._phrase_model(path)) }}
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
),
span_mappings as (
    select db_id, word_index, table_name, column_name, component, declared_component,
        max(similarity) as similarity, {{ dbrouter.top_value('span', 'similarity', 'span') }} as span,
        {{ dbrouter.bool_or_agg('is_exact') }} as is_exact,
        case when {{ dbrouter.bool_or_agg('is_exact') }} then 'name' when {{ dbrouter.bool_or_agg('is_value') }} then 'value'
             else 'similar' end as match_kind
    from span_ranked
    group by db_id, word_index, table_name, column_name, component, declared_component
),
{{ dbrouter.route_mapping_contract('span_words', 'span_mappings') }}
{%- endmacro %}

{#- The kb_column_phrases.phrase_model a path compares with: the embedder the route function
    runs with (runtime_embedder), or the one the KB recorded for the pure-SQL path
    (kb_column_phrases holds phrase-embedder vectors, which are the static model's). -#}
{% macro _phrase_model(path) -%}
{%- if path == 'sql' -%}
(select embedder from {{ dbrouter.kb_relation('kb_static_model') }})
{%- else -%}
{{ dbrouter.runtime_embedder() }}
{%- endif -%}
{%- endmacro %}
