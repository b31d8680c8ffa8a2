-- The join graph is usable in both directions: every edge has its reverse.
select e.*
from {{ ref('kb_join_edges') }} as e
left join {{ ref('kb_join_edges') }} as r
  on r.db_id = e.db_id and r.from_table = e.to_table and r.from_column = e.to_column
 and r.to_table = e.from_table and r.to_column = e.from_column
where r.edge_key is null
