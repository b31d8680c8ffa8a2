{#-
  Creates the routing entry points declared in sql_entry_points (those named route_*) in the
  warehouse, from the post-hooks of model kb_sql_functions: one CREATE per entry and routing path
  (route_paths), the body from sql_entry_point_body, the statement from create_entry_point. On
  DuckDB they are SQL macros stored in the warehouse, each as `<name>_udf` (the question embedded
  by the embed()/embed_phrase() UDFs: dbt's plugin or `dbrouter.connect()`) and `<name>_sql` (pure
  SQL over the static phrase embedder materialised in kb_static_pieces; any DuckDB client), the
  plain names calling `_sql` (create_path_entry_points); on Snowflake SQL UDFs/UDTFs in the KB
  schema. The entry points, their parameters and results: sql_entry_points and docs/reference.md "Macro and
  UDF reference". Nothing here touches the network.
-#}
{% macro create_route_functions() -%}
  {{ return(adapter.dispatch('create_route_functions', 'dbrouter')()) }}
{%- endmacro %}

{% macro default__create_route_functions() -%}
{%- set sk = dbrouter.get_var('dbrouter__shortlist_k') | int -%}
{%- if sk < 1 or (dbrouter.get_var('dbrouter__phrase_max_words') | int) < 1 -%}
  {{ exceptions.raise_compiler_error("create_route_functions: adapter " ~ adapter.type() ~ ", vars dbrouter__shortlist_k and dbrouter__phrase_max_words must be >= 1, got " ~ sk ~ " / " ~ dbrouter.get_var('dbrouter__phrase_max_words')) }}
{%- endif -%}
{#- table functions first: the scalar ones call route_query_ranked, which must exist -#}
{%- set ordered = [] -%}
{%- for kind in ['table', 'scalar'] -%}
  {%- for entry in dbrouter.sql_entry_points() if entry.name.startswith('route_') and entry.kind == kind -%}
    {%- do ordered.append(entry) -%}
  {%- endfor -%}
{%- endfor -%}
{%- for entry in ordered %}
{%- for path in (dbrouter.route_paths() if entry.paths else ['udf']) %}
{{ dbrouter.create_entry_point(entry, path, dbrouter.sql_entry_point_body(entry.name, path)) }};
{% endfor %}
{%- endfor %}
{%- endmacro %}

{#- DuckDB: the pure-SQL path's text functions first. A macro's body names are resolved when it is
    called, temp catalog first, so each path's macros call only that path's names: shadowing
    `route_query_ranked` cannot change `route_query_sql`. -#}
{% macro duckdb__create_route_functions() -%}
{{ dbrouter.create_sql_text_functions() }};
{{ dbrouter.default__create_route_functions() }}
{%- endmacro %}

{#- Snowflake checks a function's body when it is created, so nothing is created while the marts
    they read are missing (a build of a selection): the log says so. -#}
{% macro snowflake__create_route_functions() -%}
{%- set missing = dbrouter.snowflake_missing_marts(['kb_document_embeddings', 'kb_routing_calibration', 'kb_column_phrases', 'kb_table_reachability', 'kb_route_tokens', 'kb_route_token_idf', 'kb_table_terms', 'kb_databases', 'kb_allowed_databases']) -%}
{%- if missing -%}
  {%- do log("dbrouter: route functions not created in " ~ dbrouter.snowflake_kb_schema() ~ ": marts " ~ (missing | join(', ')) ~ " are not built (build the whole project)", info=True) -%}
select 'route functions not created: marts missing' as dbrouter_note
{%- else -%}
{{ dbrouter.default__create_route_functions() }}
{%- endif -%}
{%- endmacro %}
