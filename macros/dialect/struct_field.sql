{#- Field `field` of a struct/object value `expr`, as SQL type `type` (varchar, integer, or an
    array type given as 'array'). -#}
{% macro struct_field(expr, field, type) -%}
  {{ return(adapter.dispatch('struct_field', 'dbrouter')(expr, field, type)) }}
{%- endmacro %}

{% macro default__struct_field(expr, field, type) -%}
{%- if type == 'array' -%}
({{ expr }}).{{ field }}
{%- else -%}
cast(({{ expr }}).{{ field }} as {{ type }})
{%- endif -%}
{%- endmacro %}

{% macro snowflake__struct_field(expr, field, type) -%}
{{ expr }}:{{ field }}::{{ type }}
{%- endmacro %}
