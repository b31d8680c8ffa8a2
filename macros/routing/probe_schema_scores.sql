{#-
  Each probe question's schema score (schema_score) for every database of a document relation,
  as the shortlist scores a question: rows (probe_id, db_id, s_schema). The routing calibration
  (kb_routing_calibration) scores its probes with it: example questions left out and off-topic
  probes, against every database.

  Args:
    probes: a relation or CTE with the probes' id and vector.
    id: the probes' id column.
    vector: the probes' vector column.
    docs: the documents' relation (a ref: kb_document_embeddings or kb_static_document_embeddings),
      read for its database, table and column documents.
-#}
{% macro probe_schema_scores(probes, id, vector, docs) -%}
{%- if not (probes and id and vector and docs) -%}
  {{ exceptions.raise_compiler_error("probe_schema_scores: adapter " ~ adapter.type() ~ ", arguments probes, id, vector and docs are all required, got " ~ [probes, id, vector, docs]) }}
{%- endif -%}
  {{ return(adapter.dispatch('probe_schema_scores', 'dbrouter')(probes, id, vector, docs)) }}
{%- endmacro %}

{#- Every (probe, document) cosine, ranked within (probe, database, kind), aggregated. -#}
{% macro default__probe_schema_scores(probes, id, vector, docs) -%}
select id as probe_id, db_id, {{ dbrouter.ranked_schema_score() }} as s_schema
from (
    select *, row_number() over (partition by id, db_id, doc_kind order by sim desc) as rn
    from (select pr.{{ id }} as id, d.db_id, d.doc_kind,
              {{ dbrouter.cosine_similarity('d.embedding', 'pr.' ~ vector) }} as sim
          from {{ probes }} as pr
          join {{ docs }} as d on d.doc_kind in ('database', 'table', 'column')) as hits
) as ranked
group by 1, 2
{%- endmacro %}

{#- DuckDB: the UDF dbrouter_schema_scores (python_udfs/schema_scores.py) streams the documents
    through numpy, one matrix product per batch. The SQL above is one cosine and one window row
    per (probe, document): 53 million of each for 84 probes at 10,000 databases, about 30 s of
    a build per embedding space; the UDF's means equal its own to float rounding (tests). -#}
{% macro duckdb__probe_schema_scores(probes, id, vector, docs) -%}
{%- set name = docs.schema ~ '.' ~ docs.identifier if docs.identifier is defined else docs -%}
select u.probe_id, u.s.db_id as db_id,
    {{ dbrouter.schema_score('u.s.s_database', 'u.s.s_table', 'u.s.s_column') }} as s_schema
from (select pr.{{ id }} as probe_id,
          unnest(dbrouter_schema_scores('{{ name }}', pr.{{ vector }},
                 {{ dbrouter.get_var('dbrouter__top_tables') | int }}, {{ dbrouter.get_var('dbrouter__top_columns') | int }})) as s
      from {{ probes }} as pr) as u
{%- endmacro %}
