{#- Jaccard similarity of the word sets of two text expressions, split on single spaces (two empty
    texts are one empty word each: 1; the fixture it_word_jaccard pins this). -#}
{% macro word_jaccard(a, b) -%}
  {{ return(adapter.dispatch('word_jaccard', 'dbrouter')(a, b)) }}
{%- endmacro %}

{% macro default__word_jaccard(a, b) -%}
  {{ exceptions.raise_compiler_error("word_jaccard: adapter " ~ adapter.type() ~ " is not supported (argument a: " ~ a ~ "); DuckDB and Snowflake are supported") }}
{%- endmacro %}

{#- DuckDB: list functions over string_split. -#}
{% macro duckdb__word_jaccard(a, b) -%}
(len(list_intersect(list_distinct(string_split({{ a }}, ' ')), list_distinct(string_split({{ b }}, ' '))))
            / greatest(len(list_distinct(list_concat(string_split({{ a }}, ' '), string_split({{ b }}, ' ')))), 1))
{%- endmacro %}

{#- Snowflake: the ARRAY functions over SPLIT. -#}
{% macro snowflake__word_jaccard(a, b) -%}
(array_size(array_intersection(array_distinct(split({{ a }}, ' ')), array_distinct(split({{ b }}, ' '))))
            / greatest(array_size(array_distinct(array_cat(split({{ a }}, ' '), split({{ b }}, ' ')))), 1))
{%- endmacro %}
