{#-
  The documents one stage of route_shortlist_step reads, with their cosines to the question:
  (db_id, doc_kind, doc_label, sim, agg). Stage 1: every database's route_stage 1 documents
  (database, table, example); stage 2: the route_stage 2 documents (columns) of the databases
  `dbs` lists. Reads CTE q (v, model) of the shortlist. agg is NULL, or on a table (column) row
  the mean similarity of its database's dbrouter__top_tables (__top_columns) best, which the
  shortlist then reads instead of averaging the rows itself (route_shortlist_step's _shortlist_mean).

  Args:
    stage: 1 or 2.
    path: 'udf' or 'sql' (route_paths).
    docs: the documents' relation (kb_document_embeddings or kb_static_document_embeddings).
    model: SQL expression of the embedder the documents must carry.
    dbs: for stage 2, a SELECT of the databases' db_id (one column).
-#}
{% macro shortlist_document_hits(stage, path, docs, model, dbs=none) -%}
{%- if stage not in (1, 2) or (stage == 2 and not dbs) -%}
  {{ exceptions.raise_compiler_error("shortlist_document_hits: adapter " ~ adapter.type() ~ ", argument stage must be 1 or 2 (2 with dbs), got " ~ stage) }}
{%- endif -%}
  {{ return(adapter.dispatch('shortlist_document_hits', 'dbrouter')(stage, path, docs, model, dbs)) }}
{%- endmacro %}

{#- A scan of the documents, filtered on route_stage (one value: pushed into the scan); stage 2
    reads the listed databases' rows (rows_of_databases: by rowid on the pure-SQL path). -#}
{% macro default__shortlist_document_hits(stage, path, docs, model, dbs=none) -%}
select d.db_id, d.doc_kind, d.doc_label, {{ dbrouter.cosine_similarity('d.embedding', 'q.v') }} as sim,
    cast(null as double) as agg
{%- if stage == 2 %}
from ({{ dbrouter.rows_of_databases(docs, dbs, 'r.embedding_model = ' ~ model ~ ' and r.route_stage = 2',
                                    by_row_id=(path == 'sql')) }}) as d
cross join q
where q.v is not null
{%- else %}
from {{ docs }} as d
cross join q
where q.v is not null and d.embedding_model = {{ model }} and d.route_stage = {{ stage }}
{%- endif %}
{%- endmacro %}

{#- DuckDB's UDF path (var dbrouter__vector_index): the documents' vectors are a numpy matrix in
    the UDF process (dbrouter_document_hits, python_udfs/document_index.py), which returns, per
    database and kind, only the rows the shortlist's aggregates read (the top dbrouter__top_tables
    / __top_columns as one row with their mean, the top dbrouter__example_votes examples, the
    database document). A DuckDB scan reads every vector of a row group even when a filter on
    db_id keeps a few rows. -#}
{% macro duckdb__shortlist_document_hits(stage, path, docs, model, dbs=none) -%}
{%- if path != 'udf' or not dbrouter.get_var('dbrouter__vector_index') -%}
{{ dbrouter.default__shortlist_document_hits(stage, path, docs, model, dbs) }}
{%- else -%}
{%- set n_top = dbrouter.get_var('dbrouter__top_tables' if stage == 1 else 'dbrouter__top_columns') | int -%}
select h.db_id, h.doc_kind, h.doc_label, h.sim, h.agg
from (select unnest(dbrouter_document_hits('{{ docs }}', q.v, {{ stage }},
          {% if stage == 2 %}(select list(db_id) from ({{ dbs }}) as s){% else %}null{% endif %},
          {{ n_top }}, {{ dbrouter.get_var('dbrouter__example_votes') | int }})) as h
      from q where q.v is not null) as u
{%- endif -%}
{%- endmacro %}
