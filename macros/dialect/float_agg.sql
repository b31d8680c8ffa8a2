{#- A sum or mean of floating-point values accumulated in the order of `order_by` (an aggregate), so
    the result does not depend on the order rows reach it. A float sum is rounded at every step:
    three BM25 weights summed in another order can differ in the last bit, and at 10,000 databases
    (copies of the same schemas under other names) that bit reordered the lexical ranking from one
    run of the same question to the next. -#}
{% macro float_agg(func, expr, order_by) -%}
{%- if func not in ('sum', 'avg') -%}
  {{ exceptions.raise_compiler_error("float_agg: adapter " ~ adapter.type() ~ ", argument func must be 'sum' or 'avg', got '" ~ func ~ "'") }}
{%- endif -%}
  {{ return(adapter.dispatch('float_agg', 'dbrouter')(func, expr, order_by)) }}
{%- endmacro %}

{% macro default__float_agg(func, expr, order_by) -%}
{{ func }}({{ expr }} order by {{ order_by }})
{%- endmacro %}

{#- Snowflake: SUM and AVG take no ORDER BY; its float aggregates may differ in the last bits from
    run to run (its documentation says so), which this cannot fix there. -#}
{% macro snowflake__float_agg(func, expr, order_by) -%}
{{ func }}({{ expr }})
{%- endmacro %}
