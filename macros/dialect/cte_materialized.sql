{#- The hint that makes a CTE computed once (DuckDB's `materialized`); nothing where the engine
    decides itself (Snowflake). Used as `name as {{ dbrouter.cte_materialized() }} (...)`. -#}
{% macro cte_materialized() -%}
  {{ return(adapter.dispatch('cte_materialized', 'dbrouter')()) }}
{%- endmacro %}

{% macro default__cte_materialized() -%}{%- endmacro %}

{% macro duckdb__cte_materialized() -%}materialized{%- endmacro %}
