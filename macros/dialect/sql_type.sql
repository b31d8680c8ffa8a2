{#- A type of the entry-point declarations (varchar, integer, double, boolean, json, varchar[]) as
    this adapter declares it; `role` is 'param' or 'result'. -#}
{% macro sql_type(type, role='result') -%}
  {{ return(adapter.dispatch('sql_type', 'dbrouter')(type, role)) }}
{%- endmacro %}

{% macro default__sql_type(type, role='result') -%}
{{ type }}
{%- endmacro %}

{% macro snowflake__sql_type(type, role='result') -%}
{%- if type == 'json' -%}variant
{%- elif type.endswith('[]') -%}array
{%- elif type == 'integer' and role == 'param' -%}number
{%- else -%}{{ type }}
{%- endif -%}
{%- endmacro %}
