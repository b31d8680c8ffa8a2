{#-
  The SQL functions of routing and retrieval, one row each. Its post-hooks create them in the
  warehouse (create_route_functions, create_retrieval_functions) right after the KB tables they
  read are built, so a model of a consuming project that declares
  `-- depends_on: {{ ref('dbrouter', 'kb_sql_functions') }}` can call `route_query(...)` on the
  very first `dbt build` (an on-run-end hook would create them only after every model ran). The
  hooks run in this package's context, so its `dbrouter__*` vars apply.
-#}
{{ config(post_hook=["{{ dbrouter.create_route_functions() }}", "{{ dbrouter.create_retrieval_functions() }}"]) }}
-- depends_on: {{ ref('kb_document_embeddings') }}
-- depends_on: {{ ref('kb_routing_calibration') }}
-- depends_on: {{ ref('kb_column_phrases') }}
-- depends_on: {{ ref('kb_table_reachability') }}
-- depends_on: {{ ref('kb_columns') }}
-- depends_on: {{ ref('kb_examples') }}
-- depends_on: {{ ref('kb_example_thresholds') }}
-- depends_on: {{ ref('kb_domain_statements') }}
-- depends_on: {{ ref('kb_databases') }}
-- depends_on: {{ ref('kb_route_tokens') }}
-- depends_on: {{ ref('kb_route_token_idf') }}
{#- the pure-SQL path's tables (DuckDB only) -#}
{% if target.type == 'duckdb' %}
-- depends_on: {{ ref('kb_static_document_embeddings') }}
-- depends_on: {{ ref('kb_static_model') }}
-- depends_on: {{ ref('kb_static_pieces') }}
-- depends_on: {{ ref('kb_stop_words') }}
{% endif %}
{%- set functions = [
    ('route_query', 'scalar', 'route_query(question)', 'the db_id that best answers the question, or NULL'),
    ('route_query_json', 'scalar', 'route_query_json(question, k := 5)', 'JSON {question, ranking, reason}'),
    ('route_query_ranked', 'table', 'route_query_ranked(question, k := 5, shortlist_k)', 'rank, db_id, score, evidence JSON'),
    ('route_query_ranked_mapped', 'table', 'route_query_ranked_mapped(question, mappings, k := 5, shortlist_k)', 'the ranking with phrase mappings given as JSON'),
    ('route_shortlist', 'table', 'route_shortlist(question, k := 10)', 'the first ranking with its per-signal similarities'),
    ('route_phrase_mappings', 'table', 'route_phrase_mappings(question, k := 10)', 'phrase -> table.column mappings of the shortlist'),
    ('route_shortlist_k', 'scalar', 'route_shortlist_k()', 'the re-rank depth of this build'),
    ('retrieve_statements', 'table', 'retrieve_statements(question, db, k := 4)', 'domain statements by sub-string retrieval'),
    ('retrieve_examples', 'table', 'retrieve_examples(question, db, k := 3)', 'stored question/SQL examples (exact, normalized, main clause, expanded)'),
    ('retrieve_columns', 'table', 'retrieve_columns(question, db, k := 10, exclude := [])', 'the columns of db closest to the question'),
] -%}
{% for name, kind, signature, returns in functions %}
select
    cast('{{ name }}' as {{ dbt.type_string() }}) as function_name,
    cast('{{ kind }}' as {{ dbt.type_string() }}) as function_kind,
    cast('{{ signature }}' as {{ dbt.type_string() }}) as signature,
    cast('{{ returns }}' as {{ dbt.type_string() }}) as returns
{% if not loop.last %}union all{% endif %}
{%- endfor %}
