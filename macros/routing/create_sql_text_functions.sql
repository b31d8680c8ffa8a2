{#-
  The pure-SQL path's text functions as warehouse macros (run by create_route_functions before
  the route macros, which call them). Each is the SQL form of a Python UDF of the UDF path, and
  the test-suite compares the two:

    dbrouter_sql_content_words(question)   -> VARCHAR[]   python_udfs.phrases.content_words
    dbrouter_sql_content_text(text)        -> VARCHAR     all content words (no 40-word cap), space-
                                              separated: the text the SQL path's static vectors
                                              embed, for documents (kb_static_embedding_cache)
                                              and questions alike
    dbrouter_sql_question_spans(question)  -> table (span, word_idx)   phrases.question_spans
                                              with max_words = dbrouter__phrase_max_words
    dbrouter_sql_embed(text)               -> FLOAT[dim]  direction of the phrase embedder's
                                              vector (embed_phrase), unnormalised; NULL when the
                                              text has no known piece
    dbrouter_sql_canonicalize(text)        -> VARCHAR     python_udfs.text.canonicalize
    dbrouter_sql_normalize_question(text)  -> VARCHAR     python_udfs.examples.normalize_question
-#}
{% macro create_sql_text_functions() -%}
  {{ return(adapter.dispatch('create_sql_text_functions', 'dbrouter')()) }}
{%- endmacro %}

{% macro default__create_sql_text_functions() -%}
  {{ exceptions.raise_compiler_error("create_sql_text_functions: adapter " ~ adapter.type() ~ " is not supported yet (argument: none); DuckDB is supported") }}
{%- endmacro %}

{#- DuckDB: the stop words are read from kb_stop_words by a subquery whose column the lambdas of
    content_word_list capture. -#}
{% macro duckdb__create_sql_text_functions() -%}
{%- set maxw = dbrouter.get_var('dbrouter__phrase_max_words') | int -%}
create or replace macro dbrouter_sql_content_words(question) as (
    select coalesce({{ dbrouter.content_word_list('question', 'sw.stop') }}[1:40], [])
    from (select list(word) as stop from {{ dbrouter.kb_relation('kb_stop_words') }}) as sw
);

create or replace macro dbrouter_sql_content_text(input) as (
    select array_to_string({{ dbrouter.content_word_list('input', 'sw.stop') }}, ' ')
    from (select list(word) as stop from {{ dbrouter.kb_relation('kb_stop_words') }}) as sw
);

create or replace macro dbrouter_sql_question_spans(question) as table
with words as (
    select dbrouter_sql_content_words(question) as w
),
span_list as (
    select array_to_string(w[i + 1:i + n], ' ') as span, range(i, i + n) as idx
    from (select w, i, unnest(range(1, {{ maxw }} + 1)) as n
          from (select w, unnest(range(len(w))) as i from words))
    where i + n <= len(w)
)
select span, list_sort(list_distinct(flatten(list(idx)))) as word_idx
from span_list
group by span;

create or replace macro dbrouter_sql_embed(input) as (
    with recursive texts as (select 0 as text_id, cast(input as varchar) as text),
    {{ dbrouter.static_text_vectors_step('texts', 'vectors') }}
    select cast(v_list as float[{{ dbrouter.get_var('dbrouter__embedding_dim') | int }}]) from vectors
);

create or replace macro dbrouter_sql_canonicalize(input) as ({{ dbrouter.canonicalize_text('input') }});

create or replace macro dbrouter_sql_normalize_question(input) as ({{ dbrouter.normalize_question_text('input') }});
{%- endmacro %}
