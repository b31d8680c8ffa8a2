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

  Consumes: CTE candidates (db_id) from route_shortlist_step; kb_column_phrases;
    UDFs dbrouter_content_words(), dbrouter_question_spans(), embed_phrase(), dbrouter_embedder()
    (path 'udf') or the dbrouter_sql_* macros, kb_static_pieces, kb_static_model (path 'sql').
  Produces CTEs: words, spans, span_words, span_hits, span_mappings (internal), then
    cand_words and mapped as defined by route_mapping_contract.
-#}
{% macro route_map_by_embedding_step(question, path='udf') -%}
  {{ return(adapter.dispatch('route_map_by_embedding_step', 'dbrouter')(question, path)) }}
{%- endmacro %}

{% macro default__route_map_by_embedding_step(question, path='udf') -%}
  {{ exceptions.raise_compiler_error("route_map_by_embedding_step: adapter " ~ adapter.type() ~ " is not supported yet (argument question: " ~ question ~ "); DuckDB and Snowflake are supported") }}
{%- endmacro %}

{#- DuckDB: the question's spans come from a list-returning UDF and are unnested; exact matches
    use list_has_all over the precomputed label/value tokens. A span the phrase model knows no
    token of embeds to a zero vector, whose cosine is NaN; DuckDB orders NaN above every number,
    so `NaN >= threshold` held and such a span mapped to every column: NaN counts as no match. -#}
{% macro duckdb__route_map_by_embedding_step(question, path='udf') -%}
{%- set maxc = dbrouter.get_var('dbrouter__max_question_chars') | int -%}
{%- set maxw = dbrouter.get_var('dbrouter__phrase_max_words') | int -%}
{%- if path == 'sql' %}
words as materialized (
    select dbrouter_sql_content_words(left(cast({{ question }} as varchar), {{ maxc }})) as w
),
span_texts as materialized (
    select span as text_id, span as text, word_idx
    from dbrouter_sql_question_spans(left(cast({{ question }} as varchar), {{ maxc }}))
),
{{ dbrouter.static_text_vectors_step('span_texts', 'span_vectors') }},
spans as materialized (
    select st.text as span, st.word_idx, string_split(st.text, ' ') as toks, cast(sv.v_list as float[{{ dbrouter.get_var('dbrouter__embedding_dim') | int }}]) as v
    from span_texts as st
    left join span_vectors as sv on sv.text_id = st.text_id
),
{%- elif path == 'udf' %}
words as materialized (
    select coalesce(dbrouter_content_words(left(cast({{ question }} as varchar), {{ maxc }})), []) as w
),
spans as materialized (
    select s.span, s.words as word_idx, string_split(s.span, ' ') as toks, embed_phrase(s.span) as v
    from (select unnest(dbrouter_question_spans(left(cast({{ question }} as varchar), {{ maxc }}),
        {{ maxw }})) as s)
),
{%- else %}
  {{ exceptions.raise_compiler_error("route_map_by_embedding_step: adapter " ~ adapter.type() ~ ", argument path must be 'udf' or 'sql', got " ~ path) }}
{%- endif %}
span_words as (
    select db_id, word_index, words.w[word_index + 1] as phrase
    from (select c.db_id, unnest(range(len(words.w))) as word_index from candidates as c, words), words
),
span_hits as (
    select c.db_id, sp.span, sp.word_idx, c.table_name, c.column_name, c.component, c.declared_component,
        list_has_all(c.label_tokens, sp.toks) and (list_has_any(c.column_tokens, sp.toks) or c.represents_table) as is_exact,
        list_has_all(c.value_tokens, sp.toks) as is_value,
        {{ dbrouter.cosine_similarity('c.embedding', 'sp.v') }} as cos
    from candidates as cand
    join {{ dbrouter.kb_relation('kb_column_phrases') }} as c
      on c.db_id = cand.db_id and c.phrase_model = {{ dbrouter._phrase_model(path) }}
    cross join spans as sp
),
span_mappings as (
    select db_id, word_index, table_name, column_name, component, declared_component,
        max(similarity) as similarity, arg_max(span, (similarity, span)) as span, bool_or(is_exact) as is_exact,
        case when bool_or(is_exact) then 'name' when bool_or(is_value) then 'value' else 'similar' end as match_kind
    from (
        select *, unnest(word_idx) as word_index,
            case when is_exact or is_value then 1.0 when isnan(cos) then null else cos end as similarity
        from span_hits
    )
    where similarity >= {{ dbrouter.get_var('dbrouter__phrase_threshold') | float }}
    group by all
),
{{ dbrouter.route_mapping_contract('span_words', 'span_mappings') }}
{%- endmacro %}

{#- Snowflake: the spans and content words come back from the Python UDFs as ARRAYs and are
    opened with LATERAL FLATTEN; list_has_all(a, b) is "ARRAY_EXCEPT(b, a) is empty"; NaN (a span
    with no known token) counts as no match, as on DuckDB. Ties of the best span pick the longer
    span text (MAX_BY is not deterministic on ties, ROW_NUMBER is). -#}
{% macro snowflake__route_map_by_embedding_step(question, path='udf') -%}
{%- if path != 'udf' -%}
  {{ exceptions.raise_compiler_error("route_map_by_embedding_step: adapter " ~ adapter.type() ~ ", argument path '" ~ path ~ "': Snowflake has the UDF path only (the pure-SQL path is DuckDB's)") }}
{%- endif -%}
{%- set maxc = dbrouter.get_var('dbrouter__max_question_chars') | int -%}
words as (
    select coalesce(dbrouter_content_words(left(cast({{ question }} as varchar), {{ maxc }})), array_construct()) as w
),
spans as (
    select s.value:span::varchar as span, s.value:words as word_idx,
        split(s.value:span::varchar, ' ') as toks,
        {{ dbrouter.embed_phrase_sql("s.value:span::varchar") }} as v
    from table(flatten(input => dbrouter_question_spans(left(cast({{ question }} as varchar), {{ maxc }}),
        {{ dbrouter.get_var('dbrouter__phrase_max_words') | int }}))) as s
),
span_words as (
    select c.db_id, cast(f.index as integer) as word_index, f.value::varchar as phrase
    from candidates as c, words, lateral flatten(input => words.w) as f
),
span_hits as (
    select c.db_id, sp.span, sp.word_idx, c.table_name, c.column_name, c.component, c.declared_component,
        array_size(array_except(sp.toks, c.label_tokens)) = 0
            and (arrays_overlap(sp.toks, c.column_tokens) or c.represents_table) as is_exact,
        array_size(array_except(sp.toks, c.value_tokens)) = 0 as is_value,
        {{ dbrouter.cosine_similarity('c.embedding', 'sp.v') }} as cos
    from candidates as cand
    join {{ dbrouter.kb_relation('kb_column_phrases') }} as c
      on c.db_id = cand.db_id and c.phrase_model = '{{ dbrouter.embedder_label() }}'
    cross join spans as sp
),
span_words_hit as (
    select h.db_id, cast(w.value as integer) as word_index, h.table_name, h.column_name, h.component,
        h.declared_component, h.span, h.is_exact, h.is_value,
        case when h.is_exact or h.is_value then 1.0 when h.cos = 'NaN'::float then null else h.cos end as similarity
    from span_hits as h, lateral flatten(input => h.word_idx) as w
),
span_mappings as (
    select db_id, word_index, table_name, column_name, component, declared_component,
        best_similarity as similarity, span, any_exact as is_exact,
        case when any_exact then 'name' when any_value then 'value' else 'similar' end as match_kind
    from (
        select *,
            max(similarity) over (partition by db_id, word_index, table_name, column_name) as best_similarity,
            boolor_agg(is_exact) over (partition by db_id, word_index, table_name, column_name) as any_exact,
            boolor_agg(is_value) over (partition by db_id, word_index, table_name, column_name) as any_value,
            row_number() over (partition by db_id, word_index, table_name, column_name
                               order by similarity desc, span desc) as rn
        from span_words_hit
        where similarity >= {{ dbrouter.get_var('dbrouter__phrase_threshold') | float }}
    )
    where rn = 1
),
{{ dbrouter.route_mapping_contract('span_words', 'span_mappings') }}
{%- endmacro %}

{#- The kb_column_phrases.phrase_model a path compares with: the UDF's embedder name, or the
    one the KB recorded for the pure-SQL path (kb_column_phrases holds phrase-embedder vectors,
    which are the static model's). -#}
{% macro _phrase_model(path) -%}
{%- if path == 'sql' -%}
(select embedder from {{ dbrouter.kb_relation('kb_static_model') }})
{%- else -%}
dbrouter_embedder()
{%- endif -%}
{%- endmacro %}
