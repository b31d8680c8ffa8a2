{#-
  SQL form of python_udfs.phrases.content_words without its 40-word cap: the [a-z0-9]+ tokens
  of the lower-cased text minus stop words, bare numbers and one-letter words, singularised by
  phrases.normalize_word's rules. The pure-SQL path's static vectors are vectors of these words
  (documents and questions alike), and the re-rank's phrases are their first 40.

  Args:
    text: SQL expression of the text.
    stop: SQL expression of the stop-word list (VARCHAR[]) that a lambda may capture, e.g. a
      column of `(select list(word) as stop from kb_stop_words) as sw`.

  Returns: the SQL expression of the VARCHAR[] (NULL for NULL text).
-#}
{% macro content_word_list(text, stop) -%}
  {{ return(adapter.dispatch('content_word_list', 'dbrouter')(text, stop)) }}
{%- endmacro %}

{% macro default__content_word_list(text, stop) -%}
  {{ exceptions.raise_compiler_error("content_word_list: adapter " ~ adapter.type() ~ " is not supported yet (argument text: " ~ text ~ "); DuckDB is supported") }}
{%- endmacro %}

{#- DuckDB: list_filter then list_transform lambdas over regexp_extract_all, one expression. -#}
{% macro duckdb__content_word_list(text, stop) -%}
list_transform(list_filter(
        regexp_extract_all(lower(cast({{ text }} as varchar)), '[a-z0-9]+'),
        lambda t: length(t) >= 2 and not regexp_full_match(t, '[0-9]+') and not list_contains({{ stop }}, t)),
    lambda t: case
        when length(t) > 4 and suffix(t, 'ies') then left(t, length(t) - 3) || 'y'
        when length(t) > 4 and regexp_matches(t, '(ss|x|ch|sh)es$') then left(t, length(t) - 2)
        when length(t) > 3 and suffix(t, 's') and not (suffix(t, 'ss') or suffix(t, 'us') or suffix(t, 'is'))
            then left(t, length(t) - 1)
        else t end)
{%- endmacro %}
