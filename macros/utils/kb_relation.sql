{#- The schema-qualified name of a KB mart, for SQL created by the on-run-end hooks (where
    `ref()` is not available): the marts live in the target schema. -#}
{% macro kb_relation(name) -%}
  {{ return(adapter.dispatch('kb_relation', 'dbrouter')(name)) }}
{%- endmacro %}

{% macro default__kb_relation(name) -%}
{%- if not name -%}
  {{ exceptions.raise_compiler_error("kb_relation: adapter " ~ adapter.type() ~ ", argument name must name a KB mart, got " ~ name) }}
{%- endif -%}
{{ target.schema }}.{{ name }}
{%- endmacro %}
