{#- The shortlist stage that reads a document of kind `doc_kind` (route_shortlist_step): 1 for
    the database, table and example documents every question scores, 2 for the column documents
    only the first stage's candidates score, NULL for the kinds the shortlist does not read.
    Stored with the vectors so each stage's scan filters on one value (an IN list on doc_kind is
    not pushed into DuckDB's scan and read every vector). -#}
{% macro route_stage(doc_kind) -%}
  {{ return(adapter.dispatch('route_stage', 'dbrouter')(doc_kind)) }}
{%- endmacro %}

{% macro default__route_stage(doc_kind) -%}
cast(case when {{ doc_kind }} in ('database', 'table', 'example') then 1
          when {{ doc_kind }} = 'column' then 2 end as integer)
{%- endmacro %}
