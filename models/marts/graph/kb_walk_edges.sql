-- The join edges routing walks per question (candidate_reachability on DuckDB): those of databases
-- of at most dbrouter__reachability_max_tables tables, one row per directed table pair. A wider
-- database is not walked (its implied edges can number millions: 4.4M for a 20,000-table dataset),
-- and a per-question scan of kb_join_edges read them all (300 ms) to use none.
select distinct e.db_id, e.from_table, e.to_table
from {{ ref('kb_join_edges') }} as e
where e.from_table <> e.to_table
  and e.db_id in (
    select db_id from {{ ref('int_tables_described') }}
    group by db_id
    having count(*) <= {{ dbrouter.get_var('dbrouter__reachability_max_tables') | int }}
  )
order by e.db_id, e.from_table, e.to_table
