-- Connected parts of each database's join graph (a part is named by its smallest table name;
-- from kb_table_components, so a long join chain is one part whatever dbrouter__max_hops is).
with parts as (
    select db_id, table_name, component
    from {{ ref('kb_table_components') }}
)
select
    d.db_id,
    d.n_tables,
    count(distinct parts.component) as n_components,
    count(distinct parts.component) <= 1 as is_connected,
    cast((select count(*) from {{ ref('kb_join_edges') }} as e where e.db_id = d.db_id and e.is_declared) / 2 as bigint) as n_declared_edges,
    cast((select count(*) from {{ ref('kb_join_edges') }} as e where e.db_id = d.db_id and not e.is_declared) / 2 as bigint) as n_implied_edges
from {{ ref('kb_databases') }} as d
left join parts on parts.db_id = d.db_id
group by d.db_id, d.n_tables
