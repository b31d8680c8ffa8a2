-- Which tables of a database can be joined, in how many hops, along which path (tables from
-- int_tables_described, the rows of kb_tables, so the join graph does not wait for documents).
-- Only databases of at most dbrouter__reachability_max_tables tables: a database of n tables has
-- up to n^2 pairs, and a warehouse dataset of 10,000 tables in one connected part filled the disk.
-- DuckDB's routing walks the candidates' edges per question instead (candidate_reachability).
with nodes as (
    select db_id, table_name
    from {{ ref('int_tables_described') }}
    where db_id in (
        select db_id from {{ ref('int_tables_described') }}
        group by db_id
        having count(*) <= {{ dbrouter.get_var('dbrouter__reachability_max_tables') | int }}
    )
),
reach as (
    {{ dbrouter.table_reachability('nodes', ref('kb_join_edges'), var('dbrouter__max_hops')) }}
)
select
    db_id || '.' || from_table || '->' || to_table as pair_key,
    db_id, from_table, to_table, hops,
    trim(replace(join_path, '|', ' > '), ' >') as join_path
from reach
