-- Connected parts of each database's join graph (a part is named by its smallest table name;
-- from kb_table_components, so a long join chain is one part whatever dbrouter__max_hops is).
-- Edge counts come from a grouped join rather than correlated subqueries, which not every
-- warehouse accepts in a select list.
with parts as (
    select db_id, count(distinct component) as n_components
    from {{ ref('kb_table_components') }}
    group by db_id
),
edges as (
    select
        db_id,
        sum(case when is_declared then 1 else 0 end) as n_declared,
        sum(case when is_declared then 0 else 1 end) as n_implied
    from {{ ref('kb_join_edges') }}
    group by db_id
)
select
    d.db_id,
    d.n_tables,
    coalesce(parts.n_components, 0) as n_components,
    coalesce(parts.n_components, 0) <= 1 as is_connected,
    cast(coalesce(edges.n_declared, 0) / 2 as bigint) as n_declared_edges,
    cast(coalesce(edges.n_implied, 0) / 2 as bigint) as n_implied_edges
from {{ ref('kb_databases') }} as d
left join parts on parts.db_id = d.db_id
left join edges on edges.db_id = d.db_id
