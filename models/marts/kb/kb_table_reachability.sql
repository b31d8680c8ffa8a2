-- Which tables of a database can be joined, in how many hops, along which path.
with reach as (
    {{ dbrouter.table_reachability(ref('kb_tables'), ref('kb_join_edges'), var('dbrouter__max_hops')) }}
)
select
    db_id || '.' || from_table || '->' || to_table as pair_key,
    db_id, from_table, to_table, hops,
    trim(replace(join_path, '|', ' > '), ' >') as join_path
from reach
