-- Connected part of each table in its database's join graph: `component` over all edges
-- (declared + implied), `declared_component` over declared foreign keys only. A part is named
-- by its smallest table name and does not depend on dbrouter__max_hops (table_components walks
-- without a hop limit). The re-rank's connectivity check compares these ids, and a decision
-- whose connectivity needs an implied edge is visible when the two disagree. The tables come
-- from int_tables_described (the rows of kb_tables), so the join graph does not wait for documents.
with all_parts as (
    {{ dbrouter.table_components(ref('int_tables_described'), ref('kb_join_edges')) }}
),
declared_parts as (
    {{ dbrouter.table_components(
        ref('int_tables_described'),
        "(select db_id, from_table, to_table from " ~ ref('kb_join_edges') ~ " where is_declared)") }}
)
select
    t.db_id || '.' || t.table_name as table_key,
    t.db_id,
    t.table_name,
    a.component,
    d.component as declared_component
from {{ ref('int_tables_described') }} as t
join all_parts as a on a.db_id = t.db_id and a.table_name = t.table_name
join declared_parts as d on d.db_id = t.db_id and d.table_name = t.table_name
