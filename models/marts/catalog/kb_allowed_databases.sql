-- The databases routing, linking and retrieval may consider: every database of the KB, or, in a
-- DuckDB session restricted by an access policy, those in its session variable
-- `dbrouter_allowed_databases` (`set variable dbrouter_allowed_databases = ['a', 'b']`, which
-- `dbrouter serve`, `dbrouter mcp` and the CLI set from the policy; any DuckDB client can set it).
-- The route functions filter candidates through this view *before* ranking, not after.
{{ config(materialized='view') }}
select db_id
from {{ ref('kb_databases') }}
{%- if target.type == 'duckdb' %}
where getvariable('dbrouter_allowed_databases') is null
   or list_contains(getvariable('dbrouter_allowed_databases'), db_id)
{%- endif %}
