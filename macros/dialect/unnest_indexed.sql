{#- One row per element of an array column, with its 1-based position.

  Args:
    relation: the relation holding the array.
    array_column: the array column's name.
    columns: a Jinja list of the relation's other columns to keep.
  Returns: select of (columns..., element VARCHAR, element_index INTEGER); empty and NULL
    arrays give no rows.
-#}
{% macro unnest_indexed(relation, array_column, columns) -%}
  {{ return(adapter.dispatch('unnest_indexed', 'dbrouter')(relation, array_column, columns)) }}
{%- endmacro %}

{% macro default__unnest_indexed(relation, array_column, columns) -%}
{%- if not array_column or columns is string -%}
  {{ exceptions.raise_compiler_error("unnest_indexed: adapter " ~ adapter.type() ~ ", argument array_column must name a column and columns must be a list, got " ~ array_column ~ " / " ~ columns) }}
{%- endif -%}
select {% for c in columns %}{{ c }}, {% endfor %}cast(unnest({{ array_column }}) as varchar) as element,
    cast(generate_subscripts({{ array_column }}, 1) as integer) as element_index
from {{ relation }}
{%- endmacro %}

{#- Snowflake: LATERAL FLATTEN yields VALUE (a VARIANT) and a 0-based INDEX. -#}
{% macro snowflake__unnest_indexed(relation, array_column, columns) -%}
{%- if not array_column or columns is string -%}
  {{ exceptions.raise_compiler_error("unnest_indexed: adapter " ~ adapter.type() ~ ", argument array_column must name a column and columns must be a list, got " ~ array_column ~ " / " ~ columns) }}
{%- endif -%}
select {% for c in columns %}r.{{ c }}, {% endfor %}f.value::varchar as element,
    cast(f.index + 1 as integer) as element_index
from {{ relation }} as r, lateral flatten(input => r.{{ array_column }}) as f
{%- endmacro %}
