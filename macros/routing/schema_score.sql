{#- The schema part of the first-ranking score: weighted mean of a database's document
    similarity, its top tables' mean similarity and its top columns' mean similarity.
    Shared by route_query_ranked and the calibration model so both score alike. -#}
{% macro schema_score(s_database, s_table, s_column) -%}
  {{ return(adapter.dispatch('schema_score', 'dbrouter')(s_database, s_table, s_column)) }}
{%- endmacro %}

{% macro default__schema_score(s_database, s_table, s_column) -%}
{%- set w_db = dbrouter.get_var('dbrouter__weight_database') | float -%}
{%- set w_tab = dbrouter.get_var('dbrouter__weight_table') | float -%}
{%- set w_col = dbrouter.get_var('dbrouter__weight_column') | float -%}
{%- if w_db + w_tab + w_col <= 0 -%}
  {{ exceptions.raise_compiler_error("schema_score: adapter " ~ adapter.type() ~ ", vars dbrouter__weight_database/table/column must not all be 0") }}
{%- endif -%}
(({{ w_db }} * coalesce({{ s_database }}, 0) + {{ w_tab }} * coalesce({{ s_table }}, 0)
  + {{ w_col }} * coalesce({{ s_column }}, 0)) / {{ w_db + w_tab + w_col }})
{%- endmacro %}
