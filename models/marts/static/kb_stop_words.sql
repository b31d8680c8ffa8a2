{{ config(enabled=(target.type == 'duckdb')) }}
{#- The pure-SQL query path is DuckDB's; Snowflake routes through its own SQL functions. -#}
{% if target.type == 'duckdb' %}
-- The words the re-rank never maps (python_udfs.phrases.STOP_WORDS), for the pure-SQL path's
-- content words.
select unnest(dbrouter_stop_words()) as word
{% endif %}
