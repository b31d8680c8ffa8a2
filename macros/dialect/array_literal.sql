{#- An array of the given SQL expressions (all VARCHAR); an empty list gives a typed empty array.

  Args:
    items: a Jinja list of SQL expressions.
-#}
{% macro array_literal(items) -%}
  {{ return(adapter.dispatch('array_literal', 'dbrouter')(items)) }}
{%- endmacro %}

{% macro default__array_literal(items) -%}
{%- if items is string or items is not iterable -%}
  {{ exceptions.raise_compiler_error("array_literal: adapter " ~ adapter.type() ~ ", argument items must be a list of SQL expressions, got " ~ items) }}
{%- endif -%}
{%- if items | length == 0 -%}
cast([] as varchar[])
{%- else -%}
[{{ items | join(', ') }}]
{%- endif -%}
{%- endmacro %}

{#- Snowflake has no bracket literal: ARRAY_CONSTRUCT (an ARRAY of VARIANTs). -#}
{% macro snowflake__array_literal(items) -%}
{%- if items is string or items is not iterable -%}
  {{ exceptions.raise_compiler_error("array_literal: adapter " ~ adapter.type() ~ ", argument items must be a list of SQL expressions, got " ~ items) }}
{%- endif -%}
array_construct({{ items | join(', ') }})
{%- endmacro %}
