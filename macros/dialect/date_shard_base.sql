{#- The base name of a date-sharded table name, NULL for any other name: `events_20240131`,
    `events_2024_01_31`, `events20240131` and `events_202401` give `events`. The date is a year
    19xx/20xx, a month 01-12 and an optional day, with or without underscores; the base must end
    in a character that is neither a digit nor an underscore (`t_2024_01` has base `t`, `2024_01`
    none). Both dialects' regular expressions: no lazy quantifier (Snowflake's POSIX ERE has none). -#}
{% macro date_shard_base(name) -%}
  {{ return(adapter.dispatch('date_shard_base', 'dbrouter')(name)) }}
{%- endmacro %}

{% macro _date_shard_pattern() -%}
^(.*[^0-9_])_?(19|20)[0-9][0-9]_?(0[1-9]|1[0-2])(_?(0[1-9]|[12][0-9]|3[01]))?$
{%- endmacro %}

{% macro default__date_shard_base(name) -%}
nullif(regexp_extract({{ name }}, '{{ dbrouter._date_shard_pattern() }}', 1), '')
{%- endmacro %}

{% macro snowflake__date_shard_base(name) -%}
regexp_substr({{ name }}, '{{ dbrouter._date_shard_pattern() }}', 1, 1, 'e', 1)
{%- endmacro %}
