{#- A sum or mean of floating-point values accumulated in the order of `order_by` (an aggregate), so
    the result does not depend on the order rows reach it. A float sum is rounded at every step,
    and a multi-threaded aggregate meets its rows in any order (DuckDB's documentation, "Non-
    Deterministic Behavior"): three BM25 weights summed in another order can differ in the last
    bit, and at 10,000 databases (copies of the same schemas under other names) that bit reordered
    the lexical ranking from one run of the same question to the next. -#}
{% macro float_agg(func, expr, order_by) -%}
{%- if func not in ('sum', 'avg') -%}
  {{ exceptions.raise_compiler_error("float_agg: adapter " ~ adapter.type() ~ ", argument func must be 'sum' or 'avg', got '" ~ func ~ "'") }}
{%- endif -%}
  {{ return(adapter.dispatch('float_agg', 'dbrouter')(func, expr, order_by)) }}
{%- endmacro %}

{% macro default__float_agg(func, expr, order_by) -%}
{{ func }}({{ expr }} order by {{ order_by }})
{%- endmacro %}

{#- Snowflake: SUM and AVG take no ORDER BY, so the plain aggregate stays; a parallel float sum there
    can differ in its last bits from run to run as well, which this cannot fix. -#}
{% macro snowflake__float_agg(func, expr, order_by) -%}
{{ func }}({{ expr }})
{%- endmacro %}
