{#-
  Per-group "best n" aggregates over ranked rows, three macros that work together:

    top_n_rank(partition_by, order_by)   the row number the other two read, in a column `rn`
                                         of the CTE they aggregate (NULL where they need none);
    top_n_avg(value, n, cond)            the mean of the n largest `value` of the rows meeting `cond`;
    top_value(expr, value, label, cond)  `expr` of the row with the largest (value, label) among
                                         those meeting `cond` (rn ranks rows by value, label desc).

  DuckDB has one-pass aggregates for both (list_avg(max(v, n)), arg_max over a tuple), so no
  window runs over the shortlist's hits (every document of the KB); elsewhere the row number,
  ordered by (value desc, label desc), picks the same rows and breaks ties the same way.
-#}
{% macro top_n_rank(partition_by, order_by) -%}
  {{ return(adapter.dispatch('top_n_rank', 'dbrouter')(partition_by, order_by)) }}
{%- endmacro %}

{% macro default__top_n_rank(partition_by, order_by) -%}
row_number() over (partition by {{ partition_by }} order by {{ order_by }})
{%- endmacro %}

{% macro duckdb__top_n_rank(partition_by, order_by) -%}
cast(null as bigint)
{%- endmacro %}

{% macro top_n_avg(value, n, cond) -%}
  {{ return(adapter.dispatch('top_n_avg', 'dbrouter')(value, n, cond)) }}
{%- endmacro %}

{% macro default__top_n_avg(value, n, cond) -%}
avg(case when {{ cond }} and rn <= {{ n }} then {{ value }} end)
{%- endmacro %}

{% macro duckdb__top_n_avg(value, n, cond) -%}
list_avg(max({{ value }}, {{ n }}) filter (where {{ cond }}))
{%- endmacro %}

{% macro top_value(expr, value, label, cond='true') -%}
  {{ return(adapter.dispatch('top_value', 'dbrouter')(expr, value, label, cond)) }}
{%- endmacro %}

{% macro default__top_value(expr, value, label, cond='true') -%}
max(case when {{ cond }} and rn = 1 then {{ expr }} end)
{%- endmacro %}

{% macro duckdb__top_value(expr, value, label, cond='true') -%}
arg_max({{ expr }}, ({{ value }}, {{ label }})){% if cond != 'true' %} filter (where {{ cond }}){% endif %}
{%- endmacro %}
