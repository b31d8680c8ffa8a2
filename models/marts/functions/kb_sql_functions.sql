{#-
  The SQL functions of routing and retrieval, one row each. Its post-hooks create them in the
  warehouse (create_route_functions, create_retrieval_functions) right after the KB tables they
  read are built, so a model of a consuming project that declares
  `-- depends_on: {{ ref('dbrouter', 'kb_sql_functions') }}` can call `route_query(...)` on the
  very first `dbt build` (an on-run-end hook would create them only after every model ran). The
  hooks run in this package's context, so its `dbrouter__*` vars apply.
-#}
{{ config(post_hook=["{{ dbrouter.create_route_functions() }}", "{{ dbrouter.create_retrieval_functions() }}"]) }}
-- depends_on: {{ ref('kb_join_edges') }}
-- depends_on: {{ ref('kb_walk_edges') }}
-- depends_on: {{ ref('kb_document_embeddings') }}
-- depends_on: {{ ref('kb_routing_calibration') }}
-- depends_on: {{ ref('kb_intent_probes') }}
-- depends_on: {{ ref('kb_column_phrases') }}
-- depends_on: {{ ref('kb_table_reachability') }}
-- depends_on: {{ ref('kb_columns') }}
-- depends_on: {{ ref('kb_examples') }}
-- depends_on: {{ ref('kb_example_thresholds') }}
-- depends_on: {{ ref('kb_domain_statements') }}
-- depends_on: {{ ref('kb_databases') }}
-- depends_on: {{ ref('kb_allowed_databases') }}
-- depends_on: {{ ref('kb_route_tokens') }}
-- depends_on: {{ ref('kb_route_token_idf') }}
-- depends_on: {{ ref('kb_table_terms') }}
-- depends_on: {{ ref('kb_vocabulary') }}
{#- the pure-SQL path's tables (DuckDB only) -#}
{% if target.type == 'duckdb' %}
-- depends_on: {{ ref('kb_static_document_embeddings') }}
-- depends_on: {{ ref('kb_static_model') }}
-- depends_on: {{ ref('kb_static_pieces') }}
-- depends_on: {{ ref('kb_stop_words') }}
{% endif %}
{#- One row per entry point declared in macro sql_entry_points. -#}
{% for e in dbrouter.sql_entry_points() %}
select
    cast('{{ e.name }}' as {{ dbt.type_string() }}) as function_name,
    cast('{{ e.kind }}' as {{ dbt.type_string() }}) as function_kind,
    cast('{{ dbrouter.sql_entry_point_signature(e) }}' as {{ dbt.type_string() }}) as signature,
    cast('{{ dbrouter.sql_entry_point_returns(e) }}' as {{ dbt.type_string() }}) as returns,
    cast('{{ e.description | replace("'", "''") }}' as {{ dbt.type_string() }}) as description
{% if not loop.last %}union all{% endif %}
{%- endfor %}
