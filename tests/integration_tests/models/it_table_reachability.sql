-- Pairs from one table per fixture database: the chain's far end (c8, c9) lies beyond max_hops.
with reach as (
    {{ dbrouter.table_reachability(ref('it_graph_tables'), ref('it_graph_edges'), var('dbrouter__max_hops')) }}
)
select * from reach where from_table in ('c1', 'a', 'd', 'p')
