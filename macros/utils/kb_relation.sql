{#- The schema-qualified name of a KB mart, for SQL created by hooks (where `ref()` is not
    available): the schema dbt resolved for the model (the target schema when dbrouter is the root
    project, `<target schema>_dbrouter` when it is a package), else the target schema. -#}
{% macro kb_relation(name) -%}
  {{ return(adapter.dispatch('kb_relation', 'dbrouter')(name)) }}
{%- endmacro %}

{% macro default__kb_relation(name) -%}
{%- if not name -%}
  {{ exceptions.raise_compiler_error("kb_relation: adapter " ~ adapter.type() ~ ", argument name must name a KB mart, got " ~ name) }}
{%- endif -%}
{%- set node = graph.nodes.get('model.dbrouter.' ~ name) if graph is defined and graph else none -%}
{%- if node and node.config.enabled -%}
{{ node.schema }}.{{ node.alias or name }}
{%- else -%}
{{ target.schema }}.{{ name }}
{%- endif -%}
{%- endmacro %}
