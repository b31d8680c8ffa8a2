{#- A sum or mean of floating-point values whose result does not depend on the order rows reach it.
    A float sum is rounded at every step, and a multi-threaded aggregate meets its rows in any order
    (DuckDB's documentation, "Non-Deterministic Behavior"): three BM25 weights summed in another
    order can differ in the last bit, and at 10,000 databases (copies of the same schemas under
    other names) that bit reordered the lexical ranking from one run of the same question to the
    next. Each value is rounded once to DECIMAL(38, 18) and the decimals are added exactly (integer
    arithmetic), so any order gives the same sum; the result is cast back to DOUBLE. The values it
    serves (BM25 and word weights, cosines) are far inside DECIMAL(38, 18)'s 10^20; a value outside
    it fails the cast with an error rather than a wrong sum.
    It replaces an ordered aggregate (`sum(x order by k)`), which sorted every group: at 10,000
    databases the lexical channel's 56,694 (database, table) groups took 51-59 ms that way against
    30-32 ms as decimals, and Snowflake's SUM takes no ORDER BY, so there the sum was not
    deterministic at all. The lexical channel has since needed none: kb_table_terms rounds its
    weights to multiples of 2^-32, whose sums are exact as doubles (lexical_best_tables). -#}
{% macro float_agg(func, expr) -%}
{%- if func not in ('sum', 'avg') -%}
  {{ exceptions.raise_compiler_error("float_agg: adapter " ~ adapter.type() ~ ", argument func must be 'sum' or 'avg', got '" ~ func ~ "'") }}
{%- endif -%}
  {{ return(adapter.dispatch('float_agg', 'dbrouter')(func, expr)) }}
{%- endmacro %}

{#- Portable: DECIMAL sums are exact in DuckDB, Snowflake and PostgreSQL alike. -#}
{% macro default__float_agg(func, expr) -%}
cast({{ func }}(cast({{ expr }} as decimal(38, 18))) as double)
{%- endmacro %}
