-- The databases routing, linking and retrieval may consider: every database of the KB, or those of
-- the caller's scope. The route and retrieval functions filter candidates through this view
-- *before* ranking, not after.
--   DuckDB: a session restricted by an access policy sets the session variable
--   `dbrouter_allowed_databases` (`set variable dbrouter_allowed_databases = ['a', 'b']`, which
--   `dbrouter serve`, `dbrouter mcp` and the CLI set from the policy; any DuckDB client can set it).
--   Snowflake: the databases granted to the roles in the caller's session (inherited ones too) in
--   dbrouter_user.role_databases (`python -m dbrouter.kb.snowflake grants --access policy.yml`); an
--   empty table grants every database.
{{ config(materialized='view') }}
select db_id
from {{ ref('kb_databases') }} as d
{%- if target.type == 'duckdb' %}
where getvariable('dbrouter_allowed_databases') is null
   or list_contains(getvariable('dbrouter_allowed_databases'), db_id)
{%- elif target.type == 'snowflake' %}
where not exists (select 1 from {{ source('user', 'role_databases') }})
   or exists (
       select 1 from {{ source('user', 'role_databases') }} as g
       where array_contains(g.role_name::variant, parse_json(current_available_roles()))
         and d.db_id like g.db_like escape '\\')
{%- endif %}
