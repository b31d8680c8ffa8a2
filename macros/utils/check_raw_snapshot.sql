{#-
  on-run-start guard: when this invocation builds the package's models, the raw snapshot that
  `dbrouter ingest` writes (schema `dbrouter__raw_schema`) must exist, or every catalog model
  fails with "schema dbrouter_raw does not exist". One error instead, saying what to run.
  Nothing is checked when no model of the package is selected (e.g. `dbt seed`, a consuming
  project's `--select` of its own models, the macro fixture tests).
-#}
{% macro check_raw_snapshot() -%}
  {{ return(adapter.dispatch('check_raw_snapshot', 'dbrouter')()) }}
{%- endmacro %}

{% macro default__check_raw_snapshot() -%}
{%- if execute and flags.WHICH in ('build', 'run') -%}
  {%- set selected = selected_resources | default([]) -%}
  {%- set wants_kb = [] -%}
  {%- for node in graph.nodes.values() -%}
    {%- if node.package_name == 'dbrouter' and node.resource_type == 'model' and node.unique_id in selected
          and node.fqn[1:3] == ['staging', 'catalog'] -%}
      {%- do wants_kb.append(node.unique_id) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- if wants_kb -%}
    {%- set raw_schema = dbrouter.get_var('dbrouter__raw_schema') -%}
    {%- set missing = [] -%}
    {%- for table in ['databases', 'tables', 'columns', 'foreign_keys', 'issues', 'examples', 'statements'] -%}
      {%- if adapter.get_relation(database=target.database, schema=raw_schema, identifier=table) is none -%}
        {%- do missing.append(raw_schema ~ '.' ~ table) -%}
      {%- endif -%}
    {%- endfor -%}
    {%- if missing -%}
      {{ exceptions.raise_compiler_error(
          "check_raw_snapshot: adapter " ~ adapter.type() ~ ", var dbrouter__raw_schema = '" ~ raw_schema
          ~ "': the raw snapshot of your source databases is missing (" ~ missing | join(', ') ~ ") in "
          ~ (target.path if target.path is defined else target.database) ~ ". dbrouter's models read what "
          ~ "`dbrouter ingest` writes: run `dbrouter ingest --sources <your sources.yml> --warehouse "
          ~ (target.path if target.path is defined else '<this target>') ~ "` before `dbt build` "
          ~ "(docs/dbt-package.md), or leave the package out with `--exclude package:dbrouter`.") }}
    {%- endif -%}
  {%- endif -%}
{%- endif -%}
{%- endmacro %}
