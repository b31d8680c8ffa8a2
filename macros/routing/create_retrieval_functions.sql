{#-
  Creates the retrieval entry points in the warehouse (post-hook of kb_sql_functions); each is its own
  macro (retrieve_statements_function, retrieve_examples_function, retrieve_columns_function)
  that this one assembles:

    retrieve_statements(question, db, k := 4)
        Sub-string based retrieval (SbR) of domain statements: the question's numbers and dates
        are canonicalised, its contiguous word sub-strings whose length is within
        +-dbrouter__sbr_window words of some statement's text are embedded in one batch, and each
        statement scores the max cosine between its canonical text and the sub-strings within
        +-window words of its own length. db NULL searches every database.

    retrieve_examples(question, db, k := 3)
        The progressive example cascade; the first stage that finds anything answers:
          1 exact       - the question equals a stored one (case/space folded): its SQL as is;
          2 normalized  - normalised question vs examples' normalised questions >= normalized_threshold;
          3 main_clause - normalised question vs the examples' question, normalised question,
                          main clause and paraphrases >= main_clause_threshold (lower);
          4 expanded    - any descriptor >= expanded_threshold, re-ranked by
                          0.5 x cosine(question, best descriptor) + 0.5 x word Jaccard of the
                          normalised questions (documented lexical/embedding re-rank: no
                          cross-encoder weights can be installed offline).
        Thresholds come from kb_example_thresholds. db NULL searches every database.

    retrieve_columns(question, db, k := 10, exclude := [])
        The top-k columns of database db by cosine of the question to the column documents,
        skipping the 'table.column' names in exclude (case-insensitive). Schema linking's
        vector store (dbrouter.linking).

  Each exists as `<name>_udf` (Python UDFs: the plugin or dbrouter.connect) and `<name>_sql`
  (pure SQL over the static embedder's tables); the plain names call the `_sql` one in the
  warehouse file (create_path_entry_points).
-#}
{% macro create_retrieval_functions() -%}
  {{ return(adapter.dispatch('create_retrieval_functions', 'dbrouter')()) }}
{%- endmacro %}

{% macro default__create_retrieval_functions() -%}
{%- for entry in dbrouter.sql_entry_points() if entry.name.startswith('retrieve_') %}
{%- for path in dbrouter.route_paths() %}
{{ dbrouter.create_entry_point(entry, path, dbrouter.sql_entry_point_body(entry.name, path)) }};
{% endfor %}
{%- endfor %}
{%- endmacro %}

{#- DuckDB: this hook runs after create_route_functions, so it ends by creating the plain-named
    entry points of both (create_path_entry_points). -#}
{% macro duckdb__create_retrieval_functions() -%}
{{ dbrouter.default__create_retrieval_functions() }}
{{ dbrouter.create_path_entry_points() }};
{%- endmacro %}

{#- Snowflake: nothing is created while the marts they read are missing (a build of a selection). -#}
{% macro snowflake__create_retrieval_functions() -%}
{%- set missing = dbrouter.snowflake_missing_marts(['kb_columns', 'kb_document_embeddings', 'kb_domain_statements', 'kb_examples', 'kb_example_thresholds', 'kb_allowed_databases']) -%}
{%- if missing -%}
  {%- do log("dbrouter: retrieval functions not created in " ~ dbrouter.snowflake_kb_schema() ~ ": marts " ~ (missing | join(', ')) ~ " are not built (build the whole project)", info=True) -%}
select 'retrieval functions not created: marts missing' as dbrouter_note
{%- else -%}
{{ dbrouter.default__create_retrieval_functions() }}
{%- endif -%}
{%- endmacro %}
