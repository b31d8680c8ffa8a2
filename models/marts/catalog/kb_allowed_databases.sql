-- The databases routing, linking and retrieval may consider: every database of the KB. A caller
-- restricted by an access policy gets a temporary view of the same name holding its databases
-- (`dbrouter serve`, `dbrouter mcp` and the CLI create it from the policy; any DuckDB client can
-- create one itself: temp objects are searched first), so the route functions filter candidates
-- *before* ranking, not after.
{{ config(materialized='view') }}
select db_id from {{ ref('kb_databases') }}
