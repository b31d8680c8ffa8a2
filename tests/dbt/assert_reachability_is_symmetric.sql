-- Reachability over an undirected graph must be symmetric with equal hop counts,
-- and every table reaches itself in 0 hops.
select a.*
from {{ ref('kb_table_reachability') }} as a
left join {{ ref('kb_table_reachability') }} as b
  on b.db_id = a.db_id and b.from_table = a.to_table and b.to_table = a.from_table
where b.pair_key is null or b.hops <> a.hops or (a.from_table = a.to_table and a.hops <> 0)
