{#-
  Schemas of this package's own nodes (dbt resolves generate_schema_name for a package's nodes in
  the package first; the consuming project's nodes never see this one).
  - dbrouter is the root project (`dbrouter build`, the evaluation): the whole warehouse is the
    KB; its Python side (dbrouter.connect, serve, eval) and plain clients read the marts from the
    target schema, so the custom schema is not appended.
  - dbrouter is a package: dbt's default, `<target schema>_<custom schema>`, i.e. the KB in its
    own schema (var dbrouter__kb_schema), apart from the consuming project's models.
-#}
{% macro generate_schema_name(custom_schema_name, node) -%}
{%- if project_name == 'dbrouter' -%}
{{ target.schema }}
{%- else -%}
{{ default__generate_schema_name(custom_schema_name, node) }}
{%- endif -%}
{%- endmacro %}
