{#- A FROM-clause item with one row per element of the array expression `array_expr`, which may
    name columns of the relations before it (a lateral join): `<alias>.index` is the element's
    0-based position, `<alias>.value` the element (typed on DuckDB, a VARIANT on Snowflake: read
    it through struct_field or a cast). A NULL or empty array gives no row. -#}
{% macro flatten(array_expr, alias) -%}
  {{ return(adapter.dispatch('flatten', 'dbrouter')(array_expr, alias)) }}
{%- endmacro %}

{#- DuckDB: a subquery naming outer columns is joined laterally without the keyword. -#}
{% macro default__flatten(array_expr, alias) -%}
(select cast(generate_subscripts(a.arr, 1) - 1 as integer) as index, unnest(a.arr) as value
 from (select {{ array_expr }} as arr) as a) as {{ alias }}
{%- endmacro %}

{% macro snowflake__flatten(array_expr, alias) -%}
table(flatten(input => {{ array_expr }})) as {{ alias }}
{%- endmacro %}
