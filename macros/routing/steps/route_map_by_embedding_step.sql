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
    column_phrase_mappings: a join, or on DuckDB's UDF path the UDF dbrouter_phrase_mappings);
    UDFs dbrouter_content_words(), dbrouter_question_spans(), embed_phrase(), dbrouter_embedder()
    (path 'udf') or the dbrouter_sql_* macros, kb_static_pieces, kb_static_model (path 'sql').
  Produces CTEs: words, spans, span_words, span_mappings (internal), then
    cand_words and mapped as defined by route_mapping_contract.
-#}
{% macro route_map_by_embedding_step(question, path='udf') -%}
  {{ return(adapter.dispatch('route_map_by_embedding_step', 'dbrouter')(question, path)) }}
{%- endmacro %}

{#- One body for every adapter. The question's content words and spans come from list-returning
    UDFs (or their pure-SQL twins), opened with `flatten`; the mapping itself is
    column_phrase_mappings' (exact matches as array containment, list_has_all / list_has_any; a
    span the phrase model knows no token of, a zero vector, maps by no cosine; the best span of a
    (phrase, column) is the one of highest similarity, ties to the larger span text). -#}
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
span_mappings as (
    {{ dbrouter.column_phrase_mappings(path, dbrouter._phrase_model(path)) }}
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
