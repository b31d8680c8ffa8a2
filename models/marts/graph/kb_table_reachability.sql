-- Which tables of a database can be joined, in how many hops, along which path (tables from
-- int_tables_described, the rows of kb_tables, so the join graph does not wait for documents).
with reach as (
    {{ dbrouter.table_reachability(ref('int_tables_described'), ref('kb_join_edges'), var('dbrouter__max_hops')) }}
)
select
    db_id || '.' || from_table || '->' || to_table as pair_key,
    db_id, from_table, to_table, hops,
    trim(replace(join_path, '|', ' > '), ' >') as join_path
from reach
