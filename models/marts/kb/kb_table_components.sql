-- Connected part of each table in its database's join graph: `component` over all edges
-- (declared + implied), `declared_component` over declared foreign keys only. A part is named
-- by its smallest table name. The re-rank's connectivity check compares these ids, and a
-- decision whose connectivity needs an implied edge is visible when the two disagree.
with declared_reach as (
    {{ dbrouter.table_reachability(
        ref('kb_tables'),
        "(select db_id, from_table, to_table from " ~ ref('kb_join_edges') ~ " where is_declared)",
        var('dbrouter__max_hops')) }}
),
all_parts as (
    select db_id, from_table as table_name, min(to_table) as component
    from {{ ref('kb_table_reachability') }}
    group by 1, 2
),
declared_parts as (
    select db_id, from_table as table_name, min(to_table) as declared_component
    from declared_reach
    group by 1, 2
)
select
    t.db_id || '.' || t.table_name as table_key,
    t.db_id,
    t.table_name,
    coalesce(a.component, t.table_name) as component,
    coalesce(d.declared_component, t.table_name) as declared_component
from {{ ref('kb_tables') }} as t
left join all_parts as a on a.db_id = t.db_id and a.table_name = t.table_name
left join declared_parts as d on d.db_id = t.db_id and d.table_name = t.table_name
